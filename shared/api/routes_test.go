package api_test

import (
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/api"
)

// routeCase is one request against a fresh store: setup makes the state it
// needs and returns values for the placeholders {id} and {token} in path
// and body.
type routeCase struct {
	name         string
	setup        func(e *env) (id, token string)
	method, path string
	body         string
	status       int
	code, field  string // of an error answer
	check        func(t *testing.T, e *env, r response, id string)
}

func pending(e *env) (string, string) { return e.submit(`{"task_type":"t","ttl":"1h"}`), "" }
func running(e *env) (string, string) { return e.running() }
func completed(e *env) (string, string) {
	id, tok := e.running()
	if r := e.do("POST", "/queues/default/tasks/"+id+"/complete", `{"lease_token":"`+tok+`"}`); r.status != 200 {
		e.t.Fatalf("complete: %d %s", r.status, r.raw)
	}
	return id, tok
}
func cancelled(e *env) (string, string) {
	id, _ := pending(e)
	if r := e.do("POST", "/queues/default/tasks/"+id+"/cancel", ""); r.status != 200 {
		e.t.Fatalf("cancel: %d %s", r.status, r.raw)
	}
	return id, ""
}

const unknownID = "01900000-0000-7000-8000-000000000000"

func wantField(path string, want any) func(t *testing.T, e *env, r response, id string) {
	return func(t *testing.T, e *env, r response, id string) {
		t.Helper()
		if got := get(r.body, path); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s = %v, want %v in %s", path, got, want, r.raw)
		}
	}
}

func all(checks ...func(t *testing.T, e *env, r response, id string)) func(t *testing.T, e *env, r response, id string) {
	return func(t *testing.T, e *env, r response, id string) {
		t.Helper()
		for _, c := range checks {
			c(t, e, r, id)
		}
	}
}

// noLeaseToken checks that no "lease_token" key appears anywhere in the answer.
func noLeaseToken(t *testing.T, e *env, r response, id string) {
	t.Helper()
	if strings.Contains(string(r.raw), `"lease_token"`) || strings.Contains(string(r.raw), `"index_key"`) {
		t.Errorf("the answer shows a lease token or index key: %s", r.raw)
	}
}

