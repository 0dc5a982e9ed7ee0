package worker_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/client"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/wire"
	"github.com/s3q/s3q/shared/worker"
)

// fakeAPI hands out the tasks of its backlog, one per claim, and records
// the claims it was sent. A claim that finds the backlog empty and asks to
// wait blocks until ctx ends (a long-poll that finds nothing), unless
// shortPolls is set.
type fakeAPI struct {
	mu         sync.Mutex
	backlog    []string
	waits      []time.Duration // the Wait of each claim, in order
	polling    int             // long-polls in flight
	maxPolling int             // the most long-polls ever in flight at once
	shortPolls bool
	refuseWait bool                 // answer a claim that waits with 400 naming wait
	completes  chan string          // each complete's task id, once it is sent
	release    chan struct{}        // closed to let completes return
	polled     chan struct{}        // gets a value when a long-poll starts
	onComplete func(id string) bool // optional: false fails the complete
}

func (f *fakeAPI) Claim(ctx context.Context, req client.ClaimRequest) ([]client.Claimed, error) {
	f.mu.Lock()
	f.waits = append(f.waits, req.Wait)
	if len(f.backlog) > 0 {
		id := f.backlog[0]
		f.backlog = f.backlog[1:]
		f.mu.Unlock()
		task := client.Task{Task: wire.Task{ID: id, TaskType: "t", Status: queue.StatusRunning, Attempt: 1}}
		return []client.Claimed{{Task: task, Lease: client.Lease{TaskID: id, Token: "tok-" + id, ExpiresAt: time.Now().Add(time.Hour)}}}, nil
	}
	if req.Wait > 0 && f.refuseWait {
		f.mu.Unlock()
		return nil, &client.Error{Status: 400, Code: "invalid_input", Message: "wait: at most 10s", Field: "wait"}
	}
	if req.Wait <= 0 || f.shortPolls {
		f.mu.Unlock()
		return nil, nil
	}
	f.polling++
	f.maxPolling = max(f.maxPolling, f.polling)
	f.mu.Unlock()
	select {
	case f.polled <- struct{}{}:
	default:
	}
	<-ctx.Done()
	f.mu.Lock()
	f.polling--
	f.mu.Unlock()
	return nil, ctx.Err()
}

func (f *fakeAPI) Heartbeat(_ context.Context, req client.HeartbeatRequest) (client.Claimed, error) {
	return client.Claimed{Lease: req.Lease}, nil
}

func (f *fakeAPI) Complete(_ context.Context, req client.CompleteRequest) (client.Task, error) {
	f.completes <- req.Lease.TaskID
	<-f.release
	return client.Task{}, nil
}

func (f *fakeAPI) Fail(context.Context, client.FailRequest) (client.Task, error) {
	return client.Task{}, nil
}

func (f *fakeAPI) Reschedule(context.Context, client.RescheduleRequest) (client.Task, error) {
	return client.Task{}, nil
}

