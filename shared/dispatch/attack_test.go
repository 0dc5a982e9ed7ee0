package dispatch_test

import (
	"context"
	"encoding/json"
	"fmt"
	awslambdago "github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/dispatch"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/store"
	"github.com/s3q/s3q/shared/store/memstore"
	"github.com/s3q/s3q/shared/store/storefault"
	"github.com/s3q/s3q/shared/worker"
)

// A synchronous Invoke whose connection breaks after the function was
// invoked (or whose answer is a 5xx) must not be sent again by the SDK's
// retryer: that would run the same attempt twice.
func TestALambdaInvokeThatBreaksAfterReachingTheFunctionIsNotSentAgain(t *testing.T) {
	for _, name := range []string{"reset", "502"} {
		t.Run(name, func(t *testing.T) {
			var mu sync.Mutex
			calls := 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				calls++
				mu.Unlock()
				if name == "502" {
					w.WriteHeader(http.StatusBadGateway)
					return
				}
				conn, _, err := w.(http.Hijacker).Hijack()
				if err == nil {
					_ = conn.Close()
				}
			}))
			defer srv.Close()
			e := newEnv(memstore.New(), dispatch.PushQueue{Name: "fn", Target: queues.Target{Lambda: "target"}})
			task := e.submit(t, queue.SubmitRequest{MaxAttempts: 5})
			run(t, e.dispatcher(e.st, &dispatch.Lambda{Client: lambdaClient(srv.URL)}), "")
			mu.Lock()
			n := calls
			mu.Unlock()
			if n != 1 {
				t.Fatalf("attempt 1 was invoked %d times", n)
			}
			if got := e.get(t, task.ID); got.Status != queue.StatusPending || got.Attempt != 1 {
				t.Fatalf("task %s attempt %d", got.Status, got.Attempt)
			}
		})
	}
}

var _ = context.Background

// A complete or fail after a delivery whose S3 write fails once (a 503, or
// an answer lost on the network) is written again under the same lease:
// the task is not left to lapse and delivered once more as the next
// attempt, and a 503's Retry-After is kept.
func TestAnOutcomeWriteThatFailsOnceIsRetriedAndTheTaskIsNotDeliveredAgain(t *testing.T) {
	forEachStore(t, func(t *testing.T, st store.Store) {
		for _, mode := range []storefault.FaultMode{storefault.FailBefore, storefault.LoseAnswer} {
			for _, outcome := range []string{"complete", "fail"} {
				t.Run(fmt.Sprintf("%s_mode%d", outcome, mode), func(t *testing.T) {
					f := storefault.New(st)
					e := newEnv(st, dispatch.PushQueue{Name: fmt.Sprintf("lost-%s-%d", outcome, mode)})
					tg := newTarget(t, e.clk, func(p dispatch.Payload, w http.ResponseWriter, _ *http.Request) {
						// The claim is written: arm the next write of the record.
						f.FailMatching(storefault.OpPutIfMatch, queue.TaskKey(p.Task.Queue, p.Task.ID), mode, 1)
						if outcome == "fail" {
							w.Header().Set("Retry-After", "30")
							w.WriteHeader(http.StatusServiceUnavailable)
							return
						}
						fmt.Fprint(w, `{"ok":true}`)
					})
					e.pq.Target = queues.Target{URL: tg.srv.URL, Secret: "s3q/secret"}
					e.pq.Timeout = queue.Duration(10 * time.Second)
					task := e.submit(t, queue.SubmitRequest{MaxAttempts: 5})
					before := e.clk.Now()
					rep := run(t, e.dispatcher(f, nil), "")
					if f.Hits() != 1 || rep.Errors != 0 {
						t.Fatalf("hits %d, report %+v", f.Hits(), rep)
					}
					got := e.get(t, task.ID)
					switch outcome {
					case "complete":
						if got.Status != queue.StatusCompleted || got.Attempt != 1 {
							t.Fatalf("task %s attempt %d", got.Status, got.Attempt)
						}
					case "fail":
						if got.Status != queue.StatusPending || got.AvailableAt.Before(before.Add(30*time.Second)) {
							t.Fatalf("task %s available %s (now %s)", got.Status, got.AvailableAt, before)
						}
					}
					e.clk.Advance(11 * time.Second)
					run(t, e.dispatcher(st, nil), "")
					if n := len(tg.deliveries()); n != 1 {
						t.Fatalf("%d deliveries", n)
					}
				})
			}
		}
	})
}

