package api_test

import (
	"testing"
	"time"

	"github.com/s3q/s3q/shared/queue"
)

// wantID checks that field holds the case's task id.
func wantID(field string) func(t *testing.T, e *env, r response, id string) {
	return func(t *testing.T, e *env, r response, id string) {
		t.Helper()
		wantField(field, id)(t, e, r, id)
	}
}

// failedAndSent is a dead-lettered task whose event the sweep has sent:
// one that can be retried and purged.
func failedAndSent(e *env) (string, string) {
	id, tok := e.running()
	if r := e.do("POST", "/queues/default/tasks/"+id+"/fail", `{"lease_token":"`+tok+`","error":"boom","retryable":false}`); r.status != 200 {
		e.t.Fatalf("fail: %d %s", r.status, r.raw)
	}
	if _, err := e.q.Sweep(e.t.Context(), e.clock.Now(), queue.SweepOptions{}); err != nil {
		e.t.Fatal(err)
	}
	return id, ""
}

// pausedPending is a pending task in a paused queue.
func pausedPending(e *env) (string, string) {
	id, _ := pending(e)
	if r := e.do("POST", "/queues/default/pause", ""); r.status != 200 {
		e.t.Fatalf("pause: %d %s", r.status, r.raw)
	}
	return id, ""
}

