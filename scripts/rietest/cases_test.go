//go:build rie

package rietest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/s3q/s3q/shared/lambdafn"
	"github.com/s3q/s3q/shared/metrics/catalog"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/schedule"
	"github.com/s3q/s3q/shared/store/s3store"
)

// functionOf returns the function a sample event is for, by its file name
// (events/README.md): submit-wait and claim-wait → waits, submit* →
// submit, claim* → claim, tasks-*, queues-* and openapi → tasks,
// schedules-* → schedules, the rest by name.
func functionOf(file string) string {
	base := strings.TrimSuffix(file, ".json")
	switch {
	case base == "submit-wait", base == "claim-wait":
		return lambdafn.Waits
	case strings.HasPrefix(base, "submit"):
		return lambdafn.Submit
	case strings.HasPrefix(base, "claim"):
		return lambdafn.Claim
	case strings.HasPrefix(base, "tasks-"), strings.HasPrefix(base, "queues-"), base == "openapi":
		return lambdafn.Tasks
	case strings.HasPrefix(base, "schedules-"):
		return lambdafn.Schedules
	case base == lambdafn.SweepExpired, base == lambdafn.ScheduleTick, strings.HasPrefix(base, lambdafn.Dispatch):
		if strings.HasPrefix(base, lambdafn.Dispatch) {
			return lambdafn.Dispatch
		}
		return base
	}
	return ""
}

// eventCase is one sample event invoked on its function's zip.
type eventCase struct {
	file string
	// setup makes the state the event needs through the functions
	// themselves and returns the task id and lease token its placeholders
	// take.
	setup func(t *testing.T, w *world) (id, token string)
	// status is the HTTP status of an API event's answer; 0 for a timer's
	// report.
	status int
	// want are dotted paths into the answer's JSON body (a timer's report)
	// and what they must be: a value, nil (absent), or a check.
	want map[string]any
	// after checks more, with the decoded body and the task id.
	after func(t *testing.T, w *world, id string, body map[string]any)
}

// atLeast is a want: a number ≥ it.
type atLeast float64

// present is a want: any value but null.
type present struct{}

func none(*testing.T, *world) (string, string) { return "", "" }