func (f *fakeAPI) AckCancel(context.Context, client.AckCancelRequest) (client.Task, error) {
	return client.Task{}, nil
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// newFakeAPI is a fakeAPI whose completes return at once (release
// closed) unless held is true.
func newFakeAPI(held bool) *fakeAPI {
	f := &fakeAPI{completes: make(chan string, 8), release: make(chan struct{}), polled: make(chan struct{}, 1)}
	if !held {
		close(f.release)
	}
	return f
}

// waitFor waits until cond holds of the claims' waits so far (a minute at
// most: no machine is that slow).
func (f *fakeAPI) waitFor(t *testing.T, cond func(waits []time.Duration) bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		f.mu.Lock()
		ok := cond(f.waits)
		f.mu.Unlock()
		if ok {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("condition not met")
}

// waitClaims waits until the worker has sent at least n claims.
func (f *fakeAPI) waitClaims(t *testing.T, n int) {
	t.Helper()
	f.waitFor(t, func(ws []time.Duration) bool { return len(ws) >= n })
}

// startWorker runs w until the returned stop is called; stop returns what Run did.
func startWorker(w *worker.Worker) (stop func() error) {
	ctx, cancel := context.WithCancel(bg)
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	return func() error {
		cancel()
		return <-done
	}
}

func TestASlotStartsItsNextTaskWhileItsLastCompleteIsInFlight(t *testing.T) {
	api := newFakeAPI(true)
	api.backlog = []string{"a", "b"}
	w := worker.New(api, worker.Options{Concurrency: 1, Logger: quiet()})
	started := make(chan string, 2)
	w.Handle("t", func(_ context.Context, task *worker.Task) (json.RawMessage, error) {
		started <- task.ID
		return nil, nil
	})
	stop := startWorker(w)
	if id := <-started; id != "a" {
		t.Fatalf("first task %s", id)
	}
	if id := <-api.completes; id != "a" {
		t.Fatalf("first complete %s", id)
	}
	// a's complete is held; b must start all the same.
	select {
	case id := <-started:
		if id != "b" {
			t.Fatalf("second task %s", id)
		}
	case <-time.After(time.Minute):
		t.Fatal("the slot waited for its last complete before claiming again")
	}
	close(api.release)
	<-api.completes // b's complete went out after a's returned
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

func TestAnIdleWorkerLongPollsFromOneSlotAtATime(t *testing.T) {
	api := newFakeAPI(false)
	w := worker.New(api, worker.Options{Concurrency: 4, Logger: quiet()})
	w.Handle("t", func(context.Context, *worker.Task) (json.RawMessage, error) { return nil, nil })
	stop := startWorker(w)
	<-api.polled
	// Every slot has had its chance to claim: each made one claim
	// without waiting first, and only then looks for the turn to poll.
	api.waitClaims(t, 5)
	time.Sleep(100 * time.Millisecond) // room for a second long-poll, were there one
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	api.mu.Lock()
	defer api.mu.Unlock()
	if api.maxPolling != 1 {
		t.Fatalf("%d long-polls at once, want 1", api.maxPolling)
	}
	polls := 0
	for _, wt := range api.waits {
		if wt == worker.DefaultWait {
			polls++
		} else if wt != 0 {
			t.Fatalf("a claim waited %s, want 0 or the default %s", wt, worker.DefaultWait)
		}
	}
	if polls != 1 {
		t.Fatalf("%d long-polls, want 1 (claims %v)", polls, api.waits)
	}
}

func TestAWorkerIdleForIdleAfterStopsLongPollingUntilWorkComes(t *testing.T) {
	api := newFakeAPI(false)
	api.shortPolls = true
	w := worker.New(api, worker.Options{Concurrency: 1, IdleAfter: 50 * time.Millisecond,
		IdleBackoff: 5 * time.Millisecond, MaxIdleBackoff: 10 * time.Millisecond, Logger: quiet()})
	var ran atomic.Int32
	w.Handle("t", func(context.Context, *worker.Task) (json.RawMessage, error) { ran.Add(1); return nil, nil })
	stop := startWorker(w)
	// Long-polls, then, once idle, only claims that do not wait.
	api.waitFor(t, func(ws []time.Duration) bool {
		n := len(ws)
		return n >= 4 && ws[n-1] == 0 && ws[n-2] == 0 && ws[n-3] == 0
	})
	api.mu.Lock()
	first := api.waits[1] // [0] is the slot's first claim, which never waits
	api.backlog = []string{"x"}
	mark := len(api.waits)
	api.mu.Unlock()
	if first != worker.DefaultWait {
		t.Fatalf("the first poll waited %s, want %s", first, worker.DefaultWait)
	}
	// Work comes: the worker long-polls again.
	api.waitFor(t, func(ws []time.Duration) bool {
		for _, wt := range ws[mark:] {
			if wt == worker.DefaultWait {
				return true
			}
		}
		return false
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if ran.Load() != 1 {
		t.Fatalf("ran %d tasks, want 1", ran.Load())
	}
}

func TestANegativeWaitNeverLongPolls(t *testing.T) {
	api := newFakeAPI(false)
	w := worker.New(api, worker.Options{Wait: -1, Concurrency: 2, IdleBackoff: 5 * time.Millisecond, MaxIdleBackoff: 10 * time.Millisecond, Logger: quiet()})
	w.Handle("t", func(context.Context, *worker.Task) (json.RawMessage, error) { return nil, nil })
	stop := startWorker(w)
	api.waitClaims(t, 6)
	_ = stop()
	api.mu.Lock()
	defer api.mu.Unlock()
	for _, wt := range api.waits {
		if wt != 0 {
			t.Fatalf("a claim waited %s with Wait < 0", wt)
		}
	}
}

func TestAWorkerWhoseWaitTheAPIRefusesClaimsWithoutWaiting(t *testing.T) {
	api := newFakeAPI(false)
	api.refuseWait = true
	w := worker.New(api, worker.Options{IdleBackoff: 5 * time.Millisecond, MaxIdleBackoff: 10 * time.Millisecond, Logger: quiet()})
	w.Handle("t", func(context.Context, *worker.Task) (json.RawMessage, error) { return nil, nil })
	stop := startWorker(w)
	api.waitClaims(t, 8)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	api.mu.Lock()
	defer api.mu.Unlock()
	waited := 0
	for _, wt := range api.waits {
		if wt > 0 {
			waited++
		}
	}
	if waited != 1 {
		t.Fatalf("%d claims asked to wait, want 1 (the refused one): %v", waited, api.waits)
	}
}
