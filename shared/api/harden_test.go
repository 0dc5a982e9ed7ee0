package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/api"
)

// TestRequestsMeanOneThing covers issue 16's replay and input rules over
// HTTP on every backend: a lease token replays only its own request, and
// a body means one thing (no key twice, UTF-8 only, no empty id).
func TestRequestsMeanOneThing(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()

			t.Run("a_permanent_fail_with_the_token_of_a_retryable_fail_answers_409_conflict_on_lease_token", func(t *testing.T) {
				e := newEnv(t, b.new(t), api.Options{})
				id, token := e.running()
				path := "/queues/default/tasks/" + id + "/fail"
				first := e.do("POST", path, `{"lease_token":"`+token+`","error":"flaky"}`)
				if first.status != http.StatusOK || str(first.body, "task.status") != "pending" {
					t.Fatalf("retryable fail: %d %s", first.status, first.raw)
				}
				// Its answer was lost: the same request again replays it.
				again := e.do("POST", path, `{"error":"flaky","lease_token":"`+token+`","retryable":true}`)
				if again.status != http.StatusOK || str(again.body, "task.status") != "pending" {
					t.Fatalf("the same fail again: %d %s", again.status, again.raw)
				}
				perm := e.do("POST", path, `{"lease_token":"`+token+`","error":"flaky","retryable":false}`)
				if perm.status != http.StatusConflict || str(perm.body, "error.code") != api.CodeConflict || str(perm.body, "error.field") != "lease_token" {
					t.Fatalf("a permanent fail with the same token: %d %s", perm.status, perm.raw)
				}
				if got := e.do("GET", "/queues/default/tasks/"+id, ""); str(got.body, "task.status") != "pending" {
					t.Fatalf("after the refused fail: %s", got.raw)
				}
			})

			t.Run("a_fail_with_a_token_older_than_the_latest_claim_answers_409_lease_mismatch", func(t *testing.T) {
				e := newEnv(t, b.new(t), api.Options{})
				id, token := e.running()
				path := "/queues/default/tasks/" + id + "/fail"
				if r := e.do("POST", path, `{"lease_token":"`+token+`","error":"flaky"}`); r.status != http.StatusOK {
					t.Fatalf("fail: %d %s", r.status, r.raw)
				}
				e.clock.Advance(time.Hour)
				if id2, _ := e.claim(); id2 != id {
					t.Fatalf("reclaimed %s", id2)
				}
				r := e.do("POST", path, `{"lease_token":"`+token+`","error":"flaky"}`)
				if r.status != http.StatusConflict || str(r.body, "error.code") != api.CodeLeaseMismatch {
					t.Fatalf("the old token: %d %s", r.status, r.raw)
				}
			})

			t.Run("a_body_with_a_key_twice_or_bytes_that_are_not_utf8_answers_400_naming_the_field", func(t *testing.T) {
				e := newEnv(t, b.new(t), api.Options{})
				before := keys(t, e.store)
				for body, field := range map[string]string{
					`{"task_type":"a","task_type":"b"}`:                    "task_type",
					`{"task_type":"a","input":{"n":1,"n":2}}`:              "input",
					`{"task_type":"a","input":{"deep":[{"k":1,"k":1}]}}`:   "input",
					"{\"task_type\":\"a\",\"input\":{\"s\":\"\xff\xfe\"}}": "input",
					`{"task_type":"a","id":""}`:                            "id",
				} {
					r := e.do("POST", "/queues/default/tasks", body)
					if r.status != http.StatusBadRequest || str(r.body, "error.code") != api.CodeInvalidInput || str(r.body, "error.field") != field {
						t.Errorf("%q: %d %s, want 400 on %s", body, r.status, r.raw, field)
					}
				}
				r := e.do("POST", "/queues/default/tasks/batch", `{"tasks":[{"task_type":"a","id":""},{"task_type":"a","input":{"x":1,"x":1}}]}`)
				if str(r.body, "results.0.error.field") != "tasks[0].id" || str(r.body, "results.1.error.field") != "tasks[1].input" {
					t.Errorf("batch: %s", r.raw)
				}
				if after := keys(t, e.store); len(after) != len(before) {
					t.Fatalf("refused submits wrote %d keys", len(after)-len(before))
				}
			})

			t.Run("a_completion_retried_with_its_output_spelled_otherwise_replays", func(t *testing.T) {
				e := newEnv(t, b.new(t), api.Options{})
				id, token := e.running()
				path := "/queues/default/tasks/" + id + "/complete"
				if r := e.do("POST", path, `{"lease_token":"`+token+`","output":{"a":1,"b":2.0}}`); r.status != http.StatusOK {
					t.Fatalf("complete: %d %s", r.status, r.raw)
				}
				if r := e.do("POST", path, `{"output":{"b":2,"a":1e0},"lease_token":"`+token+`"}`); r.status != http.StatusOK {
					t.Fatalf("the same completion respelled: %d %s", r.status, r.raw)
				}
				r := e.do("POST", path, `{"lease_token":"`+token+`","output":{"a":1,"b":3}}`)
				if r.status != http.StatusConflict || str(r.body, "error.field") != "lease_token" {
					t.Fatalf("another output: %d %s", r.status, r.raw)
				}
			})
		})
	}
}