// The cases, in the order they run (each function keeps its process, so
// after its first event it is warm), over one bucket: a case's state is
// made by its setup or left by the cases before it.
var amd64Cases = []eventCase{
	{"submit.json", none, 201, map[string]any{"task.status": "pending", "task.task_type": "email.send", "task.queue": "default"}, nil},
	// claim-wait first: the waits function's cold start is then not a wait.
	{"claim-wait.json", pendingOf("email.send"), 200, map[string]any{"tasks.0.task.status": "running", "tasks.0.task.worker_id": "worker-1"}, nil},
	{"submit-wait.json", none, 202, map[string]any{"task.status": "pending"}, nil},
	{"submit-batch.json", none, 200, map[string]any{"results.0.task.status": "pending", "results.2.task.queue": "default", "results.1.deduplicated": false}, nil},
	{"claim.json", pendingOf("email.send"), 200, map[string]any{"tasks.0.task.status": "running", "tasks.0.task.worker_id": "worker-1", "tasks.0.lease.token": present{}}, nil},
	{"openapi.json", none, 200, map[string]any{"openapi": "3.1.0", "info.title": "s3q"}, nil},
	{"tasks-get.json", pending, 200, map[string]any{"task.status": "pending", "task.id": "{{task_id}}"}, nil},
	{"tasks-list.json", pending, 200, map[string]any{"tasks.0.status": "pending"}, nil},
	{"tasks-list-queue.json", pending, 200, map[string]any{"tasks.0.status": "pending", "tasks.0.queue": "default"}, nil},
	{"queues-put.json", none, 201, map[string]any{"queue.name": "reports", "queue.max_concurrency": float64(4), "queue.ttl": "2h"}, nil},
	{"queues-get.json", pending, 200, map[string]any{"queue.name": "default", "queue.counts.live": atLeast(1)}, nil},
	{"queues-list.json", none, 200, map[string]any{"queues.0.name": "default"}, nil},
	{"queues-delete.json", none, 204, nil, nil}, // reports, declared by queues-put and empty
	{"queues-stats.json", pending, 200, map[string]any{"stats.queue": "default", "stats.counts.live": atLeast(1), "stats.oldest_pending_age_seconds": atLeast(0)}, nil},
	{"queues-pause.json", none, 200, map[string]any{"queue.name": "default", "queue.paused": true}, nil},
	{"queues-resume.json", none, 200, map[string]any{"queue.name": "default", "queue.paused": nil}, nil},
	{"queues-bulk-retry.json", cancelled, 200, map[string]any{"op": "retry", "changed": atLeast(1)}, nil},
	{"queues-bulk-cancel.json", pendingOf("email.send"), 200, map[string]any{"op": "cancel", "changed": atLeast(1)}, nil},
	{"queues-bulk-expire.json", pending, 200, map[string]any{"op": "expire", "changed": atLeast(1)}, nil},
	{"queues-purge.json", pending, 200, map[string]any{"op": "purge", "changed": atLeast(1)}, nil},
	{"tasks-history.json", running, 200, map[string]any{"versions.0.task.status": "running", "versions.1.task.status": "pending"}, nil}, // newest first
	{"tasks-cancel.json", pending, 200, map[string]any{"task.status": "cancelled"}, nil},
	{"tasks-cancel-ack.json", running, 200, map[string]any{"task.status": "cancelled"}, nil},
	{"tasks-retry.json", cancelled, 200, map[string]any{"task.status": "pending"}, nil},
	{"tasks-expire.json", pending, 200, map[string]any{"task.status": "expired", "task.expiry_reason": "manual"}, nil},
	{"tasks-heartbeat.json", running, 200, map[string]any{"task.status": "running"}, nil},
	{"tasks-complete.json", running, 200, map[string]any{"task.status": "completed", "task.output.message_id": "0100018d-example"}, nil},
	{"tasks-fail.json", running, 200, map[string]any{"task.status": "pending", "task.last_error": "SMTP 451: try again later"}, nil},
	{"tasks-reschedule.json", running, 200, map[string]any{"task.status": "pending", "task.attempt": float64(0)}, nil},
	{"tasks-artifact-put.json", pending, 201, map[string]any{"artifact.name": "report.pdf", "artifact.upload_url": present{}, "artifact.download_url": nil}, uploadArtifact},
	{"tasks-artifact-get.json", artifactTask, 200, map[string]any{"artifact.name": "report.pdf", "artifact.upload_url": nil}, downloadArtifact},
	{"schedules-create.json", none, 201, map[string]any{"schedule.id": "hourly-cleanup", "schedule.timezone": "Europe/Berlin", "schedule.enabled": true}, nil},
	{"schedules-list.json", nightlySchedule, 200, map[string]any{"schedules.*.id": "nightly-report"}, nil},
	{"schedules-get.json", none, 200, map[string]any{"schedule.id": "nightly-report", "schedule.cron": "0 2 * * *"}, nil},
	{"schedules-update.json", none, 200, map[string]any{"schedule.cron": "30 2 * * 1-5", "schedule.missed_runs": "catch_up"}, nil},
	{"schedules-pause.json", none, 200, map[string]any{"schedule.enabled": false, "schedule.next_run_at": nil}, nil},
	{"schedules-resume.json", none, 200, map[string]any{"schedule.enabled": true}, nil},
	{"schedules-trigger.json", none, 200, map[string]any{"fire.schedule_id": "nightly-report", "fire.trigger": true}, nil},
	{"schedules-history.json", none, 200, map[string]any{"fires.0.schedule_id": "nightly-report"}, nil},
	{"schedules-delete.json", none, 204, nil, nil},
	{"sweep-expired.json", expiredTask, 0, map[string]any{"function": "sweep-expired", "wired": true, "result.expired": atLeast(1), "result.events_sent": atLeast(1), "s3_requests": atLeast(1)}, sweptAndPublished},
	{"schedule-tick.json", dueSchedule, 0, map[string]any{"function": "schedule-tick", "wired": true, "result.fired": atLeast(1), "result.errors": float64(0)}, nil},
	{"dispatch.json", pushTask, 0, map[string]any{"function": "dispatch", "wired": true, "result.delivered": atLeast(1), "result.completed": atLeast(1)}, delivered},
	{"dispatch-wake.json", pushTask, 0, map[string]any{"function": "dispatch", "wired": true, "result.delivered": float64(1), "result.completed": float64(1)}, delivered},
}

// TestEveryEventIsInvoked: every file of events/ has a case here, so a new
// event (or route) is run under the emulator too.
func TestEveryEventIsInvoked(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(eventsDir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no events: %v", err)
	}
	cased := map[string]bool{}
	for _, c := range amd64Cases {
		cased[c.file] = true
		if functionOf(c.file) == "" {
			t.Errorf("events/%s: no function known for the name", c.file)
		}
	}
	for _, f := range files {
		if !cased[filepath.Base(f)] {
			t.Errorf("events/%s is not invoked under the emulator: add a case to amd64Cases", filepath.Base(f))
		}
	}
}

