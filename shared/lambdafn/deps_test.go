package lambdafn_test

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/s3q/s3q/shared/config"
	"github.com/s3q/s3q/shared/lambdafn"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/schedule"
	"github.com/s3q/s3q/shared/tasktypes"
)

// bus is a local endpoint that speaks EventBridge's PutEvents protocol
// (awsJson1_1) and keeps the entries it was sent.
type bus struct {
	mu      sync.Mutex
	entries []map[string]any
	bad     []string // what was wrong with the requests
}

func (b *bus) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if got := r.Header.Get("X-Amz-Target"); got != "AWSEvents.PutEvents" {
		b.bad = append(b.bad, "X-Amz-Target "+got)
	}
	if auth := r.Header.Get("Authorization"); !strings.Contains(auth, "/us-east-1/events/aws4_request") {
		b.bad = append(b.bad, "Authorization "+auth)
	}
	var in struct{ Entries []map[string]any }
	body, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(body, &in); err != nil {
		b.bad = append(b.bad, "body "+string(body))
	}
	b.entries = append(b.entries, in.Entries...)
	out := struct {
		FailedEntryCount int
		Entries          []map[string]string
	}{}
	for range in.Entries {
		out.Entries = append(out.Entries, map[string]string{"EventId": rand.Text()})
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	json.NewEncoder(w).Encode(out)
}

