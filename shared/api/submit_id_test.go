package api_test

import (
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/api"
	"github.com/s3q/s3q/shared/queue"
)

// TestSubmitByID covers POST /tasks and /tasks/batch with a client-made
// id on every backend.
func TestSubmitByID(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()

			t.Run("a_retried_submit_with_the_same_id_and_body_answers_200_replayed_with_the_one_task", func(t *testing.T) {
				e := newEnv(t, b.new(t), api.Options{})
				id := queue.NewID(t0)
				body := `{"id":"` + id + `","task_type":"t","input":{"n":1},"ttl":"1h"}`
				first := e.do("POST", "/queues/default/tasks", body)
				if first.status != http.StatusCreated || str(first.body, "task.id") != id || get(first.body, "replayed") != nil {
					t.Fatalf("first: %d %s", first.status, first.raw)
				}
				e.clock.Advance(time.Second)
				again := e.do("POST", "/queues/default/tasks", body)
				if again.status != http.StatusOK || get(again.body, "replayed") != true || str(again.body, "task.id") != id ||
					str(again.body, "task.created_at") != str(first.body, "task.created_at") {
					t.Fatalf("retry: %d %s", again.status, again.raw)
				}
				for _, hidden := range []string{"request_hash", "ended_lease_token", "index_key", "lease_token"} {
					if strings.Contains(string(again.raw), hidden) {
						t.Errorf("the answer shows %s: %s", hidden, again.raw)
					}
				}
				if n := countTasks(keys(t, e.store)); n != 1 {
					t.Fatalf("%d tasks", n)
				}
			})

			t.Run("a_submit_with_a_taken_id_and_another_body_answers_409_conflict_on_id_and_writes_nothing", func(t *testing.T) {
				e := newEnv(t, b.new(t), api.Options{})
				id := queue.NewID(t0)
				e.do("POST", "/queues/default/tasks", `{"id":"`+id+`","task_type":"t","input":{"n":1}}`)
				before := keys(t, e.store)
				e.clock.Advance(time.Second)
				r := e.do("POST", "/queues/default/tasks", `{"id":"`+id+`","task_type":"t","input":{"n":2}}`)
				if r.status != http.StatusConflict || str(r.body, "error.code") != api.CodeConflict || str(r.body, "error.field") != "id" {
					t.Fatalf("%d %s", r.status, r.raw)
				}
				if after := keys(t, e.store); !maps.Equal(before, after) {
					t.Fatalf("the conflict wrote:\nbefore %v\nafter  %v", before, after)
				}
			})

			t.Run("a_bad_id_answers_400_on_id_and_writes_nothing", func(t *testing.T) {
				e := newEnv(t, b.new(t), api.Options{})
				for _, bad := range []string{"../x", "0195F3A0-0000-7000-8000-000000000000", "0195f3a0-0000-4000-8000-000000000000", strings.Repeat("a", 300), "a/b", "x\u0000"} {
					before := keys(t, e.store)
					r := e.do("POST", "/queues/default/tasks", `{"id":"`+strings.ReplaceAll(bad, "\u0000", `\u0000`)+`","task_type":"t"}`)
					if r.status != http.StatusBadRequest || str(r.body, "error.field") != "id" {
						t.Fatalf("id %q: %d %s", bad, r.status, r.raw)
					}
					if after := keys(t, e.store); !maps.Equal(before, after) {
						t.Fatalf("id %q wrote to the store", bad)
					}
				}
			})

			t.Run("batch_items_with_ids_are_created_replayed_or_refused_each_on_its_own", func(t *testing.T) {
				e := newEnv(t, b.new(t), api.Options{})
				a, bID, d := queue.NewID(t0), queue.NewID(t0), queue.NewID(t0)
				r := e.do("POST", "/queues/default/tasks/batch", `{"tasks":[{"id":"`+a+`","task_type":"t"},{"id":"`+bID+`","task_type":"t","input":1}]}`)
				if r.status != http.StatusOK || get(r.body, "results.0.replayed") != false || str(r.body, "results.1.task.id") != bID {
					t.Fatalf("first batch: %d %s", r.status, r.raw)
				}
				e.clock.Advance(time.Second)
				r = e.do("POST", "/queues/default/tasks/batch", `{"tasks":[{"id":"`+a+`","task_type":"t"},{"id":"`+bID+`","task_type":"t","input":2},{"id":"nope","task_type":"t"},{"id":"`+d+`","task_type":"t"}]}`)
				if r.status != http.StatusOK {
					t.Fatalf("second batch: %d %s", r.status, r.raw)
				}
				if get(r.body, "results.0.replayed") != true || str(r.body, "results.0.task.id") != a {
					t.Errorf("item 0: %v", get(r.body, "results.0"))
				}
				if str(r.body, "results.1.error.code") != api.CodeConflict || str(r.body, "results.1.error.field") != "tasks[1].id" {
					t.Errorf("item 1: %v", get(r.body, "results.1"))
				}
				if str(r.body, "results.2.error.code") != api.CodeInvalidInput || str(r.body, "results.2.error.field") != "tasks[2].id" {
					t.Errorf("item 2: %v", get(r.body, "results.2"))
				}
				if get(r.body, "results.3.replayed") != false || str(r.body, "results.3.task.id") != d {
					t.Errorf("item 3: %v", get(r.body, "results.3"))
				}
				if n := countTasks(keys(t, e.store)); n != 3 {
					t.Fatalf("%d tasks, want 3", n)
				}
			})

			t.Run("a_submit_with_the_id_of_a_task_in_another_queue_makes_a_task_of_its_own_and_shows_nothing_of_the_other", func(t *testing.T) {
				e := newEnv(t, b.new(t), api.Options{})
				e.do("PUT", "/queues/b", `{}`)
				for _, first := range []string{`{"task_type":"t","input":{"secret":1}}`, `{"id":"` + queue.NewID(t0) + `","task_type":"t","input":{"secret":1}}`} {
					id := e.submit(first)
					// Ids are per queue: no 409 tells queue b that queue
					// default holds the id.
					r := e.do("POST", "/queues/b/tasks", `{"id":"`+id+`","task_type":"t"}`)
					if r.status != http.StatusCreated || str(r.body, "task.queue") != "b" || strings.Contains(string(r.raw), "secret") {
						t.Fatalf("%d %s", r.status, r.raw)
					}
					if g := e.do("GET", "/queues/default/tasks/"+id, ""); g.status != http.StatusOK || !strings.Contains(string(g.raw), "secret") {
						t.Fatalf("the default queue's task: %d %s", g.status, g.raw)
					}
				}
			})

			t.Run("a_lease_operation_retried_with_the_same_token_answers_200_with_the_task", func(t *testing.T) {
				e := newEnv(t, b.new(t), api.Options{})
				for _, op := range []string{"complete", "fail", "cancel-ack", "heartbeat"} {
					id, tok := e.running()
					body := `{"lease_token":"` + tok + `"}`
					first := e.do("POST", "/queues/default/tasks/"+id+"/"+op, body)
					again := e.do("POST", "/queues/default/tasks/"+id+"/"+op, body)
					if first.status != http.StatusOK || again.status != http.StatusOK ||
						str(again.body, "task.status") != str(first.body, "task.status") || str(again.body, "task.updated_at") != str(first.body, "task.updated_at") && op != "heartbeat" {
						t.Fatalf("%s: %d %s, then %d %s", op, first.status, first.raw, again.status, again.raw)
					}
					if strings.Contains(string(again.raw), tok) && op != "heartbeat" {
						t.Errorf("%s: the answer shows the ended lease token: %s", op, again.raw)
					}
					other := e.do("POST", "/queues/default/tasks/"+id+"/complete", `{"lease_token":"other"}`)
					if op != "heartbeat" && other.status != http.StatusConflict {
						t.Errorf("%s: another token got %d %s", op, other.status, other.raw)
					}
					if op == "heartbeat" {
						e.do("POST", "/queues/default/tasks/"+id+"/complete", body)
					}
				}
			})
		})
	}
}

// countTasks counts the task records among m's keys (every queue).
func countTasks(m map[string]string) int {
	n := 0
	for k := range m {
		if queue.IsTaskKey(k) {
			n++
		}
	}
	return n
}