// TestTheTemplateDescribesTheZips: every function of the code is in the
// template, as the zips are built: provided.al2023, handler bootstrap,
// arm64.
func TestTheTemplateDescribesTheZips(t *testing.T) {
	specs, err := readTemplate(setup.template, "s3q-dev-", refs{bucket: "b"})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range lambdafn.Names() {
		s, ok := specs[name]
		if !ok {
			t.Errorf("no s3q-dev-%s in the template", name)
			continue
		}
		if s.Runtime != "provided.al2023" || s.Handler != "bootstrap" || s.Architecture != "arm64" {
			t.Errorf("%s: runtime %q handler %q architecture %q, want provided.al2023, bootstrap, arm64 (what build-functions builds)", name, s.Runtime, s.Handler, s.Architecture)
		}
		if s.Env["S3Q_BUCKET"] != "b" {
			t.Errorf("%s: S3Q_BUCKET = %q, want the bucket's Ref", name, s.Env["S3Q_BUCKET"])
		}
	}
	if len(specs) != len(lambdafn.Names()) {
		t.Errorf("the template has %d functions, the code %d", len(specs), len(lambdafn.Names()))
	}
}

// TestAMD64EveryEvent invokes every sample event on the amd64 build of each
// function, then the bad cases.
func TestAMD64EveryEvent(t *testing.T) {
	w := newWorld(t, "amd64")
	w.declare(t, "default", nil)
	for _, c := range amd64Cases {
		c := c
		t.Run(strings.TrimSuffix(c.file, ".json"), func(t *testing.T) {
			w.runCase(t, c)
		})
	}
	t.Run("malformed_events", func(t *testing.T) { malformed(t, w) })
	t.Run("wait_above_S3Q_MAX_WAIT_is_400", func(t *testing.T) { waitAboveMax(t, w) })
	t.Run("missing_setting_is_a_clear_init_error", func(t *testing.T) { missingSetting(t, w) })
	t.Run("a_target_the_template_does_not_bind_is_refused", func(t *testing.T) { unboundTarget(t, w) })
	t.Run("long_poll_answers_before_the_time_out", func(t *testing.T) { timeOut(t, w) })
	t.Run("sweep_short_of_time_stops_and_says_incomplete", func(t *testing.T) { sweepOutOfTime(t, w) })
	_, _, other := setup.aws.snapshot()
	if len(other) > 0 {
		t.Errorf("the functions called AWS APIs the test does not serve: %v", other)
	}
	seen := checkLogs(t, w)
	for _, want := range []string{catalog.TasksSubmittedTotal, catalog.TasksCompletedTotal, catalog.TasksFailedTotal,
		catalog.S3RequestsTotal, catalog.SweepIncomplete, catalog.TasksExpiredTotal, catalog.TaskTTLSeconds, catalog.PushDeliveriesTotal} {
		if !seen[want] {
			t.Errorf("no function wrote %s", want)
		}
	}
}

// TestARM64Smoke invokes one event per function, twice (cold, then warm),
// on the arm64 zips that a deploy ships, under qemu on an x86 host.
func TestARM64Smoke(t *testing.T) {
	w := newWorld(t, "arm64")
	w.declare(t, "default", nil)
	for _, c := range []struct {
		file           string
		first, second  int
		want, thenWant map[string]any
	}{
		{"submit.json", 201, 200, map[string]any{"task.status": "pending"}, map[string]any{"task.status": "pending", "deduplicated": true}},
		{"claim.json", 200, 204, map[string]any{"tasks.0.task.status": "running"}, nil},
		{"claim-wait.json", 204, 204, nil, nil}, // a 1s long-poll on an empty queue, twice
		{"queues-get.json", 200, 200, map[string]any{"queue.name": "default"}, map[string]any{"queue.name": "default"}},
		{"schedules-list.json", 200, 200, map[string]any{"schedules": present{}}, map[string]any{"schedules": present{}}},
		{"sweep-expired.json", 0, 0, map[string]any{"wired": true, "result.expired": float64(0)}, map[string]any{"wired": true}},
		{"schedule-tick.json", 0, 0, map[string]any{"wired": true, "result.errors": float64(0)}, map[string]any{"wired": true}},
		{"dispatch.json", 0, 0, map[string]any{"wired": true, "result.errors": float64(0)}, map[string]any{"wired": true}},
	} {
		t.Run(strings.TrimSuffix(c.file, ".json"), func(t *testing.T) {
			w.runCase(t, eventCase{file: c.file, setup: none, status: c.first, want: c.want})
			w.runCase(t, eventCase{file: c.file, setup: none, status: c.second, want: c.thenWant})
		})
	}
	checkLogs(t, w)
}