// A task submitted less than a second after the wake of an earlier one
// is not left to the minute rule: the run that wake started may already
// have found nothing more, so its wake is held back to the end of the
// second, not dropped.
func TestASubmitWithinTheSecondOfAnotherStillWakesDispatch(t *testing.T) {
	now := time.Date(2026, 1, 28, 9, 0, 0, 0, time.UTC)
	clock := now
	rec := &recorder{}
	w := &dispatch.Limited{Next: rec, Now: func() time.Time { return clock }}
	w.Wake(context.Background(), dispatch.Wake{Queue: "push"})
	clock = now.Add(600 * time.Millisecond)
	w.Wake(context.Background(), dispatch.Wake{Queue: "push"})
	clock = now.Add(700 * time.Millisecond)
	w.Wake(context.Background(), dispatch.Wake{Queue: "push"})
	if len(rec.got) != 2 || !rec.got[0].At.IsZero() || !rec.got[1].At.Equal(now.Add(time.Second)) {
		t.Fatalf("wakes %+v, want one now and one at %s", rec.got, now.Add(time.Second))
	}
}

// Outside s3q dev a URL target may not reach this host or the instance
// metadata service: an address that is loopback, link-local (169.254.0.0/16,
// the metadata and container credential endpoints) or unspecified, also
// in its NAT64 and 6to4 forms, is refused when the connection is made
// (after DNS), and the task fails without retry. Nothing is sent.
func TestAURLTargetOnLoopbackOrLinkLocalIsRefusedOutsideDev(t *testing.T) {
	var mu sync.Mutex
	hits := 0
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits++
		mu.Unlock()
		fmt.Fprint(w, `{}`)
	}))
	defer srv.Close()
	for _, url := range []string{srv.URL, "https://169.254.169.254/latest/meta-data/", "https://[::1]:1/", "https://0.0.0.0:1/",
		// The same addresses through NAT64 (64:ff9b::/96, 64:ff9b:1::/48) and 6to4 (2002::/16).
		"https://[64:ff9b::7f00:1]:1/", "https://[64:ff9b::a9fe:a9fe]/latest/meta-data/", "https://[64:ff9b:1::a9fe:a9fe]/",
		"https://[2002:7f00:1::1]:1/", "https://[2002:a9fe:a9fe::1]/latest/meta-data/"} {
		t.Run(url, func(t *testing.T) {
			e := newEnv(memstore.New(), dispatch.PushQueue{Name: "push", Target: queues.Target{URL: url, Secret: "s3q/secret"}})
			task := e.submit(t, queue.SubmitRequest{MaxAttempts: 5})
			h := dispatch.NewHTTP(dispatch.StaticSecrets{"s3q/secret": secret}, false)
			tr, _ := h.Client.Transport.(*http.Transport)
			if tr == nil {
				tr = http.DefaultTransport.(*http.Transport).Clone()
				h.Client.Transport = tr
			}
			tr.TLSClientConfig = srv.Client().Transport.(*http.Transport).TLSClientConfig
			d := dispatch.New(e.q, e.targets(), dispatch.Options{Now: e.clk.Now, Soon: -1, Logger: slog.New(slog.DiscardHandler), HTTP: h})
			run(t, d, "")
			if got := e.get(t, task.ID); got.Status != queue.StatusFailed || !strings.Contains(got.LastError, "refused") {
				t.Fatalf("task %s: %q", got.Status, got.LastError)
			}
		})
	}
	mu.Lock()
	defer mu.Unlock()
	if hits != 0 {
		t.Fatalf("the loopback target got %d requests", hits)
	}
}

