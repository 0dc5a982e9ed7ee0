package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/client"
	"github.com/s3q/s3q/shared/devserver"
	"github.com/s3q/s3q/shared/wire"
	"github.com/s3q/s3q/shared/worker"
)

// The scenarios of contract/scenarios.json: the behaviours every s3q
// client shows against a real server, here the Go client and worker
// against `s3q dev` (its API, over its in-process S3 server). Each runs
// in a queue of its own. TestTheScenariosAreTheContracts keeps this map
// and the file the same.
var scenarios = map[string]func(t *testing.T, e *scenarioEnv){
	"submit_retried_request_makes_one_task": func(t *testing.T, e *scenarioEnv) {
		c := e.queue(t)
		req := client.SubmitRequest{SubmitRequest: wire.SubmitRequest{ID: client.NewID(time.Now()), TaskType: "s.one", Input: json.RawMessage(`{"n":1}`)}}
		first, err := c.Submit(ctx, req)
		if err != nil || first.Replayed || first.Status != http.StatusCreated {
			t.Fatalf("first submit: %+v %v", first, err)
		}
		// The same request again, as after a lost answer.
		again, err := c.Submit(ctx, req)
		if err != nil || !again.Replayed || again.Task.ID != first.Task.ID {
			t.Fatalf("retried submit: %+v %v", again, err)
		}
		if n := len(e.all(t, c)); n != 1 {
			t.Fatalf("the queue holds %d tasks", n)
		}
	},
	"submit_dedup_key": func(t *testing.T, e *scenarioEnv) {
		c := e.queue(t)
		first, err := c.Submit(ctx, client.SubmitRequest{SubmitRequest: wire.SubmitRequest{TaskType: "s.one", DedupKey: "order-7"}})
		if err != nil || first.Deduplicated {
			t.Fatalf("first submit: %+v %v", first, err)
		}
		second, err := c.Submit(ctx, client.SubmitRequest{SubmitRequest: wire.SubmitRequest{TaskType: "s.one", DedupKey: "order-7"}})
		if err != nil || !second.Deduplicated || second.Task.ID != first.Task.ID {
			t.Fatalf("second submit: %+v %v", second, err)
		}
	},
	"lease_operation_replayed": func(t *testing.T, e *scenarioEnv) {
		c := e.queue(t)
		cl := e.submitAndClaim(t, c, wire.SubmitRequest{TaskType: "s.one"})
		req := client.CompleteRequest{Lease: cl.Lease, Output: json.RawMessage(`{"ok":true}`)}
		for i := range 2 {
			done, err := c.Complete(ctx, req)
			if err != nil || done.Status != wire.StatusCompleted || string(done.Output) != `{"ok":true}` {
				t.Fatalf("complete %d: %+v %v", i+1, done, err)
			}
		}
		_, err := c.Complete(ctx, client.CompleteRequest{Lease: cl.Lease, Output: json.RawMessage(`{"ok":false}`)})
		var ae *client.Error
		if !errors.As(err, &ae) || ae.Status != http.StatusConflict || !errors.Is(err, wire.ErrLeaseEnded) || errors.Is(err, wire.ErrConflict) || ae.Temporary() {
			t.Fatalf("complete with another body: %v, want wire.ErrLeaseEnded (not ErrConflict), not temporary", err)
		}
	},
	"cancel_reaches_handler": func(t *testing.T, e *scenarioEnv) {
		c := e.queue(t)
		started, cancelled := make(chan string, 1), make(chan error, 1)
		w := worker.New(c, worker.Options{Queue: c.Queue(), LeaseFor: 3 * time.Second, Wait: time.Second, Logger: quiet})
		w.Handle("s.long", func(ctx context.Context, task *worker.Task) (json.RawMessage, error) {
			started <- task.ID
			<-ctx.Done()
			cancelled <- context.Cause(ctx)
			return nil, ctx.Err()
		})
		stop := e.run(t, w)
		defer stop()
		res, err := c.Submit(ctx, client.SubmitRequest{SubmitRequest: wire.SubmitRequest{TaskType: "s.long"}})
		if err != nil {
			t.Fatal(err)
		}
		if id := <-started; id != res.Task.ID {
			t.Fatalf("the handler runs %s", id)
		}
		if got, err := c.Cancel(ctx, res.Task.ID); err != nil || !got.CancelRequested {
			t.Fatalf("cancel: %+v %v", got, err)
		}
		if cause := <-cancelled; !errors.Is(cause, worker.ErrCancelRequested) {
			t.Fatalf("the handler's context ended by %v", cause)
		}
		e.await(t, c, res.Task.ID, wire.StatusCancelled)
	},
	"priority_claim_order": func(t *testing.T, e *scenarioEnv) {
		c := e.queue(t)
		ids := map[int]string{}
		for _, p := range []int{5, 1, 3, 0} {
			res, err := c.Submit(ctx, client.SubmitRequest{SubmitRequest: wire.SubmitRequest{TaskType: "s.one", Priority: p}})
			if err != nil {
				t.Fatal(err)
			}
			want := p
			if p == 0 {
				want = 3 // none given: the default
			}
			if res.Task.Priority != want {
				t.Fatalf("submit with priority %d shows %d", p, res.Task.Priority)
			}
			ids[p] = res.Task.ID
		}
		for _, p := range []int{1, 3, 0, 5} {
			cs, err := c.Claim(ctx, client.ClaimRequest{WorkerID: "w", MaxTasks: 1})
			if err != nil || len(cs) != 1 || cs[0].Task.ID != ids[p] {
				t.Fatalf("the claim for priority %d got %+v %v", p, cs, err)
			}
		}
	},
	"trace_context_reaches_handler": func(t *testing.T, e *scenarioEnv) {
		const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
		c := e.queue(t)
		traced, err := c.Submit(ctx, client.SubmitRequest{SubmitRequest: wire.SubmitRequest{TaskType: "s.trace", Traceparent: tp, Tracestate: "vendor=abc"}})
		if err != nil {
			t.Fatal(err)
		}
		plain, err := c.Submit(ctx, client.SubmitRequest{SubmitRequest: wire.SubmitRequest{TaskType: "s.trace"}})
		if err != nil {
			t.Fatal(err)
		}
		if got, err := c.Get(ctx, traced.Task.ID); err != nil || got.Traceparent != tp || got.Tracestate != "vendor=abc" {
			t.Fatalf("status: %+v %v", got, err)
		}
		seen := make(chan [3]string, 2)
		w := worker.New(c, worker.Options{Queue: c.Queue(), Wait: time.Second, Logger: quiet})
		w.Handle("s.trace", func(ctx context.Context, task *worker.Task) (json.RawMessage, error) {
			p, s := worker.TraceContext(ctx)
			seen <- [3]string{task.ID, p, s}
			return nil, nil
		})
		stop := e.run(t, w)
		defer stop()
		got := map[string][2]string{}
		for range 2 {
			s := <-seen
			got[s[0]] = [2]string{s[1], s[2]}
		}
		if got[traced.Task.ID] != [2]string{tp, "vendor=abc"} || got[plain.Task.ID] != [2]string{} {
			t.Fatalf("the handlers saw %v", got)
		}
	},
	"ttl_expiry": func(t *testing.T, e *scenarioEnv) {
		c := e.queue(t)
		ttl := client.Duration(time.Second)
		res, err := c.Submit(ctx, client.SubmitRequest{SubmitRequest: wire.SubmitRequest{TaskType: "s.one", TTL: &ttl}})
		if err != nil || res.Task.ExpiresAt == nil {
			t.Fatalf("submit: %+v %v", res, err)
		}
		time.Sleep(time.Until(*res.Task.ExpiresAt) + 50*time.Millisecond)
		if cs, err := c.Claim(ctx, client.ClaimRequest{WorkerID: "w"}); err != nil || len(cs) != 0 {
			t.Fatalf("a claim after the deadline: %+v %v", cs, err)
		}
		e.await(t, c, res.Task.ID, wire.StatusExpired)
	},
	"dead_letter_and_retry": func(t *testing.T, e *scenarioEnv) {
		c := e.queue(t)
		cl := e.submitAndClaim(t, c, wire.SubmitRequest{TaskType: "s.one", MaxAttempts: 1})
		failed, err := c.Fail(ctx, client.FailRequest{Lease: cl.Lease, Error: "boom"})
		if err != nil || failed.Status != wire.StatusFailed || failed.LastError != "boom" {
			t.Fatalf("fail of the last attempt: %+v %v", failed, err)
		}
		// Until the server has published the dead-letter event, a retry is
		// answered 409 invalid_state: the sweep (each second here) does.
		var again client.Task
		for limit := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
			if again, err = c.Retry(ctx, cl.Task.ID); !errors.Is(err, wire.ErrInvalidState) || time.Now().After(limit) {
				break
			}
		}
		if err != nil || again.Status != wire.StatusPending {
			t.Fatalf("retry: %+v %v", again, err)
		}
		cs, err := c.Claim(ctx, client.ClaimRequest{WorkerID: "w"})
		if err != nil || len(cs) != 1 || cs[0].Task.ID != cl.Task.ID {
			t.Fatalf("claim after retry: %+v %v", cs, err)
		}
		if done, err := c.Complete(ctx, client.CompleteRequest{Lease: cs[0].Lease}); err != nil || done.Status != wire.StatusCompleted {
			t.Fatalf("complete after retry: %+v %v", done, err)
		}
	},
	"schedule_in_time_zone": func(t *testing.T, e *scenarioEnv) {
		c := e.queue(t)
		s, err := c.CreateSchedule(ctx, client.ScheduleRequest{ID: "weekday-report", TaskType: "s.report", Cron: "0 9 * * 1-5", Timezone: "Europe/Paris", Input: json.RawMessage(`{"r":1}`)})
		if err != nil || s.Timezone != "Europe/Paris" || s.ID == "" {
			t.Fatalf("create: %+v %v", s, err)
		}
		got, err := c.GetSchedule(ctx, s.ID)
		if err != nil || got.Timezone != "Europe/Paris" || got.Cron != "0 9 * * 1-5" {
			t.Fatalf("get: %+v %v", got, err)
		}
		fire, err := c.TriggerSchedule(ctx, s.ID)
		if err != nil || fire.TaskID == "" || !fire.Trigger {
			t.Fatalf("trigger: %+v %v", fire, err)
		}
		task, err := c.Get(ctx, fire.TaskID)
		if err != nil || task.TaskType != "s.report" || string(task.Input) != `{"r":1}` {
			t.Fatalf("the fired task: %+v %v", task, err)
		}
		h, err := c.ScheduleHistory(ctx, s.ID, client.ScheduleHistoryRequest{})
		if err != nil || len(h.Fires) != 1 || h.Fires[0].TaskID != fire.TaskID || !h.Fires[0].Trigger {
			t.Fatalf("history: %+v %v", h, err)
		}
	},
	"queue_pause_resume": func(t *testing.T, e *scenarioEnv) {
		c := e.queue(t)
		res, err := c.Submit(ctx, client.SubmitRequest{SubmitRequest: wire.SubmitRequest{TaskType: "s.one"}})
		if err != nil {
			t.Fatal(err)
		}
		if q, err := c.PauseQueue(ctx, c.Queue()); err != nil || !q.Paused {
			t.Fatalf("pause: %+v %v", q, err)
		}
		if cs, err := c.Claim(ctx, client.ClaimRequest{WorkerID: "w"}); err != nil || len(cs) != 0 {
			t.Fatalf("claim while paused: %+v %v", cs, err)
		}
		if q, err := c.ResumeQueue(ctx, c.Queue()); err != nil || q.Paused {
			t.Fatalf("resume: %+v %v", q, err)
		}
		if cs, err := c.Claim(ctx, client.ClaimRequest{WorkerID: "w"}); err != nil || len(cs) != 1 || cs[0].Task.ID != res.Task.ID {
			t.Fatalf("claim after resume: %+v %v", cs, err)
		}
	},
	"queue_purge": func(t *testing.T, e *scenarioEnv) {
		c := e.queue(t)
		var ids []string
		for range 3 {
			res, err := c.Submit(ctx, client.SubmitRequest{SubmitRequest: wire.SubmitRequest{TaskType: "s.one"}})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, res.Task.ID)
		}
		res, err := c.Purge(ctx, client.BulkRequest{Status: wire.StatusPending})
		if err != nil || res.Changed != 3 || res.NextCursor != "" {
			t.Fatalf("purge: %+v %v", res, err)
		}
		for _, id := range ids {
			if _, err := c.Get(ctx, id); !errors.Is(err, wire.ErrNotFound) {
				t.Fatalf("get of purged %s: %v", id, err)
			}
		}
	},
	"list_pages_to_end": func(t *testing.T, e *scenarioEnv) {
		c := e.queue(t)
		want := map[string]bool{}
		for range 7 {
			res, err := c.Submit(ctx, client.SubmitRequest{SubmitRequest: wire.SubmitRequest{TaskType: "s.one"}})
			if err != nil {
				t.Fatal(err)
			}
			want[res.Task.ID] = true
		}
		seen, pages := map[string]bool{}, 0
		for cursor := ""; ; pages++ {
			page, err := c.List(ctx, client.ListRequest{Queue: c.Queue(), Limit: 3, Cursor: cursor})
			if err != nil || len(page.Tasks) > 3 {
				t.Fatalf("page %d: %d tasks, %v", pages, len(page.Tasks), err)
			}
			for _, task := range page.Tasks {
				if seen[task.ID] || !want[task.ID] {
					t.Fatalf("task %s seen twice or not submitted", task.ID)
				}
				seen[task.ID] = true
			}
			if cursor = page.NextCursor; cursor == "" {
				break
			}
		}
		if len(seen) != len(want) || pages < 2 {
			t.Fatalf("saw %d of %d tasks in %d pages", len(seen), len(want), pages+1)
		}
	},
	"error_bad_request": func(t *testing.T, e *scenarioEnv) {
		c := e.queue(t)
		_, err := c.Submit(ctx, client.SubmitRequest{SubmitRequest: wire.SubmitRequest{TaskType: "no spaces allowed"}})
		var ae *client.Error
		if !errors.As(err, &ae) || ae.Status != http.StatusBadRequest || ae.Code != "invalid_input" || ae.Field != "task_type" || ae.Message == "" || !errors.Is(err, wire.ErrInvalidInput) {
			t.Fatalf("submit of a bad task type: %#v", err)
		}
	},
	"error_not_found": func(t *testing.T, e *scenarioEnv) {
		c := e.queue(t)
		_, err := c.Get(ctx, client.NewID(time.Now()))
		var ae *client.Error
		if !errors.As(err, &ae) || ae.Status != http.StatusNotFound || !errors.Is(err, wire.ErrNotFound) {
			t.Fatalf("get of an unknown id: %v", err)
		}
	},
	"error_conflict": func(t *testing.T, e *scenarioEnv) {
		c := e.queue(t)
		id := client.NewID(time.Now())
		if _, err := c.Submit(ctx, client.SubmitRequest{SubmitRequest: wire.SubmitRequest{ID: id, TaskType: "s.one"}}); err != nil {
			t.Fatal(err)
		}
		_, err := c.Submit(ctx, client.SubmitRequest{SubmitRequest: wire.SubmitRequest{ID: id, TaskType: "s.other"}})
		var ae *client.Error
		if !errors.As(err, &ae) || ae.Status != http.StatusConflict || ae.Field != "id" || !errors.Is(err, wire.ErrConflict) {
			t.Fatalf("submit reusing an id: %v", err)
		}
	},
	"error_lease": func(t *testing.T, e *scenarioEnv) {
		c := e.queue(t)
		cl := e.submitAndClaim(t, c, wire.SubmitRequest{TaskType: "s.one"})
		wrong := cl.Lease
		wrong.Token = "not-the-token"
		_, err := c.Heartbeat(ctx, client.HeartbeatRequest{Lease: wrong})
		var ae *client.Error
		if !errors.As(err, &ae) || !errors.Is(err, wire.ErrLeaseMismatch) || ae.Temporary() {
			t.Fatalf("heartbeat with a wrong token: %v", err)
		}
		// The lease ended by a complete: its token is stale.
		if _, err := c.Complete(ctx, client.CompleteRequest{Lease: cl.Lease}); err != nil {
			t.Fatal(err)
		}
		_, err = c.Heartbeat(ctx, client.HeartbeatRequest{Lease: cl.Lease})
		if !errors.As(err, &ae) || ae.Status != http.StatusConflict || ae.Field != "lease_token" || ae.Temporary() {
			t.Fatalf("heartbeat with a stale token: %v", err)
		}
	},
	"worker_graceful_stop": func(t *testing.T, e *scenarioEnv) {
		c := e.queue(t)
		started, release := make(chan string, 1), make(chan struct{})
		var runs atomic.Int32
		w := worker.New(c, worker.Options{Queue: c.Queue(), Wait: time.Second, ShutdownGrace: time.Minute, Logger: quiet})
		w.Handle("s.slow", func(ctx context.Context, task *worker.Task) (json.RawMessage, error) {
			runs.Add(1)
			started <- task.ID
			<-release
			return json.RawMessage(`{"done":true}`), nil
		})
		runCtx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- w.Run(runCtx) }()
		res, err := c.Submit(ctx, client.SubmitRequest{SubmitRequest: wire.SubmitRequest{TaskType: "s.slow"}})
		if err != nil {
			t.Fatal(err)
		}
		<-started
		stop() // as on SIGTERM: no new claims, the running task finishes
		close(release)
		if err := <-done; err != nil {
			t.Fatalf("Run: %v", err)
		}
		got, err := c.Get(ctx, res.Task.ID)
		if err != nil || got.Status != wire.StatusCompleted || got.Attempt != 1 || runs.Load() != 1 {
			t.Fatalf("after the stop: %+v %v, %d runs", got, err, runs.Load())
		}
	},
	"push_delivery_verified": func(t *testing.T, e *scenarioEnv) {
		c := e.queue(t)
		var handled atomic.Int32
		var mu sync.Mutex
		var captured *http.Request
		var capturedBody []byte
		var targetURL string
		target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			d, err := worker.VerifySignature(worker.PushTarget{Secret: e.secret, URL: targetURL, Queue: c.Queue()}, r, body, time.Now())
			if err != nil {
				http.Error(w, err.Error(), http.StatusUnauthorized)
				return
			}
			mu.Lock()
			captured, capturedBody = r.Clone(context.Background()), body
			mu.Unlock()
			handled.Add(1)
			fmt.Fprintf(w, `{"pushed":%q}`, d.TaskID)
		}))
		defer target.Close()
		targetURL = target.URL + "/hook"
		if _, _, err := c.DeclareQueue(ctx, c.Queue(), client.QueueRequest{Target: &client.Target{URL: targetURL, Secret: "dev"}}); err != nil {
			t.Fatal(err)
		}
		res, err := c.Submit(ctx, client.SubmitRequest{SubmitRequest: wire.SubmitRequest{TaskType: "s.push"}})
		if err != nil {
			t.Fatal(err)
		}
		got := e.await(t, c, res.Task.ID, wire.StatusCompleted)
		if string(got.Output) != fmt.Sprintf(`{"pushed":%q}`, res.Task.ID) || handled.Load() != 1 {
			t.Fatalf("output %s after %d handled deliveries", got.Output, handled.Load())
		}
		// The delivery sent again with its body changed is refused before
		// the handler runs.
		mu.Lock()
		tampered := bytes.Replace(capturedBody, []byte(`"s.push"`), []byte(`"s.evil"`), 1)
		h := captured.Header.Clone()
		mu.Unlock()
		req, _ := http.NewRequest(http.MethodPost, targetURL, bytes.NewReader(tampered))
		req.Header = h
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || handled.Load() != 1 || bytes.Equal(tampered, capturedBody) {
			t.Fatalf("tampered delivery: %d, %d handled", resp.StatusCode, handled.Load())
		}
	},
}