// runCase sets up, invokes and checks one event.
func (w *world) runCase(t *testing.T, c eventCase) {
	t.Helper()
	fn := functionOf(c.file)
	id, token := c.setup(t, w)
	payload := readEvent(t, c.file, id, token)
	inv := w.fns[fn].invoke(t, c.file, payload)
	if inv.status != http.StatusOK {
		t.Fatalf("%s: the emulator answered %d: %s", fn, inv.status, inv.body)
	}
	if !inv.report.found {
		t.Errorf("%s: no REPORT line for %s", fn, inv.requestID)
	}
	var body map[string]any
	if c.status == 0 { // a timer's report
		if err := json.Unmarshal(inv.body, &body); err != nil || body["errorType"] != nil {
			t.Fatalf("%s answered %s (%v)", fn, inv.body, err)
		}
	} else {
		resp, b := decodeAPI(t, fn, inv.body)
		body = b
		if resp.StatusCode != c.status {
			t.Fatalf("%s: status %d, want %d: %s", c.file, resp.StatusCode, c.status, resp.Body)
		}
		if ct := resp.Headers["Content-Type"]; c.status != 204 && ct != "application/json" {
			t.Errorf("Content-Type = %q", ct)
		}
	}
	for path, want := range c.want {
		if s, ok := want.(string); ok && s == "{{task_id}}" {
			want = id
		}
		if err := match(body, path, want); err != nil {
			t.Errorf("%s: %s: %v", c.file, path, err)
		}
	}
	if c.after != nil {
		c.after(t, w, id, body)
	}
}

// decodeAPI decodes an HTTP function's answer (API Gateway's response
// object) and its JSON body.
func decodeAPI(t *testing.T, fn string, out []byte) (events.APIGatewayV2HTTPResponse, map[string]any) {
	t.Helper()
	var resp events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(out, &resp); err != nil || resp.StatusCode == 0 {
		t.Fatalf("%s answered %s: %v", fn, out, err)
	}
	var body map[string]any
	if resp.Body != "" {
		if err := json.Unmarshal([]byte(resp.Body), &body); err != nil {
			t.Fatalf("%s: body is not JSON: %s", fn, resp.Body)
		}
	}
	return resp, body
}

// match checks the value at a dotted path ("tasks.0.task.id"; "*" is any
// element of a list) against want.
func match(v any, path string, want any) error {
	head, rest, more := strings.Cut(path, ".")
	if head == "*" {
		list, _ := v.([]any)
		for _, e := range list {
			if !more || match(e, rest, want) == nil {
				return nil
			}
		}
		return fmt.Errorf("no element has %s = %v", rest, want)
	}
	var next any
	switch x := v.(type) {
	case map[string]any:
		next = x[head]
	case []any:
		if i, err := strconv.Atoi(head); err == nil && i < len(x) {
			next = x[i]
		}
	}
	if more {
		return match(next, rest, want)
	}
	switch wv := want.(type) {
	case present:
		if next == nil {
			return fmt.Errorf("missing")
		}
	case atLeast:
		n, ok := next.(float64)
		if !ok || n < float64(wv) {
			return fmt.Errorf("%v, want at least %v", next, float64(wv))
		}
	default:
		if fmt.Sprint(next) != fmt.Sprint(want) || (next == nil) != (want == nil) {
			return fmt.Errorf("%v, want %v", next, want)
		}
	}
	return nil
}

// --- requests the fixtures make, through the functions ---

// apiEvent is the API Gateway HTTP API event (payload format 2.0) of a
// request, as API Gateway sends it (routeKey $default: the functions match
// the route themselves).
func apiEvent(method, path string, body any) []byte {
	raw := ""
	if body != nil {
		b, _ := json.Marshal(body)
		raw = string(b)
	}
	ev := map[string]any{
		"version": "2.0", "routeKey": "$default", "rawPath": path, "rawQueryString": "",
		"headers": map[string]string{"content-type": "application/json", "accept": "application/json"},
		"requestContext": map[string]any{
			"accountId": "123456789012", "apiId": "rietest", "domainName": "rietest.execute-api.localhost",
			"requestId": newID(), "stage": "$default", "routeKey": "$default",
			"http": map[string]any{"method": method, "path": path, "protocol": "HTTP/1.1", "sourceIP": "127.0.0.1", "userAgent": "rietest"},
		},
		"body": raw, "isBase64Encoded": false,
	}
	b, _ := json.Marshal(ev)
	return b
}

// call sends a request to an HTTP function and returns its status and
// body; a status other than want fails t.
func (w *world) call(t *testing.T, fn, method, path string, body any, want int) map[string]any {
	t.Helper()
	label := method + " " + path
	if m, ok := body.(map[string]any); ok && m["wait"] != nil && want < 300 {
		label += " (long-poll)" // left out of the warm timings
	}
	inv := w.fns[fn].invoke(t, label, apiEvent(method, path, body))
	if inv.status != http.StatusOK {
		t.Fatalf("%s %s %s: the emulator answered %d: %s", fn, method, path, inv.status, inv.body)
	}
	resp, b := decodeAPI(t, fn, inv.body)
	if resp.StatusCode != want {
		t.Fatalf("%s %s %s: %d, want %d: %s", fn, method, path, resp.StatusCode, want, resp.Body)
	}
	return b
}

