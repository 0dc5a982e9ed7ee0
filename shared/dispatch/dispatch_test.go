package dispatch_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/api/openapitest"
	"github.com/s3q/s3q/shared/dispatch"
	"github.com/s3q/s3q/shared/pushsig"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/s3local/s3localtest"
	"github.com/s3q/s3q/shared/store"
	"github.com/s3q/s3q/shared/store/memstore"
	"github.com/s3q/s3q/shared/store/storefault"
)

var servers s3localtest.Servers

func TestMain(m *testing.M) { os.Exit(s3localtest.Main(m, &servers)) }

// forEachStore runs f on the mem store, gofakes3 and versitygw.
func forEachStore(t *testing.T, f func(t *testing.T, st store.Store)) {
	t.Run("mem", func(t *testing.T) { t.Parallel(); f(t, memstore.New()) })
	t.Run("gofakes3", func(t *testing.T) { t.Parallel(); f(t, s3localtest.NewStore(t, servers.GoFakeS3)) })
	t.Run("versitygw", func(t *testing.T) { t.Parallel(); f(t, s3localtest.NewStore(t, servers.VersityGW)) })
}

// clock is real time plus an offset the test moves forward: deliveries
// time out in real time, leases and backoffs are jumped over.
type clock struct{ off atomic.Int64 }

func (c *clock) Now() time.Time          { return time.Now().Add(time.Duration(c.off.Load())).UTC() }
func (c *clock) Advance(d time.Duration) { c.off.Add(int64(d)) }

const secret = "s3cret"

// target is a local HTTP target that checks every delivery's signature
// and records it.
type target struct {
	srv *httptest.Server
	t   *testing.T

	mu       sync.Mutex
	got      []dispatch.Payload
	inFlight int
	maxSeen  int
	answer   func(p dispatch.Payload, w http.ResponseWriter, r *http.Request)
}

func newTarget(t *testing.T, clk *clock, answer func(p dispatch.Payload, w http.ResponseWriter, r *http.Request)) *target {
	tg := &target{t: t, answer: answer}
	tg.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		openapitest.CheckDelivery(t, r, body) // the document's webhook describes it
		if _, err := pushsig.Verify(secret, pushsig.Expect{URL: tg.srv.URL, Queue: r.Header.Get(pushsig.HeaderQueue), Tolerance: time.Minute}, r.Method, r.Header, body, clk.Now()); err != nil {
			t.Errorf("target: %v", err)
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		var p dispatch.Payload
		if err := json.Unmarshal(body, &p); err != nil {
			t.Errorf("target: payload: %v", err)
		}
		if r.Header.Get(pushsig.HeaderTaskID) != p.Task.ID || r.Header.Get(pushsig.HeaderAttempt) != strconv.Itoa(p.Task.Attempt) || r.Header.Get(pushsig.HeaderQueue) != p.Task.Queue {
			t.Errorf("target: headers %v do not match task %s attempt %d", r.Header, p.Task.ID, p.Task.Attempt)
		}
		if p.Lease.Token == "" || bytes.Count(body, []byte(p.Lease.Token)) != 1 {
			t.Errorf("target: the token belongs in the lease only: %s", body)
		}
		tg.mu.Lock()
		tg.got = append(tg.got, p)
		tg.inFlight++
		tg.maxSeen = max(tg.maxSeen, tg.inFlight)
		tg.mu.Unlock()
		defer func() {
			tg.mu.Lock()
			tg.inFlight--
			tg.mu.Unlock()
		}()
		if tg.answer != nil {
			tg.answer(p, w, r)
			return
		}
		fmt.Fprintf(w, `{"done":%q}`, p.Task.ID)
	}))
	t.Cleanup(tg.srv.Close)
	return tg
}

func (tg *target) deliveries() []dispatch.Payload {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	return append([]dispatch.Payload(nil), tg.got...)
}

type env struct {
	st    store.Store
	q     *queue.Queue
	decls *queues.Registry
	clk   *clock
	pq    dispatch.PushQueue
	// declared is the push queue last declared (declare).
	declared dispatch.PushQueue
}

