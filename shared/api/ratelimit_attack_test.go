package api_test

import (
	"net/http"
	"testing"
)

// A careless or hostile caller's max_per_second and burst: every JSON
// type and bound that is not a number in range (a bool, null where a
// number is due, a string, an object, a number past float64, -0, a burst
// past int) is a 400 naming the field, with nothing written; the answers
// are checked against the OpenAPI document (newEnvEveryRoute).
func TestARateLimitOfTheWrongTypeIsA400NamingItAndWritesNothing(t *testing.T) {
	e := newEnvEveryRoute(t)
	if r := e.do("PUT", "/queues/kept", `{"max_per_second":1,"burst":1}`); r.status != http.StatusCreated {
		t.Fatalf("declare: %d %s", r.status, r.raw)
	}
	before := keys(t, e.store)
	for _, c := range []struct{ path, body, field string }{
		{"/queues/paced", `{"max_per_second":true}`, "max_per_second"},
		{"/queues/paced", `{"max_per_second":"10"}`, "max_per_second"},
		{"/queues/paced", `{"max_per_second":{"n":1}}`, "max_per_second"},
		{"/queues/paced", `{"max_per_second":[5]}`, "max_per_second"},
		{"/queues/paced", `{"max_per_second":1e309}`, "max_per_second"},
		{"/queues/paced", `{"max_per_second":-1e309}`, "max_per_second"},
		{"/queues/paced", `{"max_per_second":-0}`, "max_per_second"},
		{"/queues/paced", `{"max_per_second":-0.0}`, "max_per_second"},
		{"/queues/paced", `{"max_per_second":1000.0000001}`, "max_per_second"},
		{"/queues/paced", `{"max_per_second":0.0009999}`, "max_per_second"},
		{"/queues/paced", `{"max_per_second":5,"burst":false}`, "burst"},
		{"/queues/paced", `{"max_per_second":5,"burst":"2"}`, "burst"},
		{"/queues/paced", `{"max_per_second":5,"burst":1e30}`, "burst"},
		{"/queues/paced", `{"max_per_second":5,"burst":9223372036854775808}`, "burst"},
		{"/queues/paced", `{"max_per_second":5,"burst":-9223372036854775809}`, "burst"},
		{"/queues/paced", `{"max_per_second":5,"burst":1001}`, "burst"},
		{"/queues/paced", `{"max_per_second":5,"burst":-1}`, "burst"},
		{"/queues/paced", `{"max_per_second":null,"burst":2}`, "burst"},
		{"/queues/kept", `{"max_per_second":1,"burst":1e3000}`, "burst"},
	} {
		r := e.do("PUT", c.path, c.body)
		if r.status != http.StatusBadRequest || str(r.body, "error.field") != c.field || str(r.body, "error.code") != "invalid_input" {
			t.Errorf("PUT %s %s: %d %s, want 400 naming %s", c.path, c.body, r.status, r.raw, c.field)
		}
	}
	after := keys(t, e.store)
	if len(after) != len(before) {
		t.Errorf("refused declarations wrote: %v -> %v", before, after)
	}
	for k, etag := range before {
		if after[k] != etag {
			t.Errorf("a refused declaration changed %s", k)
		}
	}
	// The extremes of the ranges are taken.
	for _, body := range []string{`{"max_per_second":0.001,"burst":1}`, `{"max_per_second":1000,"burst":1000}`, `{"max_per_second":1e3}`} {
		if r := e.do("PUT", "/queues/edge", body); r.status/100 != 2 {
			t.Errorf("PUT %s: %d %s, want taken", body, r.status, r.raw)
		}
	}
}