// declare puts a queue's declaration through the tasks function.
func (w *world) declare(t *testing.T, name string, body map[string]any) {
	t.Helper()
	if body == nil {
		body = map[string]any{}
	}
	inv := w.fns[lambdafn.Tasks].invoke(t, "PUT /queues/"+name, apiEvent("PUT", "/queues/"+name, body))
	resp, _ := decodeAPI(t, lambdafn.Tasks, inv.body)
	if resp.StatusCode != 201 && resp.StatusCode != 200 {
		t.Fatalf("declare %s: %d %s", name, resp.StatusCode, resp.Body)
	}
}

// submit makes a task through the submit function.
func (w *world) submit(t *testing.T, queueName string, req map[string]any) string {
	t.Helper()
	b := w.call(t, lambdafn.Submit, "POST", "/queues/"+queueName+"/tasks", req, 201)
	id, _ := b["task"].(map[string]any)["id"].(string)
	if id == "" {
		t.Fatalf("submit answered no task id: %v", b)
	}
	return id
}

func (w *world) taskType() string {
	w.seq++
	return "rie.t" + strconv.Itoa(w.seq)
}

func pending(t *testing.T, w *world) (string, string) {
	return w.submit(t, "default", map[string]any{"task_type": w.taskType(), "ttl": "1h"}), ""
}

func pendingOf(taskType string) func(*testing.T, *world) (string, string) {
	return func(t *testing.T, w *world) (string, string) {
		return w.submit(t, "default", map[string]any{"task_type": taskType, "ttl": "1h"}), ""
	}
}

// running is a task claimed through the waits function's long-poll (a
// task submitted through another process shows in a claim's listing
// within a second), of its own task type, so no other pending task is
// claimed instead.
func running(t *testing.T, w *world) (string, string) {
	t.Helper()
	tt := w.taskType()
	id := w.submit(t, "default", map[string]any{"task_type": tt, "ttl": "1h"})
	b := w.call(t, lambdafn.Waits, "POST", "/queues/default/claim/wait", map[string]any{"task_types": []string{tt}, "lease_for": "5m", "worker_id": "rie", "wait": "5s"}, 200)
	tasks, _ := b["tasks"].([]any)
	if len(tasks) != 1 {
		t.Fatalf("claim: %v", b)
	}
	c := tasks[0].(map[string]any)
	if got := c["task"].(map[string]any)["id"]; got != id {
		t.Fatalf("claimed %v, want %s", got, id)
	}
	return id, c["lease"].(map[string]any)["token"].(string)
}

func cancelled(t *testing.T, w *world) (string, string) {
	t.Helper()
	id, _ := pending(t, w)
	w.call(t, lambdafn.Tasks, "POST", "/queues/default/tasks/"+id+"/cancel", map[string]any{}, 200)
	return id, ""
}

// nightlySchedule is the schedule the schedule events name.
func nightlySchedule(t *testing.T, w *world) (string, string) {
	t.Helper()
	w.call(t, lambdafn.Schedules, "POST", "/queues/default/schedules", map[string]any{
		"id": "nightly-report", "task_type": "report.build", "cron": "0 2 * * *", "timezone": "Europe/Berlin", "ttl": "1h",
	}, 201)
	return "", ""
}

// artifactTask is the task tasks-artifact-put uploaded report.pdf to.
func artifactTask(t *testing.T, w *world) (string, string) {
	if w.artifactTask == "" {
		t.Fatal("tasks-artifact-put left no task with an artifact")
	}
	return w.artifactTask, ""
}

// artifactBody is what the test uploads: the 12 bytes tasks-artifact-put
// asks a URL for.
var artifactBody = []byte("%PDF-1.7 rie")

// uploadArtifact PUTs the artifact to the presigned URL the tasks function
// signed (with the function's credentials, for versitygw's endpoint).
func uploadArtifact(t *testing.T, w *world, id string, body map[string]any) {
	t.Helper()
	a, _ := body["artifact"].(map[string]any)
	u, _ := a["upload_url"].(string)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPut, u, bytes.NewReader(artifactBody))
	if err != nil {
		t.Fatal(err)
	}
	if h, ok := a["headers"].(map[string]any); ok {
		for k, v := range h {
			req.Header.Set(k, fmt.Sprint(v))
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT to the upload URL: %d %s", resp.StatusCode, b)
	}
	w.artifactTask = id
}

func downloadArtifact(t *testing.T, w *world, id string, body map[string]any) {
	t.Helper()
	a, _ := body["artifact"].(map[string]any)
	u, _ := a["download_url"].(string)
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.Equal(b, artifactBody) {
		t.Fatalf("GET the download URL: %d %q, want 200 %q", resp.StatusCode, b, artifactBody)
	}
}

