package api_test

import (
	"net/http"
	"testing"
	"time"
)

// A queue's rate limit is declared, shown and removed through PUT
// /queues/{queue}, and a claim it holds back is a 204 with Retry-After
// (whole seconds) and S3q-Retry-After-Ms.
func TestARateLimitedClaimIsA204WithRetryAfter(t *testing.T) {
	e := newEnvEveryRoute(t)
	r := e.do("PUT", "/queues/paced", `{"max_per_second":2.5,"burst":2}`)
	if r.status != http.StatusCreated || get(r.body, "queue.max_per_second") != 2.5 || get(r.body, "queue.burst") != float64(2) {
		t.Fatalf("declare: %d %s", r.status, r.raw)
	}
	r = e.do("GET", "/queues/paced", "")
	if get(r.body, "queue.max_per_second") != 2.5 || get(r.body, "queue.burst") != float64(2) {
		t.Fatalf("get: %s", r.raw)
	}
	// Stats show it too, the burst's default filled in.
	if r := e.do("PUT", "/queues/defaulted", `{"max_per_second":2.5}`); r.status != http.StatusCreated || get(r.body, "queue.burst") != nil {
		t.Fatalf("declare without a burst: %d %s", r.status, r.raw)
	}
	r = e.do("GET", "/queues/defaulted/stats", "")
	if r.status != http.StatusOK || get(r.body, "stats.max_per_second") != 2.5 || get(r.body, "stats.burst") != float64(3) {
		t.Fatalf("stats: %d %s; want max_per_second 2.5, burst 3", r.status, r.raw)
	}
	e.do("PUT", "/queues/plain", `{}`)
	r = e.do("GET", "/queues/plain/stats", "")
	if r.status != http.StatusOK || get(r.body, "stats.max_per_second") != nil || get(r.body, "stats.queue") != "plain" {
		t.Fatalf("stats of a queue without a limit: %d %s", r.status, r.raw)
	}
	for range 4 {
		if r := e.do("POST", "/queues/paced/tasks", `{"task_type":"t"}`); r.status != http.StatusCreated {
			t.Fatalf("submit: %d %s", r.status, r.raw)
		}
	}
	r = e.do("POST", "/queues/paced/claim", `{"max_tasks":4}`)
	if r.status != http.StatusOK || len(get(r.body, "tasks").([]any)) != 2 {
		t.Fatalf("first claim: %d %s; want the burst, 2 tasks", r.status, r.raw)
	}
	r = e.do("POST", "/queues/paced/claim", `{"max_tasks":4}`)
	if r.status != http.StatusNoContent || r.header.Get("Retry-After") != "1" || r.header.Get("S3q-Retry-After-Ms") != "400" {
		t.Fatalf("held back: %d %v; want 204, Retry-After 1, S3q-Retry-After-Ms 400", r.status, r.header)
	}
	// A long-poll whose wait ends before the limit lets a task start
	// answers the same (the test clock stands still: the limit holds).
	r = e.do("POST", "/queues/paced/claim/wait", `{"wait":"1s"}`)
	if r.status != http.StatusNoContent || r.header.Get("S3q-Retry-After-Ms") != "400" {
		t.Fatalf("long-poll held back: %d %v", r.status, r.header)
	}
	e.clock.Advance(400 * time.Millisecond)
	r = e.do("POST", "/queues/paced/claim", `{"max_tasks":4}`)
	if r.status != http.StatusOK || len(get(r.body, "tasks").([]any)) != 1 {
		t.Fatalf("after the wait: %d %s; want 1 task", r.status, r.raw)
	}
	// A 204 of an empty queue without a limit carries no Retry-After.
	r = e.do("POST", "/queues/default/claim", `{}`)
	if r.status != http.StatusNoContent || r.header.Get("Retry-After") != "" {
		t.Fatalf("empty claim: %d %v", r.status, r.header)
	}
	// Removing it: a declaration without max_per_second.
	r = e.do("PUT", "/queues/paced", `{}`)
	if r.status != http.StatusOK || get(r.body, "queue.max_per_second") != nil || get(r.body, "queue.burst") != nil {
		t.Fatalf("remove: %d %s", r.status, r.raw)
	}
	r = e.do("POST", "/queues/paced/claim", `{}`)
	if r.status != http.StatusOK {
		t.Fatalf("without a limit: %d %s", r.status, r.raw)
	}
}

func TestABadRateLimitIsA400NamingItAndWritesNothing(t *testing.T) {
	e := newEnvEveryRoute(t)
	if r := e.do("PUT", "/queues/kept", `{"max_per_second":1}`); r.status != http.StatusCreated {
		t.Fatalf("declare: %d %s", r.status, r.raw)
	}
	before := keys(t, e.store)
	for _, c := range []struct{ path, body, field string }{
		{"/queues/paced", `{"max_per_second":0}`, "max_per_second"},
		{"/queues/paced", `{"max_per_second":-3}`, "max_per_second"},
		{"/queues/paced", `{"max_per_second":1e9}`, "max_per_second"},
		{"/queues/paced", `{"max_per_second":0.00001}`, "max_per_second"},
		{"/queues/paced", `{"max_per_second":"fast"}`, "max_per_second"},
		{"/queues/paced", `{"max_per_second":5,"burst":0}`, "burst"},
		{"/queues/paced", `{"max_per_second":5,"burst":1.5}`, "burst"},
		{"/queues/paced", `{"max_per_second":5,"burst":5000}`, "burst"},
		{"/queues/paced", `{"burst":3}`, "burst"},
		{"/queues/kept", `{"max_per_second":-1}`, "max_per_second"},
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
}