// declare declares e.pq with its target, max_concurrency and timeout
// (when it changed since the last time), where dispatchers find it.
func (e *env) declare() {
	if e.declared == e.pq || e.pq.Target == (queues.Target{}) {
		return
	}
	d := queues.Declaration{Name: e.pq.Name, MaxConcurrency: e.pq.MaxConcurrency, Target: &e.pq.Target}
	if e.pq.Timeout > 0 {
		timeout := e.pq.Timeout
		d.Timeout = &timeout
	}
	if _, _, err := e.decls.Declare(context.Background(), d, e.clk.Now()); err != nil {
		panic(err)
	}
	e.declared = e.pq
}

// targets declares e.pq and returns the declared push queues of e.q.
func (e *env) targets() dispatch.Targets {
	e.declare()
	return dispatch.NewDeclared(e.decls, 0)
}

func newEnv(st store.Store, pq dispatch.PushQueue) *env {
	q, decls := queues.New(st, queues.Options{AllowInsecureTargets: true})
	return &env{st: st, q: q, decls: decls, clk: &clock{}, pq: pq}
}

// dispatcher returns a fresh dispatcher (a new process) over st, for the
// push queue e.pq, declared.
func (e *env) dispatcher(st store.Store, lambda dispatch.Deliverer) *dispatch.Dispatcher {
	e.declare()
	q, decls := queues.New(st, queues.Options{Core: queue.Options{ListCacheFor: -1}})
	return dispatch.New(q, dispatch.NewDeclared(decls, 0), dispatch.Options{
		Now:    e.clk.Now,
		Soon:   -1, // a run ends when nothing is due now (runner_test.go stays)
		Logger: slog.New(slog.DiscardHandler),
		HTTP:   dispatch.NewHTTP(dispatch.StaticSecrets{"s3q/secret": secret}, true),
		Lambda: lambda,
	})
}