// expiredTask is a task whose one-minute ttl ran out an hour ago: made in
// the bucket at that time (the API submits only now), as another process
// would have.
func expiredTask(t *testing.T, w *world) (string, string) {
	t.Helper()
	ttl := queue.Duration(time.Minute)
	res, err := w.library().In("default").Submit(t.Context(), queue.SubmitRequest{TaskType: "rie.expiring", TTL: &ttl}, time.Now().Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	return res.Task.ID, ""
}

// library is the queue over the world's bucket, for the state the API
// cannot make (the past).
func (w *world) library() *queue.Queue {
	env := w.specs[lambdafn.SweepExpired].Env
	shards, _ := strconv.Atoi(env["S3Q_SHARDS"])
	return queues.NewQueue(s3store.New(setup.vgw.Client(), w.bucket, env["S3Q_PREFIX"]), queues.Options{Shards: shards})
}

// sweptAndPublished: the task expired, and its Task Expired event went to
// the stack's bus (the fake EventBridge).
func sweptAndPublished(t *testing.T, w *world, id string, _ map[string]any) {
	t.Helper()
	b := w.call(t, lambdafn.Tasks, "GET", "/queues/default/tasks/"+id, nil, 200)
	if err := match(b, "task.status", "expired"); err != nil {
		t.Errorf("the swept task: %v", err)
	}
	bus := w.specs[lambdafn.SweepExpired].Env["S3Q_EVENT_BUS"]
	entries, _, _ := setup.aws.snapshot()
	for _, e := range entries {
		if e.DetailType == "Task Expired" && e.EventBusName == bus && strings.Contains(e.Detail, id) {
			return
		}
	}
	t.Errorf("no Task Expired event for %s on bus %q; PutEvents got %v", id, bus, entries)
}

// dueSchedule is a schedule due now: made ten minutes ago in the bucket
// (the API can only make schedules from now on).
func dueSchedule(t *testing.T, w *world) (string, string) {
	t.Helper()
	q := w.library()
	ttl := queue.Duration(time.Hour)
	if _, err := schedule.New(q.Store(), q, schedule.Options{}).Create(t.Context(), schedule.Request{
		ID: "rie-every-minute", TaskType: "rie.tick", Cron: "* * * * *", TTL: &ttl,
	}, time.Now().Add(-10*time.Minute)); err != nil {
		t.Fatal(err)
	}
	return "", ""
}

// pushTarget is the Lambda function the push queue "orders" delivers to
// (the fake Lambda answers for it), bound to it by pushBindings.
const pushTarget = "s3q-rie-orders-worker"

// pushBindings is the S3Q_PUSH_BINDINGS the tasks and dispatch functions
// run with here: what `pushBindings: {"orders": {"lambda": [...]}}` sets.
const pushBindings = `{"orders":{"lambda":["` + pushTarget + `"]}}`

// pushTask is a task in the push queue "orders" (declared on first use),
// submitted through the submit function, which wakes the dispatch function
// (an asynchronous Invoke of the name the template gives it).
func pushTask(t *testing.T, w *world) (string, string) {
	t.Helper()
	if !w.ordersDeclared {
		w.declare(t, "orders", map[string]any{"target": map[string]any{"lambda": pushTarget}, "timeout": "1m"})
		w.ordersDeclared = true
	}
	id := w.submit(t, "orders", map[string]any{"task_type": "order.ship", "input": map[string]any{"order": 42}, "ttl": "1h"})
	dispatchFn := w.specs[lambdafn.Submit].Env["S3Q_DISPATCH_FUNCTION"]
	_, invokes, _ := setup.aws.snapshot()
	woken := false
	for _, in := range invokes {
		woken = woken || (in.Function == dispatchFn && in.Type == "Event")
	}
	if dispatchFn == "" || !woken {
		t.Errorf("submit to a push queue did not wake %q (asynchronous Invoke); Lambda got %v", dispatchFn, invokes)
	}
	return id, ""
}

// delivered: the task went to the target and is completed.
func delivered(t *testing.T, w *world, id string, _ map[string]any) {
	t.Helper()
	_, invokes, _ := setup.aws.snapshot()
	found := false
	for _, in := range invokes {
		found = found || (in.Function == pushTarget && in.Type == "RequestResponse" && strings.Contains(in.Payload, id))
	}
	if !found {
		t.Errorf("no delivery of %s to %s; Lambda got %v", id, pushTarget, invokes)
	}
	b := w.call(t, lambdafn.Tasks, "GET", "/queues/orders/tasks/"+id, nil, 200)
	if err := match(b, "task.status", "completed"); err != nil {
		t.Errorf("the delivered task: %v", err)
	}
}

// --- the bad cases ---

// malformed: an event the runtime cannot decode is a function error
// (errorType, errorMessage) and the process lives on; an API event that
// names no request is the function's own 400.
func malformed(t *testing.T, w *world) {
	for _, c := range []struct{ fn, payload string }{
		{lambdafn.Tasks, `{"rawPath": 7}`},
		{lambdafn.Submit, `[1,2,3]`},
		{lambdafn.SweepExpired, `{"time": "half past nine"}`},
		{lambdafn.ScheduleTick, `"not an event"`},
	} {
		inv := w.fns[c.fn].invoke(t, "malformed", []byte(c.payload))
		var fe struct{ ErrorType, ErrorMessage string }
		if err := json.Unmarshal(inv.body, &fe); err != nil || fe.ErrorType == "" || fe.ErrorMessage == "" {
			t.Errorf("%s given %s: %d %s, want a function error (errorType, errorMessage)", c.fn, c.payload, inv.status, inv.body)
		}
	}
	inv := w.fns[lambdafn.Submit].invoke(t, "no request", []byte(`{}`))
	resp, body := decodeAPI(t, lambdafn.Submit, inv.body)
	if resp.StatusCode != 400 || match(body, "error.code", "invalid_input") != nil {
		t.Errorf("submit given {}: %d %s, want 400 invalid_input", resp.StatusCode, resp.Body)
	}
	// Still the same process: warm, no second init.
	inv = w.fns[lambdafn.Tasks].invoke(t, "openapi.json", readEvent(t, "openapi.json", "", ""))
	if resp, _ := decodeAPI(t, lambdafn.Tasks, inv.body); resp.StatusCode != 200 || inv.report.first || strings.Count(w.fns[lambdafn.Tasks].out.String(), "INIT START") != 1 {
		t.Errorf("tasks after a malformed event: %d; want 200 from the same warm process (one init)", resp.StatusCode)
	}
}

// waitAboveMax: S3Q_MAX_WAIT from the template (maxWaitSeconds) bounds a
// long-poll: more is a 400 naming wait; and the plain claim route, on its
// own function, refuses any wait (waits run apart).
func waitAboveMax(t *testing.T, w *world) {
	max := w.specs[lambdafn.Waits].Env["S3Q_MAX_WAIT"]
	if max == "" {
		t.Fatal("the template gives waits no S3Q_MAX_WAIT")
	}
	body := map[string]any{"task_types": []string{"rie.none"}, "wait": "60s", "worker_id": "rie"}
	b := w.call(t, lambdafn.Waits, "POST", "/queues/default/claim/wait", body, 400)
	if err := match(b, "error.field", "wait"); err != nil || !strings.Contains(fmt.Sprint(b), strings.TrimSuffix(max, "s")) {
		t.Errorf("claim/wait with wait 60s (S3Q_MAX_WAIT %s): %v %v", max, b, err)
	}
	body["wait"] = "5s"
	b = w.call(t, lambdafn.Claim, "POST", "/queues/default/claim", body, 400)
	if err := match(b, "error.field", "wait"); err != nil {
		t.Errorf("claim with a wait: %v %v", b, err)
	}
}

// missingSetting: a function without S3Q_BUCKET fails its init with a
// message naming the setting, in its log and in the invoke's answer.
func missingSetting(t *testing.T, w *world) {
	f := w.start(t, lambdafn.Submit, map[string]string{"S3Q_BUCKET": ""})
	f.label = "missing S3Q_BUCKET"
	inv := f.invoke(t, "submit.json", readEvent(t, "submit.json", "", ""))
	if inv.status == http.StatusOK {
		t.Fatalf("submit without S3Q_BUCKET answered 200: %s", inv.body)
	}
	log := f.out.String()
	if !strings.Contains(log, "S3Q_BUCKET is required") {
		t.Errorf("the log does not name the missing setting:\n%s", log)
	}
	if !strings.Contains(log, "Runtime.ExitError") && !strings.Contains(log, "InitError") {
		t.Errorf("the emulator did not see an init failure:\n%s", log)
	}
	if !strings.Contains(string(inv.body), "S3Q_BUCKET") {
		t.Errorf("the invoke's answer (%d %q) does not name S3Q_BUCKET", inv.status, inv.body)
	}
}

// unboundTarget: with the template's own S3Q_PUSH_BINDINGS (none in dev),
// the tasks function refuses a queue declaration with a push target: 400
// naming target.
func unboundTarget(t *testing.T, w *world) {
	f := w.start(t, lambdafn.Tasks, nil)
	f.label = "template bindings"
	inv := f.invoke(t, "PUT /queues/unbound", apiEvent("PUT", "/queues/unbound", map[string]any{"target": map[string]any{"lambda": pushTarget}}))
	resp, body := decodeAPI(t, lambdafn.Tasks, inv.body)
	field, _ := dig(body, "error.field").(string)
	if resp.StatusCode != 400 || !strings.HasPrefix(field, "target") {
		t.Errorf("declaring an unbound target: %d %s, want 400 naming target", resp.StatusCode, resp.Body)
	}
}

// dig returns the value at a dotted path of a decoded JSON value.
func dig(v any, path string) any {
	for _, p := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[p]
	}
	return v
}