// A 2xx whose body is cut off (the connection closes before
// Content-Length bytes) does not complete the task with half an answer:
// it is a retryable failure.
func TestA2xxWhoseBodyIsCutOffDoesNotCompleteTheTask(t *testing.T) {
	e := newEnv(memstore.New(), dispatch.PushQueue{Name: "push"})
	tg := newTarget(t, e.clk, func(_ dispatch.Payload, w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", "100")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, `"partial`)
	})
	e.pq = httpQueue(tg.srv.URL, 10*time.Second)
	task := e.submit(t, queue.SubmitRequest{MaxAttempts: 5})
	run(t, e.dispatcher(e.st, nil), "")
	if got := e.get(t, task.ID); got.Status != queue.StatusPending || got.Attempt != 1 || got.Output != nil {
		t.Fatalf("task %s attempt %d output %s: %q", got.Status, got.Attempt, got.Output, got.LastError)
	}
}

// The minute rule's run over an idle deployment makes the requests the
// README counts: one LIST of queues/ and a GET per declared queue, then
// per push queue a GET of its declaration and one LIST per index prefix
// (deadline/, ready/). The second look after 150ms is for a wake's run
// (a task just submitted by another process), not for the minute rule.
func TestTheMinuteRulesRunOverAnIdleDeploymentMakesTheREADMEsRequests(t *testing.T) {
	st := store.NewCounting(memstore.New())
	e := newEnv(st, dispatch.PushQueue{Name: "push"})
	e.pq = httpQueue("http://127.0.0.1:1/", 10*time.Second)
	e.declare()
	if _, _, err := e.decls.Declare(context.Background(), queues.Declaration{Name: "pull"}, e.clk.Now()); err != nil {
		t.Fatal(err)
	}
	q, decls := queues.New(st, queues.Options{Core: queue.Options{ListCacheFor: 100 * time.Millisecond}})
	d := dispatch.New(q, dispatch.NewDeclared(decls, 0), dispatch.Options{
		Now: e.clk.Now, Soon: -1, Logger: slog.New(slog.DiscardHandler), RecheckAfter: 150 * time.Millisecond,
	})
	per := idleRuns(t, e, st, d)
	const want = 1 + 2 + 1 + 2
	for _, n := range per {
		if n > want {
			t.Fatalf("requests per idle minute run %v, want at most %d", per, want)
		}
	}
}

// A LambdaHandler handler whose output is not JSON completes its task as
// an HTTP target's plain-text answer does (the text as a JSON string),
// instead of failing in the Lambda runtime's encoding, retried until its
// attempts are spent, each attempt running the handler again.
func TestALambdaHandlersPlainTextOutputCompletesTheTaskOnce(t *testing.T) {
	var mu sync.Mutex
	runs := 0
	le := newLambdaEndpoint(t, map[string]awslambdago.Handler{
		"target": awslambdago.NewHandler(worker.LambdaHandler(map[string]worker.Handler{
			"text": func(context.Context, *worker.Task) (json.RawMessage, error) {
				mu.Lock()
				runs++
				mu.Unlock()
				return json.RawMessage("plain text"), nil
			},
		})),
	})
	e := newEnv(memstore.New(), dispatch.PushQueue{Name: "fn", Target: queues.Target{Lambda: "target"}})
	task := e.submit(t, queue.SubmitRequest{TaskType: "text", MaxAttempts: 3})
	d := e.dispatcher(e.st, &dispatch.Lambda{Client: lambdaClient(le.srv.URL)})
	for range 3 {
		run(t, d, "")
		e.clk.Advance(2 * time.Hour)
	}
	got := e.get(t, task.ID)
	if got.Status != queue.StatusCompleted || string(got.Output) != `"plain text"` || runs != 1 {
		t.Fatalf("task %s output %s after %d runs: %q", got.Status, got.Output, runs, got.LastError)
	}
}

// A push queue whose delivery lease is longer than a whole dispatch run
// (a 10m timeout under the stack's default 300s function) can never be
// claimed: the minute rule's run says so (an error in its report, the
// push_outcome_errors_total metric, and an error log line) instead of
// skipping the queue in silence forever.
func TestAQueueWhoseLeaseCannotFitInADispatchRunIsReportedNotSkippedInSilence(t *testing.T) {
	var logs strings.Builder
	e := newEnv(memstore.New(), dispatch.PushQueue{Name: "long"})
	e.pq = httpQueue("http://127.0.0.1:1/", 10*time.Minute)
	e.pq.Name = "long"
	e.submit(t, queue.SubmitRequest{})
	d := dispatch.New(e.q, e.targets(), dispatch.Options{
		Now: e.clk.Now, Soon: -1, Logger: slog.New(slog.NewJSONHandler(&logs, nil)),
	})
	rep, err := d.Run(context.Background(), "", e.clk.Now().Add(299*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Errors != 1 || !strings.Contains(logs.String(), `"level":"ERROR"`) || !strings.Contains(logs.String(), "dispatchTimeoutSeconds") {
		t.Fatalf("report %+v, log %s", rep, logs.String())
	}
}

// jumpStore moves the clock forward when the claim writes the record: the
// task's deadline passes between its claim and its delivery.
type jumpStore struct {
	store.Store
	clk  *clock
	by   time.Duration
	once sync.Once
}

func (j *jumpStore) PutIfMatch(ctx context.Context, key string, body []byte, etag string, opts ...store.PutOption) (string, error) {
	etag, err := j.Store.PutIfMatch(ctx, key, body, etag, opts...)
	if queue.IsTaskKey(key) {
		j.once.Do(func() { j.clk.Advance(j.by) })
	}
	return etag, err
}

// A task whose deadline passes between its claim and its delivery is
// handed back undelivered, and then expires.
func TestATaskWhoseDeadlinePassesAfterItsClaimIsHandedBackAndExpires(t *testing.T) {
	forEachStore(t, func(t *testing.T, st store.Store) {
		e, tg := newHTTPEnv(t, st, nil)
		exp := e.clk.Now().Add(time.Second)
		task := e.submit(t, queue.SubmitRequest{ExpiresAt: &exp})
		rep := run(t, e.dispatcher(&jumpStore{Store: st, clk: e.clk, by: 2 * time.Second}, nil), "push")
		if rep.Skipped != 1 || rep.Delivered != 0 || rep.Errors != 0 {
			t.Fatalf("report %+v", rep)
		}
		run(t, e.dispatcher(st, nil), "push")
		if got := e.get(t, task.ID); got.Status != queue.StatusExpired || len(tg.deliveries()) != 0 {
			t.Fatalf("task %s after %d deliveries", got.Status, len(tg.deliveries()))
		}
	})
}

// 16 racing dispatchers, rounds apart by more than the lease (real time:
// a jump of the test clock ends a lease before the target has seen its
// connection close), with a
// target that lets every first attempt time out: a lapsed delivery keeps
// its slot until its lease ends, so max_concurrency holds throughout.
func TestMaxConcurrencyHoldsUnder16RacingDispatchersWithLapsedLeases(t *testing.T) {
	forEachStore(t, func(t *testing.T, st store.Store) {
		for _, declared := range []bool{false, true} {
			t.Run(fmt.Sprintf("declared_%v", declared), func(t *testing.T) { lapsedRace(t, st, declared) })
		}
	})
}

func lapsedRace(t *testing.T, st store.Store, declared bool) {
	{
		e := newEnv(st, dispatch.PushQueue{Name: fmt.Sprintf("lapsed-%v", declared)})
		// live holds the leases of the deliveries the target is working
		// on; maxLive is the most of them whose lease had not ended.
		var (
			liveMu  sync.Mutex
			live    = map[string]time.Time{}
			maxLive int
			overlap []string
		)
		tg := newTarget(t, e.clk, func(p dispatch.Payload, w http.ResponseWriter, r *http.Request) {
			key := fmt.Sprintf("%s/%d", p.Task.ID, p.Task.Attempt)
			liveMu.Lock()
			now, n := e.clk.Now(), 1
			for k, until := range live {
				if until.After(now) {
					n++
				} else {
					overlap = append(overlap, fmt.Sprintf("%s started while %s was still open %s after its lease", key, k, now.Sub(until)))
				}
			}
			maxLive = max(maxLive, n)
			live[key] = p.Lease.ExpiresAt
			liveMu.Unlock()
			defer func() { liveMu.Lock(); delete(live, key); liveMu.Unlock() }()
			if p.Task.Attempt == 1 {
				<-r.Context().Done()
				return
			}
			time.Sleep(10 * time.Millisecond)
			fmt.Fprint(w, `{}`)
		})
		e.pq = httpQueue(tg.srv.URL, 500*time.Millisecond)
		e.pq.MaxConcurrency = 2
		e.pq.Name = fmt.Sprintf("lapsed-%v", declared)
		if declared {
			e.declare()
		}
		const tasks = 6
		ids := make([]string, tasks)
		for i := range ids {
			ids[i] = e.submit(t, queue.SubmitRequest{MaxAttempts: 10}).ID
		}
		for round := 0; round < 12; round++ {
			e.runMany(t, st, 16)
			time.Sleep(100 * time.Millisecond) // past the lapsed leases, in real time
			if n := len(tg.deliveries()); n >= 2*tasks {
				break
			}
		}
		maxSeen := tg.peak()
		liveMu.Lock()
		defer liveMu.Unlock()
		if maxLive > 2 {
			t.Fatalf("%d deliveries with live leases at once, max_concurrency 2", maxLive)
		}
		// A target that has not yet seen its cut-off connection close may
		// still be open a moment after its lease: logged, not a breach.
		for _, o := range overlap {
			t.Log(o)
		}
		seen := map[string]int{}
		for _, p := range tg.deliveries() {
			if seen[fmt.Sprintf("%s/%d", p.Task.ID, p.Task.Attempt)]++; seen[fmt.Sprintf("%s/%d", p.Task.ID, p.Task.Attempt)] > 1 {
				t.Errorf("%s attempt %d delivered twice", p.Task.ID, p.Task.Attempt)
			}
		}
		done := 0
		for _, id := range ids {
			if e.get(t, id).Status == queue.StatusCompleted {
				done++
			}
		}
		t.Logf("max in flight %d, %d deliveries, %d/%d completed", maxSeen, len(tg.deliveries()), done, tasks)
	}
}

// A target that trickles its answer is cut off at the delivery's deadline
// (the lease lapses, the run does not hang past the lease), and one whose
// answer is larger than an output may be fails the task without reading
// more than the limit.
func TestASlowOrHugeAnswerEndsWithinTheLease(t *testing.T) {
	e := newEnv(memstore.New(), dispatch.PushQueue{Name: "push"})
	tg := newTarget(t, e.clk, func(p dispatch.Payload, w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		if p.Task.TaskType == "huge" {
			chunk := []byte(strings.Repeat("x", 64<<10))
			for i := 0; i < 1600 && r.Context().Err() == nil; i++ { // 100 MiB, unless cut off
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
			return
		}
		for r.Context().Err() == nil {
			_, _ = w.Write([]byte(" "))
			w.(http.Flusher).Flush()
			time.Sleep(50 * time.Millisecond)
		}
	})
	e.pq = httpQueue(tg.srv.URL, time.Second)
	slow := e.submit(t, queue.SubmitRequest{TaskType: "slow"})
	huge := e.submit(t, queue.SubmitRequest{TaskType: "huge"})
	start := time.Now()
	rep := run(t, e.dispatcher(e.st, nil), "")
	if took := time.Since(start); took > 1500*time.Millisecond {
		t.Errorf("the run took %s with a 1s lease", took)
	}
	if rep.Lapsed != 1 || rep.Failed != 1 {
		t.Fatalf("report %+v", rep)
	}
	if got := e.get(t, slow.ID); got.Status != queue.StatusRunning {
		t.Errorf("slow: %s", got.Status)
	}
	if got := e.get(t, huge.ID); got.Status != queue.StatusFailed {
		t.Errorf("huge: %s %q", got.Status, got.LastError)
	}
}

// A cancel requested during a delivery that then times out is not
// followed by the next attempt: the lapsed task is cancelled, never
// delivered again.
func TestACancelDuringADeliveryThatTimesOutIsNotDeliveredAgain(t *testing.T) {
	forEachStore(t, func(t *testing.T, st store.Store) {
		e := newEnv(st, dispatch.PushQueue{Name: "push"})
		cancelled := make(chan struct{})
		var once sync.Once
		tg := newTarget(t, e.clk, func(p dispatch.Payload, w http.ResponseWriter, r *http.Request) {
			if _, err := e.q.Cancel(context.Background(), queue.Ref(p.Task.Queue, p.Task.ID), e.clk.Now()); err != nil {
				t.Error(err)
			}
			once.Do(func() { close(cancelled) })
			<-r.Context().Done()
		})
		e.pq = httpQueue(tg.srv.URL, time.Second)
		task := e.submit(t, queue.SubmitRequest{MaxAttempts: 5})
		if rep := run(t, e.dispatcher(st, nil), ""); rep.Lapsed != 1 {
			t.Fatalf("report %+v", rep)
		}
		// On a loaded machine the target may still be on its way to the
		// cancel when the delivery has timed out: the next run comes after it.
		select {
		case <-cancelled:
		case <-time.After(10 * time.Second):
			t.Fatal("the target never asked to cancel")
		}
		e.clk.Advance(2 * time.Second)
		run(t, e.dispatcher(st, nil), "")
		if got := e.get(t, task.ID); got.Status != queue.StatusCancelled || len(tg.deliveries()) != 1 {
			t.Fatalf("task %s after %d deliveries", got.Status, len(tg.deliveries()))
		}
	})
}

// slowSSM counts GetParameter calls and answers each after a moment.
type slowSSM struct{ calls atomic.Int64 }

func (f *slowSSM) GetParameter(_ context.Context, in *ssm.GetParameterInput, _ ...func(*ssm.Options)) (*ssm.GetParameterOutput, error) {
	f.calls.Add(1)
	time.Sleep(20 * time.Millisecond)
	return &ssm.GetParameterOutput{Parameter: &ssmtypes.Parameter{Value: aws.String("v")}}, nil
}

// A cold dispatcher starting 64 deliveries of one URL queue at once reads
// the queue's secret once, not 64 times: SSM's GetParameter allows about
// 40 per second, and each throttled read would fail a delivery and spend
// an attempt of a task that was never sent.
func TestConcurrentDeliveriesOfAColdDispatcherReadTheSecretOnce(t *testing.T) {
	f := &slowSSM{}
	s := dispatch.NewSSMSecrets(f, 0)
	now := time.Now()
	var wg sync.WaitGroup
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if v, err := s.Secret(context.Background(), "/hook", now); err != nil || v != "v" {
				t.Errorf("%q %v", v, err)
			}
		}()
	}
	wg.Wait()
	if n := f.calls.Load(); n != 1 {
		t.Fatalf("%d GetParameter calls for one secret", n)
	}
}

// A delivery shows the task as the API does: no token but the lease's,
// and none of the record's internals (the previous attempt's ended token,
// the request hash, the index marker, the slot and its ETag). An HTTPS
// target may be a third party.
func TestADeliveryCarriesNoTokenButItsLeasesAndNoRecordInternals(t *testing.T) {
	forEachStore(t, func(t *testing.T, st store.Store) {
		var mu sync.Mutex
		var bodies []string
		e := newEnv(st, dispatch.PushQueue{Name: "internals"})
		tg := newTarget(t, e.clk, func(p dispatch.Payload, w http.ResponseWriter, r *http.Request) {
			if p.Task.Attempt == 1 {
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			fmt.Fprint(w, `{}`)
		})
		seen := tg.srv.Config.Handler
		tg.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			mu.Lock()
			bodies = append(bodies, string(b))
			mu.Unlock()
			r.Body = io.NopCloser(strings.NewReader(string(b)))
			seen.ServeHTTP(w, r)
		})
		e.pq.Target = queues.Target{URL: tg.srv.URL, Secret: "s3q/secret"}
		e.pq.Timeout = queue.Duration(10 * time.Second)
		e.pq.MaxConcurrency = 1
		e.declare()
		e.submit(t, queue.SubmitRequest{MaxAttempts: 3, ID: queue.NewID(e.clk.Now())})
		run(t, e.dispatcher(st, nil), "")
		e.clk.Advance(time.Hour)
		run(t, e.dispatcher(st, nil), "")
		mu.Lock()
		defer mu.Unlock()
		if len(bodies) != 2 {
			t.Fatalf("%d deliveries", len(bodies))
		}
		for _, b := range bodies {
			for _, field := range []string{"lease_token", "ended_lease_token", "request_hash", "index_key", "slot_key", "slot_etag"} {
				if strings.Contains(b, `"`+field+`"`) {
					t.Errorf("a delivery carries %s: %s", field, b)
				}
			}
		}
	})
}

// A wake for a queue that is not declared (or has no target) delivers
// nothing and costs one GET, then none while the answer is cached.
func TestAWakeForAnUndeclaredQueueCostsOneGetThenNone(t *testing.T) {
	st := store.NewCounting(memstore.New())
	q, decls := queues.New(st, queues.Options{})
	d := dispatch.New(q, dispatch.NewDeclared(decls, 0), dispatch.Options{Logger: slog.New(slog.DiscardHandler), RecheckAfter: 150 * time.Millisecond})
	for i := range 3 {
		rep, err := d.Run(context.Background(), "nope", time.Time{})
		if err != nil || rep.Queues != 0 {
			t.Fatalf("run %d: %+v %v", i, rep, err)
		}
	}
	if c := st.Counts(); c.Total() != 1 {
		t.Fatalf("requests %s", c)
	}
}

// The minute rule's idle cost does not grow with the pull queues: a warm
// dispatcher lists queues/ and reads again only the declarations whose
// ETag changed, so one push queue among 20 pull queues costs the LIST,
// the push queue's declaration and its two index LISTs each minute. A
// queue declared, or whose target changed, since the last run is still
// found by the next.
func TestTheMinuteRulesIdleCostDoesNotGrowWithPullQueues(t *testing.T) {
	forEachStore(t, func(t *testing.T, inner store.Store) {
		st := store.NewCounting(inner)
		e := newEnv(st, dispatch.PushQueue{Name: "push"})
		e.pq = httpQueue("http://127.0.0.1:1/", 10*time.Second)
		e.declare()
		for i := range 20 {
			if _, _, err := e.decls.Declare(context.Background(), queues.Declaration{Name: fmt.Sprintf("pull-%02d", i)}, e.clk.Now()); err != nil {
				t.Fatal(err)
			}
		}
		q, decls := queues.New(st, queues.Options{Core: queue.Options{ListCacheFor: 100 * time.Millisecond}})
		targets := dispatch.NewDeclared(decls, 0)
		d := dispatch.New(q, targets, dispatch.Options{Now: e.clk.Now, Soon: -1, Logger: slog.New(slog.DiscardHandler)})
		per := idleRuns(t, e, st, d)
		if per[1] > 4 || per[2] > 4 {
			t.Fatalf("requests per idle minute run %v, want at most 4 once warm", per)
		}
		// A new push queue, and a changed target, are found by the next run.
		timeout := queue.Duration(10 * time.Second)
		if _, _, err := e.decls.Declare(context.Background(), queues.Declaration{Name: "pull-00", Timeout: &timeout,
			Target: &queues.Target{URL: "http://127.0.0.1:2/", Secret: "s3q/secret"}}, e.clk.Now()); err != nil {
			t.Fatal(err)
		}
		e.clk.Advance(time.Minute)
		pqs, err := targets.PushQueues(context.Background(), e.clk.Now())
		if err != nil {
			t.Fatal(err)
		}
		if len(pqs) != 2 || pqs[0].Name != "pull-00" || pqs[0].Target.URL != "http://127.0.0.1:2/" || pqs[1].Name != "push" {
			t.Fatalf("push queues %+v", pqs)
		}
	})
}

// slowSecrets answers after a pause: the task's deadline passes while the
// signing key is read.
type slowSecrets struct{ pause time.Duration }

func (s slowSecrets) Secret(context.Context, string, time.Time) (string, error) {
	time.Sleep(s.pause)
	return secret, nil
}

// A task whose deadline passes while its delivery reads the signing key
// (a cold SSM read) is not sent: it is handed back and then expires.
func TestATaskWhoseDeadlinePassesWhileTheSecretIsReadIsNotSent(t *testing.T) {
	e := newEnv(memstore.New(), dispatch.PushQueue{Name: "push"})
	tg := newTarget(t, e.clk, nil)
	e.pq = httpQueue(tg.srv.URL, 10*time.Second)
	exp := e.clk.Now().Add(300 * time.Millisecond)
	task := e.submit(t, queue.SubmitRequest{ExpiresAt: &exp})
	h := dispatch.NewHTTP(slowSecrets{pause: 500 * time.Millisecond}, true)
	d := dispatch.New(e.q, e.targets(), dispatch.Options{Now: e.clk.Now, Soon: -1, Logger: slog.New(slog.DiscardHandler), HTTP: h})
	rep := run(t, d, "")
	if n := len(tg.deliveries()); n != 0 || rep.Delivered != 0 || rep.Skipped != 1 {
		t.Fatalf("%d deliveries after the deadline, report %+v", n, rep)
	}
	run(t, e.dispatcher(e.st, nil), "")
	if got := e.get(t, task.ID); got.Status != queue.StatusExpired || len(tg.deliveries()) != 0 {
		t.Fatalf("task %s after %d deliveries", got.Status, len(tg.deliveries()))
	}
}