// TestTheScenariosAreTheContracts fails when a scenario of
// contract/scenarios.json has no Go test here, or a test here names a
// scenario the file does not have.
func TestTheScenariosAreTheContracts(t *testing.T) {
	raw, err := os.ReadFile("../../contract/scenarios.json")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		About     string `json:"about"`
		Scenarios []struct {
			Name string `json:"name"`
			What string `json:"what"`
		} `json:"scenarios"`
	}
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	inFile := map[string]bool{}
	for _, s := range file.Scenarios {
		if inFile[s.Name] || s.What == "" {
			t.Errorf("scenario %q is named twice or says nothing", s.Name)
		}
		inFile[s.Name] = true
		if scenarios[s.Name] == nil {
			t.Errorf("scenario %s has no Go test (add it to scenarios in shared/client/scenarios_test.go)", s.Name)
		}
	}
	for name := range scenarios {
		if !inFile[name] {
			t.Errorf("Go test %s names no scenario of contract/scenarios.json", name)
		}
	}
	if len(inFile) == 0 {
		t.Fatal("contract/scenarios.json lists no scenario")
	}
}

// TestScenarios runs every scenario against one `s3q dev`.
func TestScenarios(t *testing.T) {
	e := startDev(t)
	names := make([]string, 0, len(scenarios))
	for name := range scenarios {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) { scenarios[name](t, e) })
	}
}

