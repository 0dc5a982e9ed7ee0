package api_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/api"
)

// TestErrorMessagesAreOneSentenceNamingTheThingOnce surveys the 4xx a
// client meets for the common mistakes: each message is one clear
// sentence (no chain of wrapped errors, no package prefixes such as
// "queue: ", at most one colon, no trailing period) that names the thing
// at fault (an id, a queue, a value) exactly once. The codes are the
// contract and stay as they are.
func TestErrorMessagesAreOneSentenceNamingTheThingOnce(t *testing.T) {
	e := newEnvEveryRoute(t)

	// A pending task, a running one whose lease then expires, a cancelled
	// one, and a schedule.
	pending := e.submit(`{"task_type":"t","id":"` + unknownID + `"}`)
	running, token := e.claim()
	e.clock.Advance(10 * time.Minute) // past the one-minute lease
	cancelled := e.submit(`{"task_type":"t"}`)
	if r := e.do("POST", "/queues/default/tasks/"+cancelled+"/cancel", ""); r.status != http.StatusOK {
		t.Fatalf("cancel: %d %s", r.status, r.raw)
	}
	if r := e.do("POST", "/queues/default/schedules", `{"id":"nightly","task_type":"t","cron":"0 3 * * *"}`); r.status != http.StatusCreated {
		t.Fatalf("schedule: %d %s", r.status, r.raw)
	}
	const missing = "01900000-0000-7000-8000-0000000000ff"

	for _, c := range []struct {
		name               string
		method, path, body string
		status             int
		code, field        string
		names              []string // each exactly once in the message
		says               string   // and this
	}{
		{"unknown_task", "GET", "/queues/default/tasks/" + missing, "", 404, api.CodeNotFound, "", []string{missing, "default"}, "not found"},
		{"unknown_task_under_another_queue", "POST", "/queues/other/tasks/" + pending + "/cancel", "", 404, api.CodeNotFound, "", []string{pending, "other"}, "not found"},
		{"unknown_task_lease_operation", "POST", "/queues/default/tasks/" + missing + "/complete", `{"lease_token":"x"}`, 404, api.CodeNotFound, "", []string{missing}, "not found"},
		{"unknown_queue", "GET", "/queues/nope", "", 404, api.CodeQueueNotFound, "queue", []string{"nope"}, "not declared"},
		{"unknown_queue_delete", "DELETE", "/queues/nope", "", 404, api.CodeQueueNotFound, "queue", []string{"nope"}, "not declared"},
		{"unknown_schedule", "GET", "/queues/default/schedules/weekly", "", 404, api.CodeNotFound, "", []string{"weekly", "default"}, "not found"},
		{"bad_queue_name", "GET", "/queues/a.b", "", 400, api.CodeInvalidInput, "queue", []string{`"a.b"`}, "not a queue name"},
		{"bad_task_id", "GET", "/queues/default/tasks/not-an-id", "", 400, api.CodeInvalidInput, "id", []string{`"not-an-id"`}, "not a task id"},
		{"bad_task_id_in_a_submit", "POST", "/queues/default/tasks", `{"task_type":"t","id":"nope"}`, 400, api.CodeInvalidInput, "id", []string{`"nope"`}, "not a task id"},
		{"bad_duration", "POST", "/queues/default/tasks", `{"task_type":"t","ttl":"soon"}`, 400, api.CodeInvalidInput, "ttl", []string{"ttl", `"soon"`}, "must be a duration"},
		{"negative_duration", "POST", "/queues/default/tasks", `{"task_type":"t","timeout":"-1m"}`, 400, api.CodeInvalidInput, "timeout", []string{"timeout"}, "must"},
		{"duration_of_the_wrong_type", "POST", "/queues/default/tasks", `{"task_type":"t","delay":true}`, 400, api.CodeInvalidInput, "delay", []string{"delay"}, "not a boolean"},
		{"bad_lease_duration", "POST", "/queues/default/claim", `{"lease_for":"13h"}`, 400, api.CodeInvalidLeaseDuration, "lease_for", []string{"lease_for"}, "at most 12h"},
		{"bad_time", "POST", "/queues/default/tasks", `{"task_type":"t","schedule_at":"tomorrow"}`, 400, api.CodeInvalidInput, "schedule_at", []string{"schedule_at", `"tomorrow"`}, "RFC 3339"},
		{"wrong_type", "POST", "/queues/default/tasks", `{"task_type":3}`, 400, api.CodeInvalidInput, "task_type", []string{"task_type"}, "must be a string, not 3"},
		{"missing_field", "POST", "/queues/default/tasks", `{}`, 400, api.CodeInvalidInput, "task_type", []string{"task_type"}, "required"},
		{"unknown_field", "POST", "/queues/default/tasks", `{"task_type":"t","tll":"1h"}`, 400, api.CodeInvalidInput, "tll", []string{`"tll"`}, "unknown field"},
		{"bad_status_filter", "GET", "/queues/default/tasks?status=done", "", 400, api.CodeInvalidInput, "status", []string{"status", `"done"`}, "not one of"},
		{"bad_cron", "POST", "/queues/default/schedules", `{"id":"s2","task_type":"t","cron":"every day"}`, 400, api.CodeInvalidInput, "cron", []string{`"every day"`}, "not a cron expression"},
		{"body_not_an_object", "POST", "/queues/default/tasks", `[]`, 400, api.CodeInvalidInput, "body", []string{"body"}, "not an array"},
		{"body_too_large", "POST", "/queues/default/tasks", `{"task_type":"t","input":"` + strings.Repeat("x", api.DefaultMaxBodyBytes) + `"}`, 413, api.CodeTooLarge, "body", []string{"body"}, "over the limit"},
		{"input_too_large", "POST", "/queues/default/tasks", `{"task_type":"t","input":"` + strings.Repeat("x", 300<<10) + `"}`, 413, api.CodeTooLarge, "input", []string{"input"}, "artifact"},
		{"id_taken_by_another_request", "POST", "/queues/default/tasks", `{"task_type":"u","id":"` + pending + `"}`, 409, api.CodeConflict, "id", []string{pending}, "different request"},
		{"schedule_exists", "POST", "/queues/default/schedules", `{"id":"nightly","task_type":"t","cron":"0 4 * * *"}`, 409, api.CodeAlreadyExists, "id", []string{"nightly"}, "already exists"},
		{"lease_operation_on_a_pending_task", "POST", "/queues/default/tasks/" + cancelled + "/heartbeat", `{"lease_token":"x"}`, 409, api.CodeNotRunning, "", []string{cancelled}, "not running"},
		{"wrong_lease_token", "POST", "/queues/default/tasks/" + running + "/complete", `{"lease_token":"x"}`, 409, api.CodeLeaseMismatch, "", []string{running}, "not the current lease"},
		{"lease_expired", "POST", "/queues/default/tasks/" + running + "/complete", `{"lease_token":"` + token + `"}`, 409, api.CodeLeaseExpired, "", []string{running}, "expired at"},
		{"operation_the_status_does_not_allow", "POST", "/queues/default/tasks/" + cancelled + "/expire", "", 409, api.CodeInvalidState, "", []string{cancelled}, "status cancelled"},
		{"delete_a_queue_with_live_tasks", "DELETE", "/queues/default", "", 409, api.CodeQueueNotEmpty, "", []string{"default"}, "live tasks"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := e.do(c.method, c.path, c.body)
			if r.status != c.status || str(r.body, "error.code") != c.code || str(r.body, "error.field") != c.field {
				t.Fatalf("%d %s, want %d %s on %q", r.status, clipBytes(r.raw), c.status, c.code, c.field)
			}
			checkSentence(t, str(r.body, "error.message"), c.says, c.names...)
		})
	}
}

// sentinelPrefix is how a wrapped Go error chain shows in a message:
// "task X: queue: task not found".
var sentinelPrefix = regexp.MustCompile(`\b(queue|schedule|artifacts|store|api|json): `)

// checkSentence fails t unless msg is one sentence that says says and
// names each of names exactly once.
func checkSentence(t *testing.T, msg, says string, names ...string) {
	t.Helper()
	switch {
	case msg == "":
		t.Fatal("no message")
	case !strings.Contains(msg, says):
		t.Errorf("message %q does not say %q", msg, says)
	case sentinelPrefix.MatchString(msg):
		t.Errorf("message %q shows a wrapped error chain", msg)
	case strings.Count(msg, ": ") > 1:
		t.Errorf("message %q is a chain of %d parts, not one sentence", msg, strings.Count(msg, ": ")+1)
	case strings.HasSuffix(msg, ".") || strings.Contains(msg, ". ") || strings.ContainsAny(msg, "\n\t"):
		t.Errorf("message %q is not one sentence without a period", msg)
	}
	for _, n := range names {
		if got := strings.Count(msg, n); got != 1 {
			t.Errorf("message %q names %q %d times, want once", msg, n, got)
		}
	}
}
