package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/api"
	"github.com/s3q/s3q/shared/api/openapitest"
	"github.com/s3q/s3q/shared/client"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/s3local/s3localtest"
	"github.com/s3q/s3q/shared/wire"
	"github.com/s3q/s3q/shared/worker"
)

var servers s3localtest.Servers

func TestMain(m *testing.M) { os.Exit(s3localtest.Main(m, &servers)) }

var bg = context.Background()

// setup serves the real API over versitygw with immediate retries and
// returns a client and the queue behind it.
func setup(t *testing.T) (*client.Client, *queue.Queue) {
	t.Helper()
	q, decls := queues.New(s3localtest.NewStore(t, servers.VersityGW), queues.Options{Core: queue.Options{Backoff: func(int) time.Duration { return 0 }, ListCacheFor: -1}})
	ts := httptest.NewServer(openapitest.Handler(t, api.New(q, decls, api.Options{Logger: slog.New(slog.DiscardHandler)})))
	t.Cleanup(ts.Close)
	c, err := client.New(bg, ts.URL, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c, q
}

func submit(t *testing.T, c *client.Client, req wire.SubmitRequest) string {
	t.Helper()
	res, err := c.Submit(bg, client.SubmitRequest{SubmitRequest: req})
	if err != nil {
		t.Fatal(err)
	}
	return res.Task.ID
}

// runUntil runs w until cond holds (or 20s pass), then stops it.
func runUntil(t *testing.T, w *worker.Worker, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(bg)
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			cancel()
			t.Fatal("condition not met in 20s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func status(t *testing.T, c *client.Client, id string) func() bool {
	return func() bool {
		task, err := c.Get(bg, id)
		return err == nil && task.Status.Terminal()
	}
}

func fastOpts() worker.Options {
	return worker.Options{IdleBackoff: 20 * time.Millisecond, MaxIdleBackoff: 50 * time.Millisecond, WorkerID: "test"}
}

func TestWorkerCompletesWithTheHandlersOutputAndSeesTheDeadline(t *testing.T) {
	c, _ := setup(t)
	ttl := queue.Duration(time.Hour)
	id := submit(t, c, wire.SubmitRequest{TaskType: "echo", Input: []byte(`{"x":1}`), TTL: &ttl})
	w := worker.New(c, fastOpts())
	var left time.Duration
	var abortWithin time.Duration // the smallest margin that aborts, to the hour
	w.Handle("echo", func(ctx context.Context, task *worker.Task) (json.RawMessage, error) {
		left, _ = task.Remaining()
		for abortWithin = 0; !task.ShouldAbort(abortWithin); abortWithin += time.Hour {
		}
		if task.ShouldAbort(time.Minute) {
			return nil, errors.New("too late")
		}
		return task.Input, nil
	})
	runUntil(t, w, status(t, c, id))
	got, _ := c.Get(bg, id)
	if got.Status != queue.StatusCompleted || string(got.Output) != `{"x":1}` {
		t.Fatalf("task %s output %s", got.Status, got.Output)
	}
	if left < 59*time.Minute || left > time.Hour {
		t.Fatalf("Remaining() = %s, want about 1h", left)
	}
	if abortWithin != time.Hour {
		t.Fatalf("ShouldAbort first true with a margin of %s, want 1h (deadline.ShouldAbort: at most margin left)", abortWithin)
	}
}

func TestAFailingHandlerIsRetriedThenDeadLettered(t *testing.T) {
	c, _ := setup(t)
	id := submit(t, c, wire.SubmitRequest{TaskType: "flaky", MaxAttempts: 3})
	var calls atomic.Int32
	w := worker.New(c, fastOpts())
	w.Handle("flaky", func(context.Context, *worker.Task) (json.RawMessage, error) {
		calls.Add(1)
		return nil, errors.New("smtp 451")
	})
	runUntil(t, w, status(t, c, id))
	got, _ := c.Get(bg, id)
	if got.Status != queue.StatusFailed || got.LastError != "smtp 451" || calls.Load() != 3 {
		t.Fatalf("status %s last_error %q calls %d", got.Status, got.LastError, calls.Load())
	}
}

func TestAHandlerThatReschedulesRunsAgainWithoutSpendingAnAttempt(t *testing.T) {
	c, _ := setup(t)
	id := submit(t, c, wire.SubmitRequest{TaskType: "later", MaxAttempts: 1})
	var calls atomic.Int32
	w := worker.New(c, fastOpts())
	w.Handle("later", func(context.Context, *worker.Task) (json.RawMessage, error) {
		if calls.Add(1) == 1 {
			return nil, worker.Reschedule(0, 0) // not ready yet: look again now
		}
		return json.RawMessage(`"done"`), nil
	})
	runUntil(t, w, status(t, c, id))
	got, _ := c.Get(bg, id)
	if got.Status != queue.StatusCompleted || calls.Load() != 2 {
		t.Fatalf("status %s after %d calls, want completed after 2 (max_attempts 1)", got.Status, calls.Load())
	}
}

func TestAPermanentErrorFailsAtOnceAndAPanicIsAFailure(t *testing.T) {
	c, _ := setup(t)
	perm := submit(t, c, wire.SubmitRequest{TaskType: "perm", MaxAttempts: 5})
	boom := submit(t, c, wire.SubmitRequest{TaskType: "boom", MaxAttempts: 1})
	w := worker.New(c, fastOpts())
	w.Handle("perm", func(context.Context, *worker.Task) (json.RawMessage, error) {
		return nil, worker.Permanent(errors.New("bad address"))
	})
	w.Handle("boom", func(context.Context, *worker.Task) (json.RawMessage, error) { panic("oops") })
	runUntil(t, w, func() bool { return status(t, c, perm)() && status(t, c, boom)() })
	p, _ := c.Get(bg, perm)
	b, _ := c.Get(bg, boom)
	if p.Status != queue.StatusFailed || p.Attempt != 1 || b.Status != queue.StatusFailed || b.LastError == "" {
		t.Fatalf("permanent: %s attempt %d; panic: %s %q", p.Status, p.Attempt, b.Status, b.LastError)
	}
}

func TestACancelRequestCancelsTheHandlerAndIsAcknowledged(t *testing.T) {
	c, _ := setup(t)
	id := submit(t, c, wire.SubmitRequest{TaskType: "slow"})
	w := worker.New(c, worker.Options{IdleBackoff: 20 * time.Millisecond, MaxIdleBackoff: 50 * time.Millisecond, LeaseFor: 600 * time.Millisecond})
	started := make(chan struct{}, 1)
	var cause atomic.Value
	w.Handle("slow", func(ctx context.Context, _ *worker.Task) (json.RawMessage, error) {
		started <- struct{}{}
		<-ctx.Done()
		cause.Store(context.Cause(ctx))
		return nil, ctx.Err()
	})
	go func() {
		<-started
		_, _ = c.Cancel(bg, id)
	}()
	runUntil(t, w, status(t, c, id))
	got, _ := c.Get(bg, id)
	if got.Status != queue.StatusCancelled || cause.Load() != worker.ErrCancelRequested {
		t.Fatalf("status %s cause %v", got.Status, cause.Load())
	}
}

func TestAHandlerThatOutlivesItsLeaseLosesItWithoutCompleting(t *testing.T) {
	c, q := setup(t)
	id := submit(t, c, wire.SubmitRequest{TaskType: "stuck", MaxAttempts: 5})
	w := worker.New(c, worker.Options{IdleBackoff: 20 * time.Millisecond, MaxIdleBackoff: 50 * time.Millisecond, LeaseFor: 900 * time.Millisecond})
	got := make(chan error, 1)
	w.Handle("stuck", func(ctx context.Context, task *worker.Task) (json.RawMessage, error) {
		// Someone else takes the task over: the next heartbeat finds a
		// different lease and the handler is told.
		cs, err := q.Claim(bg, queue.ClaimRequest{}, task.Lease.ExpiresAt)
		if err != nil || len(cs) != 1 {
			t.Errorf("takeover claim: %v %d", err, len(cs))
		}
		<-ctx.Done()
		got <- context.Cause(ctx)
		return nil, nil
	})
	ctx, cancel := context.WithCancel(bg)
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	select {
	case cause := <-got:
		if cause != worker.ErrLeaseLost {
			t.Fatalf("cause %v", cause)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("handler never learned it lost its lease")
	}
	cancel()
	<-done
	task, _ := c.Get(bg, id)
	if task.Status != queue.StatusRunning || task.Attempt != 2 {
		t.Fatalf("status %s attempt %d: the old holder must not have completed it", task.Status, task.Attempt)
	}
}

func TestShutdownLetsRunningWorkFinishAndHandsBackWhatCannot(t *testing.T) {
	c, _ := setup(t)
	quick := submit(t, c, wire.SubmitRequest{TaskType: "quick"})
	w := worker.New(c, worker.Options{IdleBackoff: 20 * time.Millisecond, MaxIdleBackoff: 50 * time.Millisecond, Concurrency: 2, ShutdownGrace: 300 * time.Millisecond})
	started := make(chan struct{}, 2)
	w.Handle("quick", func(ctx context.Context, _ *worker.Task) (json.RawMessage, error) {
		started <- struct{}{}
		time.Sleep(100 * time.Millisecond) // finishes inside the grace
		return []byte(`"done"`), nil
	})
	stuck := submit(t, c, wire.SubmitRequest{TaskType: "forever"})
	w.Handle("forever", func(ctx context.Context, _ *worker.Task) (json.RawMessage, error) {
		started <- struct{}{}
		<-ctx.Done() // only the end of the grace stops it
		return nil, ctx.Err()
	})
	ctx, cancel := context.WithCancel(bg)
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	<-started
	<-started
	cancel() // SIGTERM
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	q1, _ := c.Get(bg, quick)
	s1, _ := c.Get(bg, stuck)
	if q1.Status != queue.StatusCompleted {
		t.Fatalf("quick task %s: a running task must finish on shutdown", q1.Status)
	}
	if s1.Status != queue.StatusPending || s1.Attempt != 0 {
		t.Fatalf("stuck task %s attempt %d: it must be handed back, runnable, attempt given back", s1.Status, s1.Attempt)
	}
}

// A cancel reaches a handler between heartbeats: with a lease of an hour
// (its first heartbeat 20 minutes away) the handler is cancelled by the
// read of the task every CancelPoll, and the cancel acknowledged.
func TestACancelReachesTheHandlerBetweenHeartbeatsWhateverTheLease(t *testing.T) {
	c, _ := setup(t)
	id := submit(t, c, wire.SubmitRequest{TaskType: "long"})
	opts := fastOpts()
	opts.LeaseFor = time.Hour
	opts.CancelPoll = 20 * time.Millisecond
	w := worker.New(c, opts)
	started := make(chan struct{}, 1)
	var cause atomic.Value
	w.Handle("long", func(ctx context.Context, _ *worker.Task) (json.RawMessage, error) {
		started <- struct{}{}
		<-ctx.Done()
		cause.Store(context.Cause(ctx))
		return nil, ctx.Err()
	})
	go func() {
		<-started
		_, _ = c.Cancel(bg, id)
	}()
	runUntil(t, w, status(t, c, id))
	got, _ := c.Get(bg, id)
	if got.Status != queue.StatusCancelled || cause.Load() != worker.ErrCancelRequested {
		t.Fatalf("status %s cause %v", got.Status, cause.Load())
	}
}

// An output the API refuses (over the inline limit) fails the task at once
// with the reason: logged and dropped, its lease lapsed and the finished
// task ran again.
func TestAnOutputTheAPIRefusesFailsTheTaskAtOnce(t *testing.T) {
	c, _ := setup(t)
	timeout := queue.Duration(time.Minute) // were it dropped, the rerun would wait for this
	id := submit(t, c, wire.SubmitRequest{TaskType: "big", MaxAttempts: 3, Timeout: &timeout})
	var calls atomic.Int32
	w := worker.New(c, fastOpts())
	w.Handle("big", func(context.Context, *worker.Task) (json.RawMessage, error) {
		calls.Add(1)
		return json.Marshal(map[string]string{"blob": strings.Repeat("x", 300_000)})
	})
	runUntil(t, w, status(t, c, id))
	got, _ := c.Get(bg, id)
	if got.Status != queue.StatusFailed || calls.Load() != 1 || !strings.Contains(got.LastError, "too_large") {
		t.Fatalf("status %s after %d runs, last_error %q; want failed after 1, naming too_large", got.Status, calls.Load(), got.LastError)
	}
}
