package api_test

import (
	"bytes"
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/api"
	"github.com/s3q/s3q/shared/artifacts"
	"github.com/s3q/s3q/shared/internal/jsonpath"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/reqcount"
	"github.com/s3q/s3q/shared/schedule"
	"github.com/s3q/s3q/shared/store/memstore"
)

// publishAll is an event publisher that accepts every event.
type publishAll struct{}

func (publishAll) Publish(_ context.Context, events []queue.Event) ([]error, error) {
	return make([]error, len(events)), nil
}

// The answers of states few route tests reach carry the fields the
// OpenAPI document promises for them (every answer is validated, and a
// full run fails on a promised field no answer carried): a push target,
// pages of queues, bulk results, schedule fires and history, a paused
// queue's stats, a task's TTL, parent, artifacts, published expiry and
// purge, fires skipped for overlap or an invalid template, and missed.
func TestAnswersOfRareStatesCarryTheirFields(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	e := &env{t: t, store: s, clock: &clock{now: t0}, logs: &bytes.Buffer{}}
	e.q, e.decls = queues.New(reqcount.Wrap(s), queues.Options{Core: queue.Options{ListCacheFor: -1}, RequireDeclared: true})
	sched := schedule.New(e.q.Store(), e.q, schedule.Options{})
	e.api = api.New(e.q, e.decls, api.Options{
		Now: e.clock.Now, Logger: discard(), Schedules: sched,
		Artifacts: artifacts.New(e.q, presigner, "bucket", "", artifacts.Options{}),
	})
	want := func(r response, status int, fields ...string) response {
		t.Helper()
		if r.status != status {
			t.Fatalf("answered %d, want %d: %s", r.status, status, r.raw)
		}
		for _, f := range fields {
			if !has(r.body, f) {
				t.Errorf("the answer has no %s: %s", f, r.raw)
			}
		}
		return r
	}

	// Queues: a push target, a page of queues, a paused queue's stats.
	want(e.do("PUT", "/queues/default", ""), http.StatusCreated)
	want(e.do("PUT", "/queues/hooks", `{"target":{"url":"https://hooks.example.com/s3q","secret":"/s3q/hooks"}}`), http.StatusCreated,
		"queue.target.url", "queue.target.secret")
	want(e.do("GET", "/queues?limit=1", ""), http.StatusOK, "next_cursor")
	want(e.do("POST", "/queues/default/pause", ""), http.StatusOK, "queue.paused_at")
	want(e.do("GET", "/queues/default/stats", ""), http.StatusOK, "stats.paused_at")
	want(e.do("POST", "/queues/default/resume", ""), http.StatusOK)

	// Tasks: a TTL from the first attempt, a child, artifacts.
	parent := e.submit(`{"task_type":"t","ttl":"1h","ttl_from":"first_attempt"}`)
	child := e.submit(`{"task_type":"t","parent_id":"` + parent + `","on_parent_expired":"cancel"}`)
	want(e.do("GET", "/queues/default/tasks/"+parent, ""), http.StatusOK, "task.ttl", "task.ttl_from")
	want(e.do("GET", "/queues/default/tasks/"+child, ""), http.StatusOK, "task.parent_id", "task.on_parent_expired")
	want(e.do("POST", "/queues/default/tasks/"+parent+"/artifacts", `{"name":"a.txt","size":3}`), http.StatusCreated)
	want(e.do("GET", "/queues/default/tasks/"+parent, ""), http.StatusOK, "task.artifact_names", "task.artifacts_expire_at")

	// The waiting route with no wait answers as the plain one.
	want(e.do("POST", "/queues/default/tasks/wait", `{"task_type":"t"}`), http.StatusCreated)

	// An expiry the sweep published, then the task purged: its history
	// ends with the tombstone.
	expired := e.submit(`{"task_type":"t","ttl":"1m"}`)
	e.clock.Advance(2 * time.Minute)
	if _, err := e.q.Sweep(ctx, e.clock.Now(), queue.SweepOptions{Publisher: publishAll{}}); err != nil {
		t.Fatal(err)
	}
	want(e.do("GET", "/queues/default/tasks/"+expired, ""), http.StatusOK, "task.expiry_event_sent_at")
	want(e.do("POST", "/queues/default/purge", `{"status":"expired"}`), http.StatusOK)
	want(e.do("GET", "/queues/default/tasks/"+expired+"/history", ""), http.StatusOK, "versions.0.task.purged_at")

	// A bulk operation that stops at its limit.
	e.submit(`{"task_type":"b"}`)
	e.submit(`{"task_type":"b"}`)
	want(e.do("POST", "/queues/default/bulk/cancel", `{"status":"pending","task_type":"b","limit":1}`), http.StatusOK, "next_cursor")

	// Schedules: every field of the template; a fire skipped for
	// overlap; missed runs; a page of history; a template that no longer
	// makes a valid task (its queue deleted).
	now := e.clock.Now().Truncate(time.Minute)
	want(e.do("POST", "/queues/default/schedules", `{"id":"every","task_type":"t","cron":"* * * * *","overlap":"skip","missed_runs":"catch_up","catch_up_window":"1h","ttl":"1h","ttl_from":"first_attempt","max_attempts":2}`),
		http.StatusCreated, "schedule.catch_up_window", "schedule.ttl_from", "schedule.max_attempts")
	want(e.do("POST", "/queues/default/schedules", `{"id":"sometimes","task_type":"t","cron":"* * * * *"}`), http.StatusCreated)
	want(e.do("PUT", "/queues/gone", ""), http.StatusCreated)
	want(e.do("POST", "/queues/gone/schedules", `{"id":"orphan","task_type":"t","cron":"* * * * *"}`), http.StatusCreated)
	want(e.do("DELETE", "/queues/gone", ""), http.StatusNoContent)
	for _, at := range []time.Time{now.Add(time.Minute), now.Add(2 * time.Minute), now.Add(6 * time.Minute)} {
		e.clock.Set(at)
		if _, err := sched.Tick(ctx, at); err != nil {
			t.Fatal(err)
		}
	}
	want(e.do("GET", "/queues/default/schedules/every", ""), http.StatusOK, "schedule.last_task_id")
	want(e.do("GET", "/queues/default/schedules/every/history?limit=1", ""), http.StatusOK, "next_cursor")
	fires := want(e.do("GET", "/queues/default/schedules/every/history", ""), http.StatusOK)
	if !anyFire(fires, "running_task_id") {
		t.Errorf("no fire of every was skipped for overlap: %s", fires.raw)
	}
	if fires := want(e.do("GET", "/queues/default/schedules/sometimes/history", ""), http.StatusOK); !anyFire(fires, "missed") {
		t.Errorf("no fire of sometimes counts missed runs: %s", fires.raw)
	}
	if fires := want(e.do("GET", "/queues/gone/schedules/orphan/history", ""), http.StatusOK); !anyFire(fires, "error") {
		t.Errorf("no fire of orphan was skipped as invalid: %s", fires.raw)
	}
}

// anyFire reports whether some fire of a history answer has field.
func anyFire(r response, field string) bool {
	fires, _ := r.body["fires"].([]any)
	for _, f := range fires {
		if m, ok := f.(map[string]any); ok && m[field] != nil {
			return true
		}
	}
	return false
}

// has reports whether the decoded answer body has a value at path
// ("queue.target.url", "versions.0.task.purged_at").
func has(body map[string]any, path string) bool { return jsonpath.Get(body, path) != nil }