var routeCases = []routeCase{
	// Submit.
	{name: "submit_returns_201_with_the_task_and_a_null_expires_at", method: "POST", path: "/queues/default/tasks",
		body: `{"task_type":"email.send","input":{"to":"a@example.com"}}`, status: 201,
		check: all(wantField("task.status", "pending"), wantField("task.task_type", "email.send"), wantField("task.input.to", "a@example.com"),
			func(t *testing.T, e *env, r response, id string) {
				if v, ok := r.body["task"].(map[string]any)["expires_at"]; !ok || v != nil {
					t.Errorf("expires_at = %v (present %v), want null", v, ok)
				}
				if _, ok := r.body["task"].(map[string]any)["expires_in_seconds"]; ok {
					t.Errorf("expires_in_seconds is set on a task without a deadline")
				}
			})},
	{name: "submit_with_a_ttl_answers_expires_at_and_expires_in_seconds", method: "POST", path: "/queues/default/tasks",
		body: `{"task_type":"t","ttl":"1h"}`, status: 201,
		check: all(wantField("task.expires_at", "2026-01-28T10:00:00Z"), wantField("task.expires_in_seconds", 3600))},
	{name: "submit_with_ttl_seconds_and_a_number_delay_schedules_it", method: "POST", path: "/queues/default/tasks",
		body: `{"task_type":"t","ttl_seconds":90,"delay":30}`, status: 201,
		check: all(wantField("task.available_at", "2026-01-28T09:00:30Z"), wantField("task.expires_in_seconds", 90))},
	{name: "submit_with_a_live_dedup_key_answers_200_deduplicated", method: "POST", path: "/queues/default/tasks",
		setup: func(e *env) (string, string) { return e.submit(`{"task_type":"t","dedup_key":"k1"}`), "" },
		body:  `{"task_type":"t","dedup_key":"k1"}`, status: 200,
		check: func(t *testing.T, e *env, r response, id string) {
			if str(r.body, "task.id") != id || r.body["deduplicated"] != true {
				t.Errorf("want the first task %s deduplicated, got %s", id, r.raw)
			}
		}},
	{name: "submit_without_a_task_type_is_400_naming_task_type", method: "POST", path: "/queues/default/tasks",
		body: `{"input":{}}`, status: 400, code: "invalid_input", field: "task_type"},
	{name: "submit_with_an_empty_body_is_400_naming_task_type", method: "POST", path: "/queues/default/tasks",
		status: 400, code: "invalid_input", field: "task_type"},
	{name: "submit_with_an_unknown_field_is_400_naming_it", method: "POST", path: "/queues/default/tasks",
		body: `{"task_type":"t","tll":"1h"}`, status: 400, code: "invalid_input", field: "tll"},
	{name: "submit_with_a_field_in_the_wrong_case_is_400_naming_it", method: "POST", path: "/queues/default/tasks",
		body: `{"Task_Type":"t"}`, status: 400, code: "invalid_input", field: "Task_Type"},
	{name: "submit_with_the_internal_id_field_is_400_naming_it", method: "POST", path: "/queues/default/tasks",
		body: `{"task_type":"t","ID":"` + unknownID + `"}`, status: 400, code: "invalid_input", field: "ID"},
	{name: "submit_with_malformed_json_is_400_naming_body", method: "POST", path: "/queues/default/tasks",
		body: `{"task_type":"t"`, status: 400, code: "invalid_input", field: "body"},
	{name: "submit_with_trailing_data_is_400_naming_body", method: "POST", path: "/queues/default/tasks",
		body: `{"task_type":"t"} {}`, status: 400, code: "invalid_input", field: "body"},
	{name: "submit_with_an_array_body_is_400_naming_body", method: "POST", path: "/queues/default/tasks",
		body: `[{"task_type":"t"}]`, status: 400, code: "invalid_input", field: "body"},
	{name: "submit_with_a_string_max_attempts_is_400_naming_it", method: "POST", path: "/queues/default/tasks",
		body: `{"task_type":"t","max_attempts":"3"}`, status: 400, code: "invalid_input", field: "max_attempts"},
	{name: "submit_with_a_bad_duration_is_400_naming_ttl", method: "POST", path: "/queues/default/tasks",
		body: `{"task_type":"t","ttl":"soon"}`, status: 400, code: "invalid_input", field: "ttl"},
	{name: "submit_with_a_bad_time_is_400_naming_schedule_at", method: "POST", path: "/queues/default/tasks",
		body: `{"task_type":"t","schedule_at":"tomorrow"}`, status: 400, code: "invalid_input", field: "schedule_at"},
	{name: "submit_with_ttl_and_expires_at_is_400", method: "POST", path: "/queues/default/tasks",
		body: `{"task_type":"t","ttl":"1h","expires_at":"2026-02-01T00:00:00Z"}`, status: 400, code: "invalid_input", field: "expires_at"},
	{name: "submit_with_a_task_type_with_a_slash_is_400", method: "POST", path: "/queues/default/tasks",
		body: `{"task_type":"../etc"}`, status: 400, code: "invalid_input", field: "task_type"},
	{name: "submit_with_an_unknown_parent_is_400_naming_parent_id", method: "POST", path: "/queues/default/tasks",
		body: `{"task_type":"t","parent_id":"` + unknownID + `"}`, status: 400, code: "invalid_input", field: "parent_id"},
	{name: "submit_with_input_over_256KiB_is_413_naming_input", method: "POST", path: "/queues/default/tasks",
		body: `{"task_type":"t","input":"` + strings.Repeat("x", 256<<10) + `"}`, status: 413, code: "too_large", field: "input"},
	{name: "submit_with_a_wait_over_25s_is_400_naming_wait", method: "POST", path: "/queues/default/tasks",
		body: `{"task_type":"t","wait":"26s"}`, status: 400, code: "invalid_input", field: "wait"},
	{name: "submit_with_a_query_parameter_is_400_naming_it", method: "POST", path: "/queues/default/tasks?wait=1s",
		body: `{"task_type":"t"}`, status: 400, code: "invalid_input", field: "wait"},
	{name: "a_body_over_the_limit_is_413_naming_body", method: "POST", path: "/queues/default/tasks",
		body: `{"task_type":"t","input":"` + strings.Repeat("x", api.DefaultMaxBodyBytes) + `"}`, status: 413, code: "too_large", field: "body"},

	// Batch.
	{name: "batch_answers_one_result_per_task_in_order", method: "POST", path: "/queues/default/tasks/batch",
		setup: func(e *env) (string, string) { return e.submit(`{"task_type":"t","dedup_key":"k"}`), "" },
		body:  `{"tasks":[{"task_type":"a"},{"task_type":"b","bogus":1},{"task_type":"c","dedup_key":"k"},{"ttl":"1h"}]}`, status: 200,
		check: all(wantField("results.0.task.task_type", "a"), wantField("results.0.deduplicated", false),
			wantField("results.1.error.code", "invalid_input"), wantField("results.1.error.field", "tasks[1].bogus"),
			wantField("results.2.deduplicated", true), wantField("results.2.task.task_type", "t"),
			wantField("results.3.error.field", "tasks[3].task_type"))},
	{name: "batch_without_tasks_is_400_naming_tasks", method: "POST", path: "/queues/default/tasks/batch",
		body: `{"tasks":[]}`, status: 400, code: "invalid_input", field: "tasks"},
	{name: "batch_of_an_object_instead_of_a_list_is_400_naming_tasks", method: "POST", path: "/queues/default/tasks/batch",
		body: `{"tasks":{"task_type":"t"}}`, status: 400, code: "invalid_input", field: "tasks"},
	{name: "batch_over_500_tasks_is_413_naming_tasks", method: "POST", path: "/queues/default/tasks/batch",
		body: `{"tasks":[` + strings.TrimSuffix(strings.Repeat(`{"task_type":"t"},`, 501), ",") + `]}`, status: 413, code: "too_large", field: "tasks"},

	// Get, list, history.
	{name: "get_answers_a_running_task_without_its_lease_token", setup: running, method: "GET", path: "/queues/default/tasks/{id}", status: 200,
		check: all(wantField("task.status", "running"), noLeaseToken)},
	{name: "get_answers_a_deadline_past_as_negative_expires_in_seconds", method: "GET", path: "/queues/default/tasks/{id}", status: 200,
		setup: func(e *env) (string, string) {
			id := e.submit(`{"task_type":"t","ttl":"10s","delay":"1m"}`)
			e.clock.Advance(10*time.Second + 500*time.Millisecond)
			return id, ""
		},
		check: wantField("task.expires_in_seconds", -1)},
	{name: "get_of_an_unknown_id_is_404", method: "GET", path: "/queues/default/tasks/" + unknownID, status: 404, code: "not_found"},
	{name: "get_of_an_id_with_encoded_slashes_is_404", method: "GET", path: "/queues/default/tasks/..%2F..%2Fetc", status: 404, code: "not_found"},
	{name: "get_of_an_id_that_is_not_a_uuid_is_400_naming_id", method: "GET", path: "/queues/default/tasks/abc", status: 400, code: "invalid_input", field: "id"},
	{name: "get_with_a_query_parameter_is_400", setup: pending, method: "GET", path: "/queues/default/tasks/{id}?x=1", status: 400, code: "invalid_input", field: "x"},
	{name: "list_filters_by_status_and_hides_tokens", method: "GET", path: "/queues/default/tasks?status=running&limit=10", status: 200,
		setup: func(e *env) (string, string) { e.submit(`{"task_type":"t"}`); return e.running() },
		check: all(wantField("tasks.0.status", "running"), wantField("tasks.1", nil), noLeaseToken)},
	{name: "list_pages_with_next_cursor", method: "GET", path: "/queues/default/tasks?limit=1", status: 200,
		setup: func(e *env) (string, string) {
			e.submit(`{"task_type":"t"}`)
			e.submit(`{"task_type":"t"}`)
			return "", ""
		},
		check: func(t *testing.T, e *env, r response, _ string) {
			cur := str(r.body, "next_cursor")
			if cur == "" {
				t.Fatalf("no next_cursor: %s", r.raw)
			}
			r2 := e.do("GET", "/queues/default/tasks?limit=1&cursor="+cur, "")
			if r2.status != 200 || str(r2.body, "tasks.0.id") == cur || str(r2.body, "tasks.0.id") == "" {
				t.Errorf("second page: %d %s", r2.status, r2.raw)
			}
		}},
	{name: "list_with_an_unknown_parameter_is_400_naming_it", method: "GET", path: "/queues/default/tasks?state=pending", status: 400, code: "invalid_input", field: "state"},
	{name: "list_with_a_repeated_parameter_is_400_naming_it", method: "GET", path: "/queues/default/tasks?queue=a&queue=b", status: 400, code: "invalid_input", field: "queue"},
	{name: "list_with_a_limit_that_is_not_a_number_is_400_naming_limit", method: "GET", path: "/queues/default/tasks?limit=ten", status: 400, code: "invalid_input", field: "limit"},
	{name: "list_with_a_limit_of_zero_is_400_naming_limit", method: "GET", path: "/queues/default/tasks?limit=0", status: 400, code: "invalid_input", field: "limit"},
	{name: "list_with_an_unknown_status_is_400_naming_status", method: "GET", path: "/queues/default/tasks?status=done", status: 400, code: "invalid_input", field: "status"},
	{name: "list_with_a_bad_cursor_is_400_naming_cursor", method: "GET", path: "/queues/default/tasks?cursor=zzz", status: 400, code: "invalid_input", field: "cursor"},
	{name: "history_lists_versions_newest_first_without_tokens", setup: completed, method: "GET", path: "/queues/default/tasks/{id}/history", status: 200,
		check: all(wantField("versions.0.task.status", "completed"), wantField("versions.1.task.status", "running"),
			wantField("versions.2.task.status", "pending"), noLeaseToken)},
	{name: "history_of_an_unknown_id_is_404", method: "GET", path: "/queues/default/tasks/" + unknownID + "/history", status: 404, code: "not_found"},
	{name: "history_with_a_limit_returns_a_page_and_a_next_cursor", setup: completed, method: "GET", path: "/queues/default/tasks/{id}/history?limit=2", status: 200,
		check: func(t *testing.T, e *env, r response, id string) {
			if n := len(r.body["versions"].([]any)); n != 2 || str(r.body, "next_cursor") == "" || str(r.body, "versions.1.task.status") != "running" {
				t.Fatalf("first page: %s", r.raw)
			}
			r = e.do("GET", "/queues/default/tasks/"+id+"/history?limit=2&cursor="+url.QueryEscape(str(r.body, "next_cursor")), "")
			if n := len(r.body["versions"].([]any)); r.status != 200 || n != 1 || str(r.body, "versions.0.task.status") != "pending" || str(r.body, "next_cursor") != "" {
				t.Fatalf("second page: %d %s", r.status, r.raw)
			}
		}},
	{name: "history_with_a_limit_over_1000_is_400_naming_limit", setup: completed, method: "GET", path: "/queues/default/tasks/{id}/history?limit=1001", status: 400, code: "invalid_input", field: "limit"},
	{name: "history_with_an_unknown_cursor_is_400_naming_cursor", setup: completed, method: "GET", path: "/queues/default/tasks/{id}/history?cursor=nope", status: 400, code: "invalid_input", field: "cursor"},

	// Cancel, retry, expire.
	{name: "cancel_of_a_pending_task_cancels_it", setup: pending, method: "POST", path: "/queues/default/tasks/{id}/cancel", status: 200,
		check: wantField("task.status", "cancelled")},
	{name: "cancel_of_a_running_task_requests_a_cancel", setup: running, method: "POST", path: "/queues/default/tasks/{id}/cancel", status: 200,
		check: all(wantField("task.status", "running"), wantField("task.cancel_requested", true))},
	{name: "cancel_ack_with_the_lease_token_cancels_a_running_task", setup: running, method: "POST", path: "/queues/default/tasks/{id}/cancel-ack",
		body: `{"lease_token":"{token}"}`, status: 200, check: wantField("task.status", "cancelled")},
	{name: "cancel_ack_with_a_wrong_lease_token_is_409_lease_mismatch", setup: running, method: "POST", path: "/queues/default/tasks/{id}/cancel-ack",
		body: `{"lease_token":"nope"}`, status: 409, code: "lease_mismatch"},
	{name: "cancel_ack_without_a_lease_token_is_400_naming_it", setup: running, method: "POST", path: "/queues/default/tasks/{id}/cancel-ack",
		body: `{}`, status: 400, code: "invalid_input", field: "lease_token"},
	{name: "cancel_ack_of_a_pending_task_is_409_not_running", setup: pending, method: "POST", path: "/queues/default/tasks/{id}/cancel-ack",
		body: `{"lease_token":"nope"}`, status: 409, code: "not_running"},
	{name: "cancel_with_a_lease_token_is_400_pointing_to_cancel_ack", setup: running, method: "POST", path: "/queues/default/tasks/{id}/cancel",
		body: `{"lease_token":"{token}"}`, status: 400, code: "invalid_input", field: "lease_token"},
	{name: "cancel_of_a_completed_task_is_409_invalid_state", setup: completed, method: "POST", path: "/queues/default/tasks/{id}/cancel", status: 409, code: "invalid_state"},
	{name: "cancel_of_an_unknown_task_is_404", method: "POST", path: "/queues/default/tasks/" + unknownID + "/cancel", status: 404, code: "not_found"},
	{name: "retry_of_a_cancelled_task_makes_it_pending", setup: cancelled, method: "POST", path: "/queues/default/tasks/{id}/retry", status: 200,
		check: all(wantField("task.status", "pending"), wantField("task.attempt", 0))},
	{name: "retry_of_a_pending_task_is_409_invalid_state", setup: pending, method: "POST", path: "/queues/default/tasks/{id}/retry", status: 409, code: "invalid_state"},
	{name: "retry_with_a_body_field_is_400_naming_it", setup: cancelled, method: "POST", path: "/queues/default/tasks/{id}/retry", body: `{"now":true}`, status: 400, code: "invalid_input", field: "now"},
	{name: "expire_of_a_pending_task_expires_it_by_hand", setup: pending, method: "POST", path: "/queues/default/tasks/{id}/expire", status: 200,
		check: all(wantField("task.status", "expired"), wantField("task.expiry_reason", "manual"))},
	{name: "expire_of_a_running_task_is_409_invalid_state", setup: running, method: "POST", path: "/queues/default/tasks/{id}/expire", status: 409, code: "invalid_state"},

	// Claim.
	{name: "claim_answers_the_task_and_its_lease", setup: pending, method: "POST", path: "/queues/default/claim",
		body: `{"queue":"default","task_types":["t"],"lease_for":"30s","worker_id":"w1","max_tasks":5}`, status: 200,
		check: func(t *testing.T, e *env, r response, id string) {
			wantField("tasks.0.task.status", "running")(t, e, r, id)
			wantField("tasks.0.task.worker_id", "w1")(t, e, r, id)
			wantField("tasks.0.lease.task_id", id)(t, e, r, id)
			wantField("tasks.0.lease.expires_at", "2026-01-28T09:00:30Z")(t, e, r, id)
			if len(str(r.body, "tasks.0.lease.token")) < 16 || get(r.body, "tasks.0.task.lease_token") != nil {
				t.Errorf("want the token in the lease only: %s", r.raw)
			}
		}},
	{name: "claim_with_a_number_lease_for_takes_seconds", setup: pending, method: "POST", path: "/queues/default/claim",
		body: `{"lease_for":90}`, status: 200, check: wantField("tasks.0.lease.expires_at", "2026-01-28T09:01:30Z")},
	{name: "claim_on_an_empty_queue_is_204_with_no_body", method: "POST", path: "/queues/default/claim", body: `{}`, status: 204},
	{name: "claim_with_lease_for_over_12h_is_400_invalid_lease_duration", setup: pending, method: "POST", path: "/queues/default/claim",
		body: `{"lease_for":"13h"}`, status: 400, code: "invalid_lease_duration", field: "lease_for"},
	{name: "claim_with_a_bad_queue_name_is_400_naming_queue", method: "POST", path: "/queues/default/claim", body: `{"queue":"a/b"}`, status: 400, code: "invalid_input", field: "queue"},
	{name: "claim_of_too_many_tasks_is_400_naming_max_tasks", method: "POST", path: "/queues/default/claim", body: `{"max_tasks":101}`, status: 400, code: "invalid_input", field: "max_tasks"},
	{name: "claim_with_an_unknown_field_is_400_naming_it", method: "POST", path: "/queues/default/claim", body: `{"lease":"1m"}`, status: 400, code: "invalid_input", field: "lease"},
	{name: "claim_with_a_wait_over_25s_is_400_naming_wait", method: "POST", path: "/queues/default/claim", body: `{"wait":"1m"}`, status: 400, code: "invalid_input", field: "wait"},

	// Lease operations.
	{name: "heartbeat_extends_the_lease", setup: running, method: "POST", path: "/queues/default/tasks/{id}/heartbeat",
		body: `{"lease_token":"{token}","lease_for":"10m"}`, status: 200,
		check: all(wantField("lease.expires_at", "2026-01-28T09:10:00Z"), wantField("task.status", "running"), wantField("task.lease_expires_at", "2026-01-28T09:10:00Z"))},
	{name: "heartbeat_without_a_lease_token_is_400_naming_lease_token", setup: running, method: "POST", path: "/queues/default/tasks/{id}/heartbeat",
		body: `{"lease_for":"10m"}`, status: 400, code: "invalid_input", field: "lease_token"},
	{name: "heartbeat_with_a_negative_lease_for_is_400_invalid_lease_duration", setup: running, method: "POST", path: "/queues/default/tasks/{id}/heartbeat",
		body: `{"lease_token":"{token}","lease_for":"-1s"}`, status: 400, code: "invalid_lease_duration", field: "lease_for"},
	{name: "complete_stores_the_output", setup: running, method: "POST", path: "/queues/default/tasks/{id}/complete",
		body: `{"lease_token":"{token}","output":{"ok":true}}`, status: 200,
		check: all(wantField("task.status", "completed"), wantField("task.output.ok", true), noLeaseToken)},
	{name: "complete_with_a_wrong_token_is_409_lease_mismatch", setup: running, method: "POST", path: "/queues/default/tasks/{id}/complete",
		body: `{"lease_token":"0123"}`, status: 409, code: "lease_mismatch"},
	{name: "complete_of_a_pending_task_is_409_not_running", setup: pending, method: "POST", path: "/queues/default/tasks/{id}/complete",
		body: `{"lease_token":"0123"}`, status: 409, code: "not_running"},
	{name: "complete_after_the_lease_expired_is_409_lease_expired", method: "POST", path: "/queues/default/tasks/{id}/complete",
		setup: func(e *env) (string, string) {
			id, tok := e.running()
			e.clock.Advance(time.Minute)
			return id, tok
		},
		body: `{"lease_token":"{token}"}`, status: 409, code: "lease_expired"},
	{name: "complete_with_output_over_256KiB_is_413_naming_output", setup: running, method: "POST", path: "/queues/default/tasks/{id}/complete",
		body: `{"lease_token":"{token}","output":"` + strings.Repeat("x", 256<<10) + `"}`, status: 413, code: "too_large", field: "output"},
	{name: "fail_that_is_not_retryable_dead_letters_the_task", setup: running, method: "POST", path: "/queues/default/tasks/{id}/fail",
		body: `{"lease_token":"{token}","error":"boom","retryable":false}`, status: 200,
		check: all(wantField("task.status", "failed"), wantField("task.last_error", "boom"))},
	{name: "fail_that_is_retryable_puts_the_task_back_with_backoff", setup: running, method: "POST", path: "/queues/default/tasks/{id}/fail",
		body: `{"lease_token":"{token}","error":"flaky"}`, status: 200,
		check: all(wantField("task.status", "pending"), wantField("task.attempt", 1))},
	{name: "fail_with_a_string_retryable_is_400_naming_retryable", setup: running, method: "POST", path: "/queues/default/tasks/{id}/fail",
		body: `{"lease_token":"{token}","retryable":"no"}`, status: 400, code: "invalid_input", field: "retryable"},
	{name: "reschedule_puts_the_task_back_later_and_extends_its_deadline", method: "POST", path: "/queues/default/tasks/{id}/reschedule",
		setup: func(e *env) (string, string) { e.submit(`{"task_type":"t","ttl":"1h"}`); return e.claim() },
		body:  `{"lease_token":"{token}","delay":"5m","extend_expiration":"1h"}`, status: 200,
		check: all(wantField("task.status", "pending"), wantField("task.available_at", "2026-01-28T09:05:00Z"),
			wantField("task.expires_at", "2026-01-28T11:00:00Z"), wantField("task.attempt", 0))},
	{name: "reschedule_with_a_negative_delay_is_400_naming_delay", setup: running, method: "POST", path: "/queues/default/tasks/{id}/reschedule",
		body: `{"lease_token":"{token}","delay":"-5m"}`, status: 400, code: "invalid_input", field: "delay"},

	// Routing.
	{name: "an_unknown_route_is_404", method: "GET", path: "/nope", status: 404, code: "not_found"},
	{name: "a_trailing_slash_is_404", method: "GET", path: "/queues/default/tasks/", status: 404, code: "not_found"},
	{name: "an_unknown_action_is_404", setup: pending, method: "POST", path: "/queues/default/tasks/{id}/explode", status: 404, code: "not_found"},
	{name: "a_wrong_method_is_405_with_allow", method: "DELETE", path: "/queues/default/tasks", status: 405, code: "method_not_allowed",
		check: func(t *testing.T, e *env, r response, id string) {
			if got := r.header.Get("Allow"); got != "POST, GET" {
				t.Errorf("Allow = %q", got)
			}
		}},
	{name: "a_head_request_is_405_with_allow", method: "HEAD", path: "/queues/default/tasks", status: 405, code: "method_not_allowed",
		check: func(t *testing.T, e *env, r response, id string) {
			if got := r.header.Get("Allow"); got != "POST, GET" {
				t.Errorf("Allow = %q", got)
			}
		}},
	{name: "a_path_that_is_not_clean_is_404", method: "GET", path: "/queues/default/../default/tasks", status: 404, code: "not_found"},
	{name: "a_doubled_slash_is_404", method: "GET", path: "/queues//tasks", status: 404, code: "not_found"},
	{name: "the_openapi_document_is_served", method: "GET", path: "/openapi.json", status: 200, check: wantField("openapi", "3.1.0")},
	{name: "the_openapi_document_takes_no_query_parameter", method: "GET", path: "/openapi.json?x=1", status: 400, code: "invalid_input", field: "x"},
	{name: "get_of_the_batch_path_is_400_naming_id", method: "GET", path: "/queues/default/tasks/batch", status: 400, code: "invalid_input", field: "id"},
}