// TestWaitsHaveTheirOwnRoutes: a held wait runs only on the wait routes
// (the waits function, whose concurrency is capped apart); the plain
// routes refuse one with a 400 naming wait and the route to use.
func TestWaitsHaveTheirOwnRoutes(t *testing.T) {
	e := newEnv(t, nil, api.Options{})
	for path, body := range map[string]string{
		"/queues/default/tasks": `{"task_type":"t","wait":"5s"}`,
		"/queues/default/claim": `{"wait":"5s"}`,
	} {
		r := e.do("POST", path, body)
		if r.status != http.StatusBadRequest || str(r.body, "error.field") != "wait" || !strings.Contains(str(r.body, "error.message"), "/wait") {
			t.Errorf("POST %s with a wait: %d %s", path, r.status, r.raw)
		}
	}
	before := keys(t, e.store)
	if len(before) != 0 {
		t.Fatalf("the refused waits wrote %v", before)
	}
	// No wait (absent or 0) is served where it always was.
	if r := e.do("POST", "/queues/default/tasks", `{"task_type":"t","wait":0}`); r.status != http.StatusCreated {
		t.Fatalf("submit with wait 0: %d %s", r.status, r.raw)
	}
	if r := e.do("POST", "/queues/default/claim", `{"wait":"0s","lease_for":"1m"}`); r.status != http.StatusOK {
		t.Fatalf("claim with wait 0: %d %s", r.status, r.raw)
	}
	// The wait routes: a submit that waits for its outcome, a claim that
	// long-polls.
	if k, ok := api.Match("POST", "/queues/default/tasks/wait"); !ok || k != "POST /queues/{queue}/tasks/wait" {
		t.Fatalf("Match tasks/wait = %q %v", k, ok)
	}
	if got := api.RoutesOf("waits"); len(got) != 2 || got[0] != "POST /queues/{queue}/tasks/wait" || got[1] != "POST /queues/{queue}/claim/wait" {
		t.Fatalf("RoutesOf(waits) = %v", got)
	}
	r := e.do("POST", "/queues/default/tasks/wait", `{"task_type":"t","ttl":"1h","wait":0.2}`)
	if r.status != http.StatusAccepted || str(r.body, "task.status") != "pending" {
		t.Fatalf("submit/wait: %d %s", r.status, r.raw)
	}
	if r := e.do("POST", "/queues/default/claim/wait", `{"wait":"1s","lease_for":"1m"}`); r.status != http.StatusOK {
		t.Fatalf("claim/wait: %d %s", r.status, r.raw)
	}
}