// timeOut: a claim long-poll longer than the function's time left answers
// 204 before Lambda's time-out, never "Task timed out" (the function's
// timeout is 3s here instead of the template's, to keep the test short).
func timeOut(t *testing.T, w *world) {
	f := w.start(t, lambdafn.Waits, map[string]string{"AWS_LAMBDA_FUNCTION_TIMEOUT": "3"})
	f.label = "timeout 3s"
	inv := f.invoke(t, "claim wait 20s", apiEvent("POST", "/queues/default/claim/wait", map[string]any{
		"task_types": []string{"rie.none"}, "wait": "20s", "worker_id": "rie", "lease_for": "1m",
	}))
	if strings.Contains(string(inv.body), "timed out") || inv.status != http.StatusOK {
		t.Fatalf("the long-poll was cut by the time-out: %d %s", inv.status, inv.body)
	}
	resp, _ := decodeAPI(t, lambdafn.Waits, inv.body)
	if resp.StatusCode != 204 {
		t.Errorf("claim with wait 20s under a 3s timeout: %d %s, want 204", resp.StatusCode, resp.Body)
	}
	if inv.report.found && inv.report.duration < time.Second {
		t.Errorf("answered after %v: it did not wait", inv.report.duration)
	}
}

// sweepOutOfTime: a sweep whose function has less time than the sweep
// keeps back (3s) stops before Lambda's time-out, answers its report with
// incomplete set, and writes SweepIncomplete 1 (the alarm's metric); the
// next sweep does the work.
func sweepOutOfTime(t *testing.T, w *world) {
	f := w.start(t, lambdafn.SweepExpired, map[string]string{"AWS_LAMBDA_FUNCTION_TIMEOUT": "2"})
	f.label = "timeout 2s"
	expiredTask(t, w)
	inv := f.invoke(t, "sweep-expired.json", readEvent(t, "sweep-expired.json", "", ""))
	var rep map[string]any
	if err := json.Unmarshal(inv.body, &rep); err != nil || inv.status != http.StatusOK {
		t.Fatalf("%d %s (%v)", inv.status, inv.body, err)
	}
	if err := match(rep, "result.incomplete", true); err != nil {
		t.Errorf("the report: %v: %s", err, inv.body)
	}
	found := false
	for _, l := range f.logLines() {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m[catalog.SweepIncomplete] == float64(1) {
			found = true
		}
	}
	if !found {
		t.Errorf("no %s 1 in the log:\n%s", catalog.SweepIncomplete, strings.Join(f.logLines(), "\n"))
	}
}

