package lambdafn_test

import (
	"crypto/rand"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/s3q/s3q/shared/artifacts"
	"github.com/s3q/s3q/shared/internal/jsonpath"
	"github.com/s3q/s3q/shared/lambdafn"
	"github.com/s3q/s3q/shared/lambdafn/eventtest"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/reqcount"
	"github.com/s3q/s3q/shared/s3local"
	"github.com/s3q/s3q/shared/s3local/s3localtest"
	"github.com/s3q/s3q/shared/schedule"
)

// The servers every test of the package shares, started once by TestMain.
var servers s3localtest.Servers

func TestMain(m *testing.M) { os.Exit(s3localtest.Main(m, &servers)) }

// eventsDir is the repository's events/ folder.
const eventsDir = "../../events"

// fixture is the state an event needs: a task in some status.
type fixture func(t *testing.T, q *queue.Queue, decls *queues.Registry) (id, token string)

func none(*testing.T, *queue.Queue, *queues.Registry) (string, string) { return "", "" }

func pendingTask(t *testing.T, q *queue.Queue, decls *queues.Registry) (string, string) {
	t.Helper()
	ttl := queue.Duration(time.Hour)
	res, err := q.Submit(t.Context(), queue.SubmitRequest{TaskType: "email.send", TTL: &ttl}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return res.Task.ID, ""
}

func runningTask(t *testing.T, q *queue.Queue, decls *queues.Registry) (string, string) {
	t.Helper()
	pendingTask(t, q, decls)
	c, err := q.Claim(t.Context(), queue.ClaimRequest{LeaseFor: time.Minute}, time.Now())
	if err != nil || len(c) != 1 {
		t.Fatalf("claim: %v %v", c, err)
	}
	return c[0].Task.ID, c[0].Lease.Token
}

func cancelledTask(t *testing.T, q *queue.Queue, decls *queues.Registry) (string, string) {
	t.Helper()
	id, _ := pendingTask(t, q, decls)
	if _, err := q.Cancel(t.Context(), id, time.Now()); err != nil {
		t.Fatal(err)
	}
	return id, ""
}

// eventCase is one sample event sent to its function.
type eventCase struct {
	file     string
	function string
	setup    fixture
	status   int
	// want are dotted paths into the answer's JSON body and their values.
	want map[string]any
}

var eventCases = []eventCase{
	{"submit.json", "submit", none, 201, map[string]any{"task.status": "pending", "task.task_type": "email.send", "task.expires_in_seconds": float64(3599)}},
	{"submit-wait.json", "waits", none, 202, map[string]any{"task.status": "pending"}},
	{"claim-wait.json", "waits", pendingTask, 200, map[string]any{"tasks.0.task.status": "running", "tasks.0.task.worker_id": "worker-1"}},
	{"submit-batch.json", "submit", none, 200, map[string]any{"results.0.task.status": "pending", "results.2.task.queue": "default", "results.1.deduplicated": false}},
	{"claim.json", "claim", pendingTask, 200, map[string]any{"tasks.0.task.status": "running", "tasks.0.task.worker_id": "worker-1"}},
	{"tasks-get.json", "tasks", pendingTask, 200, map[string]any{"task.status": "pending"}},
	{"tasks-list.json", "tasks", pendingTask, 200, map[string]any{"tasks.0.status": "pending"}},
	{"tasks-list-queue.json", "tasks", pendingTask, 200, map[string]any{"tasks.0.status": "pending", "tasks.0.queue": "default"}},
	{"queues-put.json", "tasks", none, 201, map[string]any{"queue.name": "reports", "queue.max_concurrency": float64(4), "queue.ttl": "2h"}},
	{"queues-get.json", "tasks", pendingTask, 200, map[string]any{"queue.name": "default", "queue.counts.live": float64(1)}},
	{"queues-list.json", "tasks", pendingTask, 200, map[string]any{"queues.0.name": "default", "queues.0.counts.live": float64(1)}},
	{"queues-delete.json", "tasks", reportsQueue, 204, nil},
	{"queues-pause.json", "tasks", pendingTask, 200, map[string]any{"queue.name": "default", "queue.paused": true}},
	{"queues-resume.json", "tasks", pausedQueue, 200, map[string]any{"queue.name": "default", "queue.paused": nil}},
	{"queues-stats.json", "tasks", pendingTask, 200, map[string]any{"stats.queue": "default", "stats.counts.live": float64(1)}},
	{"queues-purge.json", "tasks", pendingTask, 200, map[string]any{"op": "purge", "changed": float64(1)}},
	{"queues-bulk-retry.json", "tasks", cancelledTask, 200, map[string]any{"op": "retry", "changed": float64(1)}},
	{"queues-bulk-cancel.json", "tasks", pendingTask, 200, map[string]any{"op": "cancel", "changed": float64(1)}},
	{"queues-bulk-expire.json", "tasks", pendingTask, 200, map[string]any{"op": "expire", "changed": float64(1)}},
	{"openapi.json", "tasks", none, 200, map[string]any{"openapi": "3.1.0", "info.title": "s3q"}},
	{"tasks-history.json", "tasks", runningTask, 200, map[string]any{"versions.0.task.status": "running", "versions.1.task.status": "pending"}},
	{"tasks-cancel.json", "tasks", pendingTask, 200, map[string]any{"task.status": "cancelled"}},
	{"tasks-cancel-ack.json", "tasks", runningTask, 200, map[string]any{"task.status": "cancelled"}},
	{"tasks-retry.json", "tasks", cancelledTask, 200, map[string]any{"task.status": "pending"}},
	{"tasks-expire.json", "tasks", pendingTask, 200, map[string]any{"task.status": "expired", "task.expiry_reason": "manual"}},
	{"tasks-heartbeat.json", "tasks", runningTask, 200, map[string]any{"task.status": "running"}},
	{"tasks-complete.json", "tasks", runningTask, 200, map[string]any{"task.status": "completed", "task.output.message_id": "0100018d-example"}},
	{"tasks-fail.json", "tasks", runningTask, 200, map[string]any{"task.status": "pending", "task.last_error": "SMTP 451: try again later"}},
	{"tasks-reschedule.json", "tasks", runningTask, 200, map[string]any{"task.status": "pending", "task.attempt": float64(0)}},
	{"tasks-artifact-put.json", "tasks", pendingTask, 201, map[string]any{"artifact.name": "report.pdf", "artifact.download_url": nil}},
	{"tasks-artifact-get.json", "tasks", uploadedArtifact, 200, map[string]any{"artifact.name": "report.pdf", "artifact.upload_url": nil}},
	{"schedules-create.json", "schedules", none, 201, map[string]any{"schedule.id": "hourly-cleanup", "schedule.timezone": "Europe/Berlin", "schedule.enabled": true}},
	{"schedules-list.json", "schedules", nightlySchedule, 200, map[string]any{"schedules.0.id": "nightly-report"}},
	{"schedules-get.json", "schedules", nightlySchedule, 200, map[string]any{"schedule.id": "nightly-report", "schedule.cron": "0 2 * * *"}},
	{"schedules-update.json", "schedules", nightlySchedule, 200, map[string]any{"schedule.cron": "30 2 * * 1-5", "schedule.missed_runs": "catch_up"}},
	{"schedules-delete.json", "schedules", nightlySchedule, 204, nil},
	{"schedules-pause.json", "schedules", nightlySchedule, 200, map[string]any{"schedule.enabled": false, "schedule.next_run_at": nil}},
	{"schedules-resume.json", "schedules", nightlySchedule, 200, map[string]any{"schedule.enabled": true}},
	{"schedules-trigger.json", "schedules", nightlySchedule, 200, map[string]any{"fire.schedule_id": "nightly-report", "fire.trigger": true}},
	{"schedules-history.json", "schedules", triggeredSchedule, 200, map[string]any{"fires.0.schedule_id": "nightly-report"}},
}

// pausedQueue is a pending task in queue default, paused.
func pausedQueue(t *testing.T, q *queue.Queue, decls *queues.Registry) (string, string) {
	t.Helper()
	id, _ := pendingTask(t, q, decls)
	if _, err := decls.Pause(t.Context(), "default", time.Now()); err != nil {
		t.Fatal(err)
	}
	return id, ""
}

// reportsQueue declares the queue the queue events name.
func reportsQueue(t *testing.T, q *queue.Queue, decls *queues.Registry) (string, string) {
	t.Helper()
	if _, _, err := decls.Declare(t.Context(), queues.Declaration{Name: "reports"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	return "", ""
}

// nightlySchedule is the schedule the schedule events name.
func nightlySchedule(t *testing.T, q *queue.Queue, decls *queues.Registry) (string, string) {
	t.Helper()
	ttl := queue.Duration(time.Hour)
	if _, err := schedule.New(q.Store(), q, schedule.Options{}).Create(t.Context(), schedule.Request{
		ID: "nightly-report", TaskType: "report.build", Cron: "0 2 * * *", Timezone: "Europe/Berlin", TTL: &ttl,
	}, time.Now()); err != nil {
		t.Fatal(err)
	}
	return "", ""
}

// triggeredSchedule is nightlySchedule fired once.
func triggeredSchedule(t *testing.T, q *queue.Queue, decls *queues.Registry) (string, string) {
	t.Helper()
	nightlySchedule(t, q, decls)
	if _, err := schedule.New(q.Store(), q, schedule.Options{}).Trigger(t.Context(), "nightly-report", time.Now()); err != nil {
		t.Fatal(err)
	}
	return "", ""
}

// uploadedArtifact is a pending task with an artifact report.pdf.
func uploadedArtifact(t *testing.T, q *queue.Queue, decls *queues.Registry) (string, string) {
	t.Helper()
	id, _ := pendingTask(t, q, decls)
	if _, _, err := q.ReserveArtifact(t.Context(), queue.ArtifactRequest{ID: id, TTL: time.Hour}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Store().Put(t.Context(), queue.ArtifactKey(queue.DefaultQueue, id, "report.pdf"), []byte("%PDF-1.7")); err != nil {
		t.Fatal(err)
	}
	return id, ""
}

// readEvent reads a sample event of events/ with its placeholders filled in.
func readEvent(t *testing.T, file, id, token string) []byte {
	t.Helper()
	return eventtest.Read(t, eventsDir, file, id, token)
}

// invoke runs a function's handler on a payload as Lambda would and
// decodes its API Gateway response and JSON body.
func invoke(t *testing.T, name string, d lambdafn.Deps, payload []byte) (events.APIGatewayV2HTTPResponse, map[string]any) {
	t.Helper()
	h, err := lambdafn.New(name, d)
	if err != nil {
		t.Fatal(err)
	}
	out, err := h.Invoke(t.Context(), payload)
	if err != nil {
		t.Fatalf("invoke %s: %v", name, err)
	}
	var resp events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatalf("%s answered %s: %v", name, out, err)
	}
	var body map[string]any
	if resp.Body != "" {
		if err := json.Unmarshal([]byte(resp.Body), &body); err != nil {
			t.Fatalf("%s body is not JSON: %s", name, resp.Body)
		}
	}
	eventtest.CheckAnswer(t, payload, resp)
	return resp, body
}

func deps(q *queue.Queue, decls *queues.Registry) lambdafn.Deps {
	return lambdafn.Deps{Queue: q, Queues: decls, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))}
}

func TestSampleEvents(t *testing.T) {
	for _, srv := range []*s3local.Server{servers.GoFakeS3, servers.VersityGW} {
		t.Run(srv.Name, func(t *testing.T) {
			t.Parallel()
			for _, c := range eventCases {
				t.Run(strings.TrimSuffix(c.file, ".json")+"_answers_"+strconv.Itoa(c.status), func(t *testing.T) {
					t.Parallel()
					prefix := "test-" + rand.Text() + "/"
					q, decls := queues.New(reqcount.Wrap(srv.Store(prefix)), queues.Options{})
					d := deps(q, decls)
					d.Scheduler = schedule.New(q.Store(), q, schedule.Options{})
					d.Artifacts = artifacts.New(q, srv.Client(), srv.Bucket, prefix, artifacts.Options{})
					id, token := c.setup(t, q, decls)
					resp, body := invoke(t, c.function, d, readEvent(t, c.file, id, token))
					if resp.StatusCode != c.status {
						t.Fatalf("status %d, want %d: %s", resp.StatusCode, c.status, resp.Body)
					}
					if ct := resp.Headers["Content-Type"]; c.status != 204 && ct != "application/json" {
						t.Errorf("Content-Type = %q", ct)
					}
					for path, want := range c.want {
						if got := dig(body, path); got != want {
							t.Errorf("%s = %v, want %v: %s", path, got, want, resp.Body)
						}
					}
					if c.file != "openapi.json" && strings.Contains(resp.Body, `"lease_token"`) { // the document names the request field
						t.Errorf("a lease token leaked: %s", resp.Body)
					}
				})
			}
		})
	}
}

// Every HTTP event sent to a function that does not own its route is a 404.
func TestEventsToTheWrongFunctionAre404(t *testing.T) {
	q, decls := queues.New(s3localtest.NewStore(t, servers.GoFakeS3), queues.Options{})
	for _, c := range eventCases {
		for _, fn := range []string{"submit", "claim", "tasks", "schedules"} {
			if fn == c.function {
				continue
			}
			resp, body := invoke(t, fn, deps(q, decls), readEvent(t, c.file, "01900000-0000-7000-8000-000000000000", "x"))
			if resp.StatusCode != 404 || dig(body, "error.code") != "not_found" {
				t.Errorf("%s sent to %s: %d %s, want 404 not_found", c.file, fn, resp.StatusCode, resp.Body)
			}
		}
	}
}

// Every file in events/ has a case here, so none goes untested.
func TestEveryEventFileIsTested(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(eventsDir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no events: %v", err)
	}
	tested := map[string]bool{"sweep-expired.json": true, "schedule-tick.json": true, "dispatch.json": true, "dispatch-wake.json": true}
	for _, c := range eventCases {
		tested[c.file] = true
	}
	for _, f := range files {
		if !tested[filepath.Base(f)] {
			t.Errorf("events/%s has no test case", filepath.Base(f))
		}
	}
}

// dig walks a decoded JSON value by a dotted path ("tasks.0.task.id").
func dig(v any, path string) any { return jsonpath.Get(v, path) }