// fromEnv sets the environment a deployed function has, pointing S3 at
// the gofakes3 server under a fresh prefix, and returns its configuration.
// The AWS SDK reads the process environment, so tests using it do not run
// in parallel.
func fromEnv(t *testing.T, extra map[string]string) config.Config {
	t.Helper()
	srv := servers.GoFakeS3
	env := map[string]string{
		"S3Q_BUCKET": srv.Bucket, "S3Q_PREFIX": "test-" + rand.Text() + "/", "S3Q_ENDPOINT": srv.Endpoint,
		"AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": srv.AccessKey, "AWS_SECRET_ACCESS_KEY": srv.SecretKey,
		"AWS_CONFIG_FILE": os.DevNull, "AWS_SHARED_CREDENTIALS_FILE": os.DevNull, "AWS_EC2_METADATA_DISABLED": "true",
		"S3Q_EVENT_BUS": "", "S3Q_DEFAULT_TTL": "", "AWS_ENDPOINT_URL": "", "AWS_ENDPOINT_URL_EVENTBRIDGE": "", "S3Q_METRICS_NAMESPACE": "",
		"S3Q_AUTO_DECLARE": "true", // these cases are about wiring; queues declare on submit
	}
	for k, v := range extra {
		env[k] = v
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
	c, err := config.FromEnv(os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// lines splits JSON lines written by the logger and the metrics.
func lines(t *testing.T, out *bytes.Buffer) []map[string]any {
	t.Helper()
	var ls []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(out.Bytes()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("not a JSON line: %s", sc.Bytes())
		}
		ls = append(ls, m)
	}
	return ls
}

// emf returns the EMF lines that carry metric name.
func emf(ls []map[string]any, name string) []map[string]any {
	var out []map[string]any
	for _, l := range ls {
		if _, ok := l["_aws"]; ok && l[name] != nil {
			out = append(out, l)
		}
	}
	return out
}

// eventTime is the time of events/sweep-expired.json.
var eventTime = time.Date(2026, 1, 28, 9, 0, 0, 0, time.UTC)

func ttl(d time.Duration) *queue.Duration { v := queue.Duration(d); return &v }

func TestSweepExpiredWiredFromConfig(t *testing.T) {
	t.Run("it_publishes_task_expired_to_the_event_bus_not_to_the_s3_endpoint_and_writes_emf_metrics", func(t *testing.T) {
		b := &bus{}
		fake := httptest.NewServer(b)
		defer fake.Close()
		c := fromEnv(t, map[string]string{"S3Q_EVENT_BUS": "s3q-test", "AWS_ENDPOINT_URL_EVENTBRIDGE": fake.URL, "S3Q_METRICS_NAMESPACE": "s3q/test"})
		var out bytes.Buffer
		d, err := lambdafn.Build(t.Context(), c, lambdafn.Parts{Out: &out})
		if err != nil {
			t.Fatal(err)
		}
		// Due an hour before the sample event's time: no waiting.
		res, err := d.Queue.Submit(t.Context(), queue.SubmitRequest{TaskType: "email.send", TTL: ttl(time.Hour)}, eventTime.Add(-2*time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		soon, err := d.Queue.Submit(t.Context(), queue.SubmitRequest{TaskType: "email.send", TTL: ttl(time.Hour)}, eventTime.Add(-58*time.Minute))
		if err != nil {
			t.Fatal(err)
		}

		// A worker's last failure: dead-lettered, and its event owed.
		if _, err := d.Queue.Submit(t.Context(), queue.SubmitRequest{TaskType: "report.build", Queue: "reports", MaxAttempts: 1}, eventTime.Add(-time.Hour)); err != nil {
			t.Fatal(err)
		}
		cl, err := d.Queue.Claim(t.Context(), queue.ClaimRequest{Queue: "reports", LeaseFor: time.Minute}, eventTime.Add(-time.Hour))
		if err != nil || len(cl) != 1 || cl[0].Task.TaskType != "report.build" {
			t.Fatalf("claim: %v %v", cl, err)
		}
		if f, err := d.Queue.Fail(t.Context(), queue.FailRequest{ID: cl[0].Task.Ref(), LeaseToken: cl[0].Lease.Token, Error: "boom"}, eventTime.Add(-time.Hour)); err != nil || f.Status != queue.StatusFailed {
			t.Fatalf("fail: %+v %v", f, err)
		}

		rep := invokeTimer(t, "sweep-expired", d)
		result := rep.Result.(map[string]any)
		if !rep.Wired || result["expired"] != 1.0 || result["events_sent"] != 2.0 || result["near_expiration"] != 1.0 {
			t.Fatalf("report %+v", rep)
		}
		if got, _ := d.Queue.Get(t.Context(), res.Task.Ref()); got.Status != queue.StatusExpired || got.ExpiryEventSentAt == nil {
			t.Fatalf("task after the sweep: %+v", got)
		}
		if got, _ := d.Queue.Get(t.Context(), soon.Task.Ref()); got.Status != queue.StatusPending {
			t.Fatalf("a task due in 2 minutes is %s", got.Status)
		}

		b.mu.Lock()
		entries, bad := b.entries, b.bad
		b.mu.Unlock()
		if len(bad) > 0 || len(entries) != 2 {
			t.Fatalf("the bus got %d entries, problems %v", len(entries), bad)
		}
		if entries[0]["DetailType"] == "Task Dead-Lettered" {
			entries[0], entries[1] = entries[1], entries[0]
		}
		if entries[1]["DetailType"] != "Task Dead-Lettered" {
			t.Errorf("second entry %v", entries[1])
		}
		e := entries[0]
		var detail map[string]any
		json.Unmarshal([]byte(e["Detail"].(string)), &detail)
		if e["Source"] != "s3q" || e["DetailType"] != "Task Expired" || e["EventBusName"] != "s3q-test" ||
			detail["task_id"] != res.Task.ID || detail["reason"] != "ttl" || detail["age_seconds"] != 7200.0 {
			t.Fatalf("entry %v", e)
		}

		ls := lines(t, &out)
		total := emf(ls, "tasks_expired_total")
		if len(total) != 1 || total[0]["task_type"] != "email.send" || total[0]["tasks_expired_total"] != 1.0 {
			t.Errorf("tasks_expired_total lines: %v", total)
		}
		sweep := emf(ls, "sweep_duration")
		if len(sweep) != 1 || sweep[0]["tasks_near_expiration"] != 1.0 || sweep[0]["sweep_requests"] == nil {
			t.Errorf("sweep metric lines: %v", sweep)
		}
		// What the stack's dead-letter alarm watches, in the stack's namespace.
		dl := emf(ls, "tasks_dead_lettered_total")
		if len(dl) != 1 || dl[0]["task_type"] != "report.build" || dl[0]["tasks_dead_lettered_total"] != 1.0 {
			t.Errorf("tasks_dead_lettered_total lines: %v", dl)
		}
		for _, l := range emf(ls, "service") {
			if ns := l["_aws"].(map[string]any)["CloudWatchMetrics"].([]any)[0].(map[string]any)["Namespace"]; ns != "s3q/test" {
				t.Errorf("namespace %v, want S3Q_METRICS_NAMESPACE's", ns)
			}
		}
	})

	t.Run("without_an_event_bus_the_events_go_to_the_log", func(t *testing.T) {
		c := fromEnv(t, nil)
		var out bytes.Buffer
		d, err := lambdafn.Build(t.Context(), c, lambdafn.Parts{Out: &out})
		if err != nil {
			t.Fatal(err)
		}
		res, err := d.Queue.Submit(t.Context(), queue.SubmitRequest{TaskType: "report.build", TTL: ttl(time.Minute)}, eventTime.Add(-time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if rep := invokeTimer(t, "sweep-expired", d); rep.Result.(map[string]any)["events_sent"] != 1.0 {
			t.Fatalf("report %+v", rep)
		}
		found := false
		for _, l := range lines(t, &out) {
			if l["msg"] == "event" && l["detail_type"] == "Task Expired" && l["task_id"] == res.Task.ID {
				found = true
			}
		}
		if !found {
			t.Errorf("no Task Expired event in the log:\n%s", out.String())
		}
	})

	t.Run("the_queue_takes_task_type_defaults_from_the_bucket_and_the_default_ttl_from_the_env", func(t *testing.T) {
		c := fromEnv(t, map[string]string{"S3Q_DEFAULT_TTL": "7d"})
		d, err := lambdafn.Build(t.Context(), c, lambdafn.Parts{Out: io.Discard})
		if err != nil {
			t.Fatal(err)
		}
		cfg := `{"task_types":{"report.build":{"ttl":"30m","ttl_from":"first_attempt","max_attempts":5}}}`
		if _, err := d.Queue.Store().Put(t.Context(), tasktypes.Key, []byte(cfg)); err != nil {
			t.Fatal(err)
		}
		typed, err := d.Queue.Submit(t.Context(), queue.SubmitRequest{TaskType: "report.build"}, eventTime)
		if err != nil {
			t.Fatal(err)
		}
		if tk := typed.Task; tk.TTL == nil || tk.TTL.Std() != 30*time.Minute || tk.TTLFrom != queue.TTLFromFirstAttempt || tk.MaxAttempts != 5 || tk.ExpiresAt != nil {
			t.Errorf("a report.build task: %+v", tk)
		}
		other, err := d.Queue.Submit(t.Context(), queue.SubmitRequest{TaskType: "email.send"}, eventTime)
		if err != nil {
			t.Fatal(err)
		}
		if tk := other.Task; tk.ExpiresAt == nil || !tk.ExpiresAt.Equal(eventTime.Add(7*24*time.Hour)) || tk.MaxAttempts != queue.DefaultMaxAttempts {
			t.Errorf("an email.send task: %+v", tk)
		}
	})

	t.Run("the_submit_function_writes_the_ttl_at_submit_metric", func(t *testing.T) {
		c := fromEnv(t, nil)
		var out bytes.Buffer
		d, err := lambdafn.Build(t.Context(), c, lambdafn.Parts{Out: &out})
		if err != nil {
			t.Fatal(err)
		}
		resp, _ := invoke(t, "submit", d, readEvent(t, "submit.json", "", ""))
		if resp.StatusCode != 201 {
			t.Fatalf("submit: %d %s", resp.StatusCode, resp.Body)
		}
		got := emf(lines(t, &out), "task_ttl_seconds")
		if len(got) != 1 || got[0]["task_type"] != "email.send" || got[0]["task_ttl_seconds"] != 3600.0 {
			t.Errorf("task_ttl_seconds lines: %v\n%s", got, out.String())
		}
	})
}

// The scheduler works through the same counted store as the queue, so the
// tick's requests (and the schedule routes') are in its s3_requests.
func TestScheduleTickCountsItsRequests(t *testing.T) {
	c := fromEnv(t, nil)
	d, err := lambdafn.Build(t.Context(), c, lambdafn.Parts{Out: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	// Nothing due: the tick makes one LIST of due/, and says so.
	if rep := invokeTimer(t, "schedule-tick", d); rep.S3Requests != 1 {
		t.Fatalf("an idle tick counted %d requests, want 1 (the LIST of due/)", rep.S3Requests)
	}
	if _, err := d.Scheduler.Create(t.Context(), schedule.Request{ID: "every-minute", TaskType: "email.send", Cron: "* * * * *"},
		eventTime.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	rep := invokeTimer(t, "schedule-tick", d)
	if fired := rep.Result.(map[string]any)["fired"]; fired != 1.0 || rep.S3Requests < 5 {
		t.Fatalf("a tick that fired %v counted %d requests: %+v", fired, rep.S3Requests, rep)
	}
}

// Each request's log line says who made it: API Gateway's request id (as
// in the access log), the Lambda invocation's id, and the caller's ARN.
func TestTheRequestLogLineNamesTheCaller(t *testing.T) {
	c := fromEnv(t, nil)
	var out bytes.Buffer
	d, err := lambdafn.Build(t.Context(), c, lambdafn.Parts{Out: &out})
	if err != nil {
		t.Fatal(err)
	}
	h, err := lambdafn.New("claim", d)
	if err != nil {
		t.Fatal(err)
	}
	ctx := lambdacontext.NewContext(t.Context(), &lambdacontext.LambdaContext{AwsRequestID: "8f5e1c2a-0000-4000-8000-000000000001"})
	if _, err := h.Invoke(ctx, readEvent(t, "claim.json", "", "")); err != nil {
		t.Fatal(err)
	}
	var line map[string]any
	for _, l := range lines(t, &out) {
		if l["msg"] == "request" {
			line = l
		}
	}
	want := map[string]any{
		"route": "POST /queues/{queue}/claim", "status": 204.0, "request_id": "JkKh2gEXoAMEbXA=", "lambda_request_id": "8f5e1c2a-0000-4000-8000-000000000001",
		"caller_arn": "arn:aws:sts::123456789012:assumed-role/s3q-worker/worker-1", "caller_account": "123456789012",
	}
	for k, v := range want {
		if line[k] != v {
			t.Errorf("%s = %v, want %v in %v", k, line[k], v, line)
		}
	}
}

// S3Q_MAX_WAIT bounds the wait of a submit and of a claim: a longer one is
// a 400 naming wait, and nothing is submitted.
func TestMaxWaitFromTheEnvironment(t *testing.T) {
	c := fromEnv(t, map[string]string{"S3Q_MAX_WAIT": "500ms"})
	d, err := lambdafn.Build(t.Context(), c, lambdafn.Parts{Out: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{"submit-wait.json", "claim-wait.json"} {
		fn := "waits"
		ev := readEvent(t, file, "", "")
		resp, body := invoke(t, fn, d, ev)
		if resp.StatusCode != 400 || dig(body, "error.field") != "wait" || !strings.Contains(resp.Body, "500ms") {
			t.Errorf("%s with a wait of 1s: %d %s", fn, resp.StatusCode, resp.Body)
		}
	}
	if l, err := d.Queue.List(t.Context(), queue.ListRequest{Status: queue.StatusPending}); err != nil || len(l.Tasks) != 0 {
		t.Errorf("a refused submit left tasks: %+v %v", l, err)
	}
}

// A timer's log line says which rule fired it and which invocation ran it.
func TestTheTimerLogLineNamesTheRuleAndTheInvocation(t *testing.T) {
	c := fromEnv(t, nil)
	var out bytes.Buffer
	d, err := lambdafn.Build(t.Context(), c, lambdafn.Parts{Out: &out})
	if err != nil {
		t.Fatal(err)
	}
	h, err := lambdafn.New("schedule-tick", d)
	if err != nil {
		t.Fatal(err)
	}
	ctx := lambdacontext.NewContext(t.Context(), &lambdacontext.LambdaContext{AwsRequestID: "8f5e1c2a-0000-4000-8000-000000000002"})
	if _, err := h.Invoke(ctx, readEvent(t, "schedule-tick.json", "", "")); err != nil {
		t.Fatal(err)
	}
	var line map[string]any
	for _, l := range lines(t, &out) {
		if l["msg"] == "timer" {
			line = l
		}
	}
	if line["caller_arn"] != "arn:aws:events:us-east-1:123456789012:rule/s3q-dev-schedule-tick" || line["lambda_request_id"] != "8f5e1c2a-0000-4000-8000-000000000002" {
		t.Errorf("timer line %v", line)
	}
}