// checkLogs: every line a function wrote is JSON (one object per line, as
// CloudWatch Logs Insights reads them), no invocation logged a panic, and
// every embedded metric is in the metrics catalog, by its dimensions, in
// the namespace the template gives; returns the metrics seen.
func checkLogs(t *testing.T, w *world) map[string]bool {
	t.Helper()
	seen := map[string]bool{}
	for _, f := range w.fns {
		for _, l := range strings.Split(f.out.String(), "\n") {
			if strings.Contains(l, "panic:") || strings.Contains(l, "goroutine ") {
				t.Errorf("%s (%s) panicked: %s", f.name, f.arch, l)
			}
		}
		for _, l := range f.logLines() {
			var m struct {
				AWS *struct {
					CloudWatchMetrics []struct {
						Namespace  string
						Dimensions [][]string
						Metrics    []struct{ Name string }
					}
				} `json:"_aws"`
			}
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Errorf("%s (%s) wrote a line that is not JSON: %s", f.name, f.arch, l)
				continue
			}
			if m.AWS == nil {
				continue
			}
			for _, d := range m.AWS.CloudWatchMetrics {
				if ns := w.specs[f.name].Env["S3Q_METRICS_NAMESPACE"]; d.Namespace != ns {
					t.Errorf("%s wrote metrics in %q, the template says %q", f.name, d.Namespace, ns)
				}
				for _, mm := range d.Metrics {
					c, ok := catalog.Lookup(mm.Name)
					if !ok || len(d.Dimensions) != 1 || !slices.Equal(d.Dimensions[0], c.Dimensions) {
						t.Errorf("%s wrote %s by %v, not in the metrics catalog so: %s", f.name, mm.Name, d.Dimensions, l)
					}
					seen[mm.Name] = true
				}
			}
		}
	}
	return seen
}