func TestRoutes(t *testing.T) { runCases(t, routeCases) }

// runCases runs route cases on every backend, each on a fresh store with
// an API made with opts.
func runCases(t *testing.T, cases []routeCase, opts ...func(*api.Options)) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					var o api.Options
					for _, fn := range opts {
						fn(&o)
					}
					e := newEnv(t, b.new(t), o)
					id, tok := "", ""
					if c.setup != nil {
						id, tok = c.setup(e)
					}
					path := strings.ReplaceAll(c.path, "{id}", id)
					body := strings.ReplaceAll(c.body, "{token}", tok)
					before := keys(t, e.store)
					r := e.do(c.method, path, body)
					if r.status != c.status {
						t.Fatalf("%s %s: status %d, want %d: %s", c.method, path, r.status, c.status, clipBytes(r.raw))
					}
					if c.code != "" {
						if got := str(r.body, "error.code"); got != c.code {
							t.Errorf("error.code = %q, want %q: %s", got, c.code, clipBytes(r.raw))
						}
						if got := str(r.body, "error.field"); got != c.field {
							t.Errorf("error.field = %q, want %q: %s", got, c.field, clipBytes(r.raw))
						}
						if str(r.body, "error.message") == "" {
							t.Errorf("no error.message: %s", r.raw)
						}
					}
					if r.status == http.StatusNoContent && len(r.raw) != 0 {
						t.Errorf("204 with a body: %s", r.raw)
					}
					if r.status >= 400 && r.status < 500 {
						if after := keys(t, e.store); !maps.Equal(before, after) {
							t.Errorf("a %d wrote to the store:\nbefore %v\nafter  %v", r.status, before, after)
						}
					}
					if c.check != nil {
						c.check(t, e, r, id)
					}
				})
			}
		})
	}
}

func clipBytes(b []byte) string {
	if len(b) > 400 {
		return string(b[:400]) + "..."
	}
	return string(b)
}