var quiet = slog.New(slog.DiscardHandler)

// scenarioEnv is one `s3q dev` the scenarios share, each in its own queue.
type scenarioEnv struct {
	url    string
	secret string // the push secret s3q dev signs with, named "dev"
	n      atomic.Int32
}

func startDev(t *testing.T) *scenarioEnv {
	t.Helper()
	e := &scenarioEnv{secret: "scenario-secret"}
	runCtx, cancel := context.WithCancel(ctx)
	started, done := make(chan string, 1), make(chan error, 1)
	go func() {
		done <- devserver.Run(runCtx, devserver.Options{
			Addr: "127.0.0.1:0", Out: io.Discard, Logger: quiet, TickInterval: time.Second,
			PushSecrets: map[string]string{"dev": e.secret},
			Started:     func(u string) { started <- u },
		})
	}()
	select {
	case e.url = <-started:
	case err := <-done:
		t.Fatalf("s3q dev: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("s3q dev stopped with %v", err)
		}
	})
	return e
}

// queue returns a client of a queue of the test's own.
func (e *scenarioEnv) queue(t *testing.T) *client.Client {
	t.Helper()
	c, err := client.New(ctx, e.url, client.Options{Queue: fmt.Sprintf("scenario-%d", e.n.Add(1)), HTTPClient: checked(t)})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// submitAndClaim submits req to c's queue and claims it.
func (e *scenarioEnv) submitAndClaim(t *testing.T, c *client.Client, req wire.SubmitRequest) client.Claimed {
	t.Helper()
	res, err := c.Submit(ctx, client.SubmitRequest{SubmitRequest: req})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := c.Claim(ctx, client.ClaimRequest{WorkerID: "w", LeaseFor: time.Minute})
	if err != nil || len(cs) != 1 || cs[0].Task.ID != res.Task.ID {
		t.Fatalf("claim: %+v %v", cs, err)
	}
	return cs[0]
}

// all lists every task of c's queue.
func (e *scenarioEnv) all(t *testing.T, c *client.Client) []client.Task {
	t.Helper()
	var out []client.Task
	for cursor := ""; ; {
		page, err := c.List(ctx, client.ListRequest{Queue: c.Queue(), Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, page.Tasks...)
		if cursor = page.NextCursor; cursor == "" {
			return out
		}
	}
}

// run runs w until the returned stop is called.
func (e *scenarioEnv) run(t *testing.T, w *worker.Worker) (stop func()) {
	t.Helper()
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(runCtx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("worker: %v", err)
		}
	}
}

// await reads task id until it has status want; a minute is for a loaded
// machine (the server acts within a second or two).
func (e *scenarioEnv) await(t *testing.T, c *client.Client, id string, want client.Status) client.Task {
	t.Helper()
	limit := time.Now().Add(time.Minute)
	for {
		got, err := c.Get(ctx, id)
		if err == nil && got.Status == want {
			return got
		}
		if time.Now().After(limit) {
			t.Fatalf("task %s is %s (%v), not %s, after a minute", id, got.Status, err, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
