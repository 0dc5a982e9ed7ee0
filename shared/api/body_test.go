package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/s3q/s3q/shared/api"
)

// TestABodyThatIsNotAJSONObjectIs400NamingBody: every route that takes a
// body answers a body that is JSON but not an object, or not JSON at all,
// with 400 invalid_input whose field is "body" and whose message says what
// the body is, and writes nothing. The body is read before the route
// looks anything up, so one store (mem) covers it.
func TestABodyThatIsNotAJSONObjectIs400NamingBody(t *testing.T) {
	e := newEnvEveryRoute(t)
	id := e.submit(`{"task_type":"t"}`)
	bodies := map[string]string{ // body -> what the message must say
		`[]`:                  "not an array",
		`[{"task_type":"t"}]`: "not an array",
		`"x"`:                 "not a string",
		`3`:                   "not a number",
		`-1.5`:                "not a number",
		`true`:                "not a boolean",
		`null`:                "not null",
		`{`:                   "not valid JSON",
		`{"a":1} {}`:          "not valid JSON",
		`{"a":1}x`:            "not valid JSON",
		`nope`:                "not valid JSON",
	}
	routes := 0
	for _, key := range api.Routes() {
		method, pattern, _ := strings.Cut(key, " ")
		if method == http.MethodGet {
			continue
		}
		routes++
		path := strings.NewReplacer("{queue}", "default", "{id}", id, "{name}", "a.txt").Replace(pattern)
		before := keys(t, e.store)
		for body, says := range bodies {
			r := e.do(method, path, body)
			if r.status != http.StatusBadRequest || str(r.body, "error.code") != api.CodeInvalidInput || str(r.body, "error.field") != "body" {
				t.Errorf("%s %q: %d %s, want 400 invalid_input on body", key, body, r.status, r.raw)
				continue
			}
			if msg := str(r.body, "error.message"); !strings.HasPrefix(msg, "the request body ") || !strings.Contains(msg, says) {
				t.Errorf("%s %q: message %q, want one about the request body that says %q", key, body, msg, says)
			}
		}
		if after := keys(t, e.store); len(after) != len(before) {
			t.Errorf("%s: refused bodies wrote %d keys", key, len(after)-len(before))
		}
	}
	if routes < 20 {
		t.Fatalf("only %d routes take a body: is api.Routes complete?", routes)
	}
}

// TestAPartThatIsNotAJSONObjectIs400NamingIt: the objects inside a body
// (a batch's tasks, a queue's target) name themselves, not the body.
func TestAPartThatIsNotAJSONObjectIs400NamingIt(t *testing.T) {
	e := newEnv(t, nil, api.Options{})
	r := e.do("POST", "/queues/default/tasks/batch", `{"tasks":[{"task_type":"t"},3,[],"x",null]}`)
	if r.status != http.StatusOK {
		t.Fatalf("batch: %d %s", r.status, r.raw)
	}
	if got := str(r.body, "results.0.task.status"); got != "pending" {
		t.Errorf("the good item: %s", r.raw)
	}
	for i, kind := range []string{1: "a number", 2: "an array", 3: "a string", 4: "null"} {
		if i == 0 {
			continue // the good item
		}
		field := fmt.Sprintf("tasks[%d]", i)
		if got := str(r.body, fmt.Sprintf("results.%d.error.field", i)); got != field {
			t.Errorf("item %d: field %q, want %q: %s", i, got, field, r.raw)
		}
		if msg := str(r.body, fmt.Sprintf("results.%d.error.message", i)); msg != field+" must be a JSON object, not "+kind {
			t.Errorf("item %d: message %q", i, msg)
		}
	}
	r = e.do("PUT", "/queues/q1", `{"target":["https://example.com"]}`)
	if r.status != http.StatusBadRequest || str(r.body, "error.field") != "target" || str(r.body, "error.message") != "target must be a JSON object, not an array" {
		t.Errorf("a target that is an array: %d %s", r.status, r.raw)
	}
}