func (e *env) submit(t *testing.T, req queue.SubmitRequest) queue.Task {
	t.Helper()
	req.Queue = e.pq.Name
	e.declare()
	if req.TaskType == "" {
		req.TaskType = "push.test"
	}
	r, err := e.q.Submit(context.Background(), req, e.clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	return r.Task
}

func (e *env) get(t *testing.T, id string) queue.Task {
	t.Helper()
	task, err := e.q.In(e.pq.Name).Get(context.Background(), id) // ids are per queue

	if err != nil {
		t.Fatal(err)
	}
	return task
}

func run(t *testing.T, d *dispatch.Dispatcher, name string) dispatch.Report {
	t.Helper()
	rep, err := d.Run(context.Background(), name, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// runMany runs n dispatchers of e over st at once, as n Lambdas of one
// wake would.
func (e *env) runMany(t *testing.T, st store.Store, n int) {
	t.Helper()
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := e.dispatcher(st, nil).Run(context.Background(), "", time.Time{}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
}

// peak is the most deliveries the target had in flight at once.
func (tg *target) peak() int {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	return tg.maxSeen
}

// idleRuns runs d three times, a minute apart, and returns the requests
// st counted for each run.
func idleRuns(t *testing.T, e *env, st *store.Counting, d *dispatch.Dispatcher) []int64 {
	t.Helper()
	var per []int64
	for range 3 {
		e.clk.Advance(time.Minute)
		st.Reset()
		run(t, d, "")
		per = append(per, st.Counts().Total())
	}
	t.Logf("requests per idle minute run: %v", per)
	return per
}

// newHTTPEnv returns an env over st whose push queue "push" delivers to a
// new target (answering with answer, nil for the default) with a 10s
// timeout: the setup most HTTP target tests share.
func newHTTPEnv(t *testing.T, st store.Store, answer func(p dispatch.Payload, w http.ResponseWriter, r *http.Request)) (*env, *target) {
	e := newEnv(st, dispatch.PushQueue{Name: "push"})
	tg := newTarget(t, e.clk, answer)
	e.pq = httpQueue(tg.srv.URL, 10*time.Second)
	return e, tg
}

func httpQueue(url string, timeout time.Duration) dispatch.PushQueue {
	return dispatch.PushQueue{Name: "push", Target: queues.Target{URL: url, Secret: "s3q/secret"}, Timeout: queue.Duration(timeout)}
}

func TestHTTPTargetReceivesASignedDeliveryAndItsAnswerCompletesTheTask(t *testing.T) {
	forEachStore(t, func(t *testing.T, st store.Store) {
		e, tg := newHTTPEnv(t, st, nil)
		task := e.submit(t, queue.SubmitRequest{Input: json.RawMessage(`{"n":1}`)})
		rep := run(t, e.dispatcher(st, nil), "")
		if rep.Delivered != 1 || rep.Completed != 1 {
			t.Fatalf("report %+v", rep)
		}
		got := e.get(t, task.ID)
		if got.Status != queue.StatusCompleted || string(got.Output) != fmt.Sprintf(`{"done":%q}`, task.ID) {
			t.Fatalf("task %s output %s", got.Status, got.Output)
		}
		d := tg.deliveries()
		if len(d) != 1 || string(d[0].Task.Input) != `{"n":1}` || d[0].Task.Attempt != 1 || !d[0].Deadline.Before(d[0].Lease.ExpiresAt) {
			t.Fatalf("deliveries %+v", d)
		}
	})
}

func TestHTTP503WithRetryAfterRetriesAfterThatDelay(t *testing.T) {
	forEachStore(t, func(t *testing.T, st store.Store) {
		e := newEnv(st, dispatch.PushQueue{Name: "push"})
		tg := newTarget(t, e.clk, func(p dispatch.Payload, w http.ResponseWriter, _ *http.Request) {
			if p.Task.Attempt == 1 {
				w.Header().Set("Retry-After", "30")
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			fmt.Fprint(w, "plain text")
		})
		e.pq = httpQueue(tg.srv.URL, 10*time.Second)
		task := e.submit(t, queue.SubmitRequest{})
		d := e.dispatcher(st, nil)
		before := e.clk.Now()
		if rep := run(t, d, "push"); rep.Retried != 1 {
			t.Fatalf("report %+v", rep)
		}
		got := e.get(t, task.ID)
		if got.Status != queue.StatusPending || got.AvailableAt.Before(before.Add(30*time.Second)) || got.AvailableAt.After(e.clk.Now().Add(30*time.Second)) {
			t.Fatalf("after 503: %s available_at %s (now %s)", got.Status, got.AvailableAt, before)
		}
		if rep := run(t, d, "push"); rep.Delivered != 0 {
			t.Fatalf("delivered before Retry-After: %+v", rep)
		}
		e.clk.Advance(31 * time.Second)
		if rep := run(t, d, "push"); rep.Completed != 1 {
			t.Fatalf("report %+v", rep)
		}
		got = e.get(t, task.ID)
		if got.Status != queue.StatusCompleted || got.Attempt != 2 || string(got.Output) != `"plain text"` {
			t.Fatalf("task %s attempt %d output %s", got.Status, got.Attempt, got.Output)
		}
	})
}

func TestHTTP4xxFailsTheTaskWithoutRetry(t *testing.T) {
	forEachStore(t, func(t *testing.T, st store.Store) {
		e := newEnv(st, dispatch.PushQueue{Name: "push"})
		tg := newTarget(t, e.clk, func(_ dispatch.Payload, w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "bad input", http.StatusUnprocessableEntity)
		})
		e.pq = httpQueue(tg.srv.URL, 10*time.Second)
		task := e.submit(t, queue.SubmitRequest{MaxAttempts: 5})
		if rep := run(t, e.dispatcher(st, nil), ""); rep.Failed != 1 || rep.Retried != 0 {
			t.Fatalf("report %+v", rep)
		}
		got := e.get(t, task.ID)
		if got.Status != queue.StatusFailed || got.Attempt != 1 {
			t.Fatalf("task %s attempt %d: %s", got.Status, got.Attempt, got.LastError)
		}
	})
}

func TestARedirectIsNotFollowedAndFailsTheTask(t *testing.T) {
	e := newEnv(memstore.New(), dispatch.PushQueue{Name: "push"})
	tg := newTarget(t, e.clk, func(_ dispatch.Payload, w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/elsewhere", http.StatusTemporaryRedirect)
	})
	e.pq = httpQueue(tg.srv.URL, 10*time.Second)
	task := e.submit(t, queue.SubmitRequest{})
	run(t, e.dispatcher(e.st, nil), "")
	if got := e.get(t, task.ID); got.Status != queue.StatusFailed || len(tg.deliveries()) != 1 {
		t.Fatalf("task %s after %d deliveries", got.Status, len(tg.deliveries()))
	}
}

func TestATimedOutDeliveryLetsTheLeaseLapseAndTheNextAttemptIsDelivered(t *testing.T) {
	forEachStore(t, func(t *testing.T, st store.Store) {
		e := newEnv(st, dispatch.PushQueue{Name: "push"})
		tg := newTarget(t, e.clk, func(p dispatch.Payload, w http.ResponseWriter, r *http.Request) {
			if p.Task.Attempt == 1 {
				<-r.Context().Done() // hangs until the dispatcher gives up
				return
			}
			fmt.Fprint(w, `{}`)
		})
		e.pq = httpQueue(tg.srv.URL, time.Second)
		task := e.submit(t, queue.SubmitRequest{})
		d := e.dispatcher(st, nil)
		if rep := run(t, d, ""); rep.Lapsed != 1 {
			t.Fatalf("report %+v", rep)
		}
		if got := e.get(t, task.ID); got.Status != queue.StatusRunning || got.Attempt != 1 {
			t.Fatalf("after the time-out: %s attempt %d", got.Status, got.Attempt)
		}
		e.clk.Advance(2 * time.Second)
		if rep := run(t, d, ""); rep.Completed != 1 {
			t.Fatalf("report %+v", rep)
		}
		if got := e.get(t, task.ID); got.Status != queue.StatusCompleted || got.Attempt != 2 {
			t.Fatalf("task %s attempt %d", got.Status, got.Attempt)
		}
	})
}

func TestATaskPastItsDeadlineOrCancelledIsNeverDelivered(t *testing.T) {
	forEachStore(t, func(t *testing.T, st store.Store) {
		e, tg := newHTTPEnv(t, st, nil)
		exp := e.clk.Now().Add(time.Second)
		expiring := e.submit(t, queue.SubmitRequest{ExpiresAt: &exp})
		cancelled := e.submit(t, queue.SubmitRequest{})
		if _, err := e.q.Cancel(context.Background(), cancelled.Ref(), e.clk.Now()); err != nil {
			t.Fatal(err)
		}
		e.clk.Advance(2 * time.Second)
		if rep := run(t, e.dispatcher(st, nil), ""); rep.Delivered != 0 {
			t.Fatalf("report %+v", rep)
		}
		if n := len(tg.deliveries()); n != 0 {
			t.Fatalf("%d deliveries", n)
		}
		if got := e.get(t, expiring.ID); got.Status != queue.StatusExpired {
			t.Fatalf("expiring task is %s", got.Status)
		}
		if got := e.get(t, cancelled.ID); got.Status != queue.StatusCancelled {
			t.Fatalf("cancelled task is %s", got.Status)
		}
	})
}

func TestMaxConcurrencyIsNeverExceededBy16RacingDispatchers(t *testing.T) {
	forEachStore(t, func(t *testing.T, st store.Store) {
		e := newEnv(st, dispatch.PushQueue{Name: "push"})
		tg := newTarget(t, e.clk, func(_ dispatch.Payload, w http.ResponseWriter, _ *http.Request) {
			time.Sleep(20 * time.Millisecond)
			fmt.Fprint(w, `{}`)
		})
		e.pq = httpQueue(tg.srv.URL, 10*time.Second)
		e.pq.MaxConcurrency = 3
		const tasks = 24
		ids := make([]string, tasks)
		for i := range ids {
			ids[i] = e.submit(t, queue.SubmitRequest{}).ID
		}
		for round := 0; round < 5; round++ {
			e.runMany(t, st, 16)
			if len(tg.deliveries()) >= tasks {
				break
			}
		}
		maxSeen := tg.peak()
		if maxSeen > 3 {
			t.Fatalf("%d deliveries at once, max_concurrency 3", maxSeen)
		}
		seen := map[string]int{}
		for _, p := range tg.deliveries() {
			seen[fmt.Sprintf("%s/%d", p.Task.ID, p.Task.Attempt)]++
		}
		for k, n := range seen {
			if n > 1 {
				t.Errorf("%s delivered %d times", k, n)
			}
		}
		for _, id := range ids {
			if got := e.get(t, id); got.Status != queue.StatusCompleted {
				t.Errorf("task %s is %s", id, got.Status)
			}
		}
		t.Logf("max in flight %d, %d deliveries", maxSeen, len(tg.deliveries()))
	})
}

// TestEachAttemptIsDeliveredAtMostOnceUnderCrashes kills a dispatcher at
// each of its writes (slot, claim, complete, marker, slot release), before
// and after the write lands, then runs a fresh one past the lease: the
// task ends completed and no attempt was delivered twice.
func TestEachAttemptIsDeliveredAtMostOnceUnderCrashes(t *testing.T) {
	forEachStore(t, func(t *testing.T, st store.Store) {
		for _, declared := range []bool{false, true} {
			for _, mode := range []storefault.FaultMode{storefault.FailBefore, storefault.FailAfter, storefault.LoseAnswer} {
				for n := 1; n <= 6; n++ {
					t.Run(fmt.Sprintf("declared_%v_mode%d_write%d", declared, mode, n), func(t *testing.T) {
						e := newEnv(st, dispatch.PushQueue{Name: fmt.Sprintf("crash-%v-%d-%d", declared, mode, n)})
						tg := newTarget(t, e.clk, nil)
						e.pq.Target = queues.Target{URL: tg.srv.URL, Secret: "s3q/secret"}
						e.pq.Timeout = queue.Duration(2 * time.Second)
						e.pq.MaxConcurrency = 1
						if declared {
							e.declare()
						}
						task := e.submit(t, queue.SubmitRequest{MaxAttempts: 10})
						f := storefault.New(st)
						f.Fail(n, mode)
						_, _ = e.dispatcher(f, nil).Run(context.Background(), "", time.Time{})
						for round := 0; round < 4 && e.get(t, task.ID).Status != queue.StatusCompleted; round++ {
							e.clk.Advance(3 * time.Second)
							run(t, e.dispatcher(st, nil), "")
						}
						got := e.get(t, task.ID)
						if got.Status != queue.StatusCompleted {
							t.Fatalf("task %s attempt %d: %s", got.Status, got.Attempt, got.LastError)
						}
						seen := map[int]int{}
						for _, p := range tg.deliveries() {
							seen[p.Task.Attempt]++
							if seen[p.Task.Attempt] > 1 {
								t.Fatalf("attempt %d delivered twice", p.Task.Attempt)
							}
						}
					})
				}
			}
		}
	})
}

// A declared queue with a target is a push queue: its max_concurrency is
// kept by the claim's own slots, across 16 racing dispatchers.
func TestDeclaredPushQueueIsDeliveredWithinItsMaxConcurrency(t *testing.T) {
	forEachStore(t, func(t *testing.T, st store.Store) {
		e := newEnv(st, dispatch.PushQueue{Name: "declared"})
		e.q, e.decls = queues.New(st, queues.Options{AllowInsecureTargets: true})
		tg := newTarget(t, e.clk, func(_ dispatch.Payload, w http.ResponseWriter, _ *http.Request) {
			time.Sleep(20 * time.Millisecond)
			fmt.Fprint(w, `{}`)
		})
		timeout := queue.Duration(10 * time.Second)
		if _, _, err := e.decls.Declare(context.Background(), queues.Declaration{
			Name: "declared", MaxConcurrency: 2, Timeout: &timeout,
			Target: &queues.Target{URL: tg.srv.URL, Secret: "s3q/secret"},
		}, e.clk.Now()); err != nil {
			t.Fatal(err)
		}
		const tasks = 12
		ids := make([]string, tasks)
		for i := range ids {
			ids[i] = e.submit(t, queue.SubmitRequest{}).ID
		}
		var wg sync.WaitGroup
		for range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				q, decls := queues.New(st, queues.Options{Core: queue.Options{ListCacheFor: -1}})
				d := dispatch.New(q, dispatch.NewDeclared(decls, 0), dispatch.Options{
					Now: e.clk.Now, Logger: slog.New(slog.DiscardHandler),
					HTTP: dispatch.NewHTTP(dispatch.StaticSecrets{"s3q/secret": secret}, true),
				})
				rep, err := d.Run(context.Background(), "", time.Time{})
				if err != nil {
					t.Error(err)
				}
				_ = rep
			}()
		}
		wg.Wait()
		maxSeen := tg.peak()
		if maxSeen > 2 {
			t.Fatalf("%d deliveries at once, max_concurrency 2", maxSeen)
		}
		for _, id := range ids {
			if got := e.get(t, id); got.Status != queue.StatusCompleted {
				t.Errorf("task %s is %s", id, got.Status)
			}
		}
	})
}