// The queue operations: pause, resume, stats, purge and the bulk routes.
var opsCases = []routeCase{
	{name: "pause_a_queue", setup: pending, method: "POST", path: "/queues/default/pause", status: 200,
		check: all(wantField("queue.paused", true), wantField("queue.paused_at", "2026-01-28T09:00:00Z"))},
	{name: "a_paused_queue_gives_no_claim_204_and_shows_paused", setup: pausedPending, method: "POST", path: "/queues/default/claim", status: 204,
		check: func(t *testing.T, e *env, _ response, id string) {
			if r := e.do("GET", "/queues/default", ""); get(r.body, "queue.paused") != true || get(r.body, "queue.counts.live") != float64(1) {
				t.Errorf("GET the paused queue: %s", r.raw)
			}
			if r := e.do("GET", "/queues", ""); get(r.body, "queues.0.paused") != true {
				t.Errorf("GET /queues: %s", r.raw)
			}
			if r := e.do("POST", "/queues/default/tasks", `{"task_type":"t"}`); r.status != 201 {
				t.Errorf("submit to a paused queue: %d %s", r.status, r.raw)
			}
		}},
	{name: "resume_a_paused_queue_and_claim", setup: pausedPending, method: "POST", path: "/queues/default/resume", status: 200,
		check: func(t *testing.T, e *env, r response, id string) {
			wantField("queue.paused", nil)(t, e, r, id)
			if c := e.do("POST", "/queues/default/claim", `{}`); c.status != 200 || str(c.body, "tasks.0.task.id") != id {
				t.Errorf("claim after resume: %d %s", c.status, c.raw)
			}
		}},
	{name: "pause_an_undeclared_queue_is_404", method: "POST", path: "/queues/nope/pause", status: 404, code: "queue_not_found", field: "queue"},
	{name: "pause_with_a_body_field_is_400", setup: pending, method: "POST", path: "/queues/default/pause", body: `{"until":"x"}`, status: 400, code: "invalid_input", field: "until"},
	{name: "stats_count_by_status", setup: func(e *env) (string, string) {
		pending(e)
		cancelled(e)
		return "", ""
	}, method: "GET", path: "/queues/default/stats", status: 200,
		check: all(wantField("stats.queue", "default"), wantField("stats.counts.live", float64(1)), wantField("stats.counts.cancelled", float64(1)),
			wantField("stats.oldest_pending_at", "2026-01-28T09:00:00Z"), wantField("stats.recent.window_seconds", float64(3600)))},
	{name: "stats_of_an_undeclared_queue_is_404", method: "GET", path: "/queues/nope/stats", status: 404, code: "queue_not_found", field: "queue"},
	{name: "a_dry_run_purge_counts_and_deletes_nothing", setup: pending, method: "POST", path: "/queues/default/purge",
		body: `{"status":"pending","dry_run":true}`, status: 200,
		check: func(t *testing.T, e *env, r response, id string) {
			all(wantField("op", "purge"), wantField("dry_run", true), wantField("changed", float64(1)), wantField("task_ids.0", id))(t, e, r, id)
			if g := e.do("GET", "/queues/default/tasks/"+id, ""); g.status != 200 {
				t.Errorf("after a dry run: %d %s", g.status, g.raw)
			}
		}},
	{name: "purge_deletes_pending_tasks", setup: pending, method: "POST", path: "/queues/default/purge", body: `{"status":"pending"}`, status: 200,
		check: func(t *testing.T, e *env, r response, id string) {
			all(wantField("changed", float64(1)), wantField("task_ids.0", id), wantField("next_cursor", nil))(t, e, r, id)
			if g := e.do("GET", "/queues/default/tasks/"+id, ""); g.status != 404 {
				t.Errorf("a purged task: %d %s", g.status, g.raw)
			}
		}},
	{name: "purge_never_takes_a_running_task", setup: running, method: "POST", path: "/queues/default/purge", body: `{"status":"running"}`,
		status: 400, code: "invalid_input", field: "status"},
	{name: "purge_without_a_status_is_400_naming_status", method: "POST", path: "/queues/default/purge", body: `{}`, status: 400, code: "invalid_input", field: "status"},
	{name: "purge_with_a_bad_older_than_is_400", method: "POST", path: "/queues/default/purge", body: `{"status":"completed","older_than":"soon"}`,
		status: 400, code: "invalid_input", field: "older_than"},
	{name: "purge_over_100_is_400_naming_limit", method: "POST", path: "/queues/default/purge", body: `{"status":"completed","limit":101}`,
		status: 400, code: "invalid_input", field: "limit"},
	{name: "purge_of_an_undeclared_queue_is_404", method: "POST", path: "/queues/nope/purge", body: `{"status":"completed"}`, status: 404, code: "queue_not_found", field: "queue"},
	{name: "purge_skips_a_failed_task_whose_event_is_owed", method: "POST", path: "/queues/default/purge", body: `{"status":"failed"}`,
		setup: func(e *env) (string, string) {
			id, tok := e.running()
			e.do("POST", "/queues/default/tasks/"+id+"/fail", `{"lease_token":"`+tok+`","retryable":false}`)
			return id, ""
		}, status: 200,
		check: all(wantField("changed", float64(0)), wantID("skipped.0.id"))},
	{name: "bulk_retry_of_failed_tasks", setup: failedAndSent, method: "POST", path: "/queues/default/bulk/retry", body: `{}`, status: 200,
		check: func(t *testing.T, e *env, r response, id string) {
			all(wantField("op", "retry"), wantField("status", "failed"), wantField("changed", float64(1)))(t, e, r, id)
			if g := e.do("GET", "/queues/default/tasks/"+id, ""); str(g.body, "task.status") != "pending" {
				t.Errorf("after bulk retry: %s", g.raw)
			}
		}},
	{name: "bulk_cancel_of_old_pending_tasks", method: "POST", path: "/queues/default/bulk/cancel", body: `{"older_than":"30m","task_type":"t"}`, status: 200,
		setup: func(e *env) (string, string) {
			id, _ := pending(e)
			e.clock.Advance(45 * time.Minute) // old enough, before its 1h deadline (past it, it reads expired)
			pending(e)                        // too young
			return id, ""
		},
		check: all(wantField("changed", float64(1)), wantField("matched", float64(1)), wantID("task_ids.0"))},
	{name: "bulk_expire_with_an_unknown_field_is_400", method: "POST", path: "/queues/default/bulk/expire", body: `{"ids":[]}`, status: 400, code: "invalid_input", field: "ids"},
	{name: "bulk_expire_of_failed_tasks_is_400_naming_status", method: "POST", path: "/queues/default/bulk/expire", body: `{"status":"failed"}`, status: 400, code: "invalid_input", field: "status"},
	{name: "bulk_expire_of_pending_tasks", setup: pending, method: "POST", path: "/queues/default/bulk/expire", body: `{"limit":1}`, status: 200,
		check: all(wantField("changed", float64(1)), wantField("op", "expire"))},
	{name: "bulk_with_a_bad_cursor_is_400_naming_cursor", setup: pending, method: "POST", path: "/queues/default/bulk/cancel", body: `{"cursor":"x"}`, status: 400, code: "invalid_input", field: "cursor"},
	{name: "get_of_the_purge_route_is_405", method: "GET", path: "/queues/default/purge", status: 405, code: "method_not_allowed"},
}

func TestOps(t *testing.T) { runCases(t, opsCases) }
