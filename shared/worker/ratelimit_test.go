package worker_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"sort"
	"sync"
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

// heldAPI holds back its first claims with a rate limit's Retry-After,
// then hands out fakeAPI's backlog, noting when each claim came.
type heldAPI struct {
	*fakeAPI
	retryAfter time.Duration
	mu         sync.Mutex
	held       int // claims still to hold back
	at         []time.Time
}

func (h *heldAPI) Claim(ctx context.Context, req client.ClaimRequest) ([]client.Claimed, error) {
	h.mu.Lock()
	h.at = append(h.at, time.Now())
	if h.held > 0 {
		h.held--
		h.mu.Unlock()
		return []client.Claimed{}, &queue.RateLimitedError{Queue: "paced", RetryAfter: h.retryAfter}
	}
	h.mu.Unlock()
	return h.fakeAPI.Claim(ctx, req)
}

// A worker whose claim the rate limit holds back claims again after the
// Retry-After, not after its idle backoff (an hour here: the task would
// never start).
func TestAWorkerHeldBackByTheRateLimitClaimsAgainAfterRetryAfter(t *testing.T) {
	api := &heldAPI{fakeAPI: newFakeAPI(false), retryAfter: 200 * time.Millisecond, held: 2}
	api.backlog = []string{"a"}
	w := worker.New(api, worker.Options{Concurrency: 1, Logger: quiet(), IdleBackoff: time.Hour, MaxIdleBackoff: time.Hour})
	started := make(chan string, 1)
	w.Handle("t", func(_ context.Context, task *worker.Task) (json.RawMessage, error) {
		started <- task.ID
		return nil, nil
	})
	stop := startWorker(w)
	select {
	case id := <-started:
		if id != "a" {
			t.Fatalf("started %s", id)
		}
	case <-time.After(time.Minute):
		t.Fatal("the held-back worker did not claim again")
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	api.mu.Lock()
	defer api.mu.Unlock()
	if len(api.at) < 3 {
		t.Fatalf("%d claims, want at least 3", len(api.at))
	}
	for i := 1; i < 3; i++ {
		if gap := api.at[i].Sub(api.at[i-1]); gap < api.retryAfter {
			t.Fatalf("claim %d came %s after the one held back, before its Retry-After %s", i, gap, api.retryAfter)
		}
	}
}

// Four workers talking to two API servers (two containers, each its own
// process's Queue) over one versitygw bucket drain a queue with
// max_per_second: every task runs once, and the starts keep the limit.
// (Real time: a slow machine starts fewer a second, never more.)
func TestWorkersOnTwoAPIServersKeepTheQueuesRateLimit(t *testing.T) {
	st := s3localtest.NewStore(t, servers.VersityGW)
	var clients []*client.Client
	var q *queue.Queue
	for range 2 {
		var decls *queues.Registry
		q, decls = queues.New(st, queues.Options{})
		ts := httptest.NewServer(openapitest.Handler(t, api.New(q, decls, api.Options{Logger: slog.New(slog.DiscardHandler)})))
		t.Cleanup(ts.Close)
		c, err := client.New(bg, ts.URL, client.Options{})
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
	}
	const rate, burst, tasks = 20.0, 2, 16
	r, b := rate, burst
	if _, _, err := clients[0].DeclareQueue(bg, "paced", client.QueueRequest{MaxPerSecond: &r, Burst: &b}); err != nil {
		t.Fatal(err)
	}
	ids := make([]string, tasks)
	for i := range ids {
		ids[i] = submit(t, clients[i%2].In("paced"), wire.SubmitRequest{TaskType: "t", Queue: "paced"})
	}
	var ran atomic.Int64
	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	done := make(chan error, 4)
	for i := range 4 {
		w := worker.New(clients[i%2], worker.Options{Queue: "paced", Concurrency: 2, Logger: quiet()})
		w.Handle("t", func(context.Context, *worker.Task) (json.RawMessage, error) {
			ran.Add(1)
			return nil, nil
		})
		go func() { done <- w.Run(ctx) }()
	}
	for deadline := time.Now().Add(time.Minute); ran.Load() < tasks && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	for range 4 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if got := ran.Load(); got != tasks {
		t.Fatalf("%d handler runs, want %d", got, tasks)
	}
	var starts []time.Time
	for _, id := range ids {
		task, err := q.In("paced").Get(bg, id)
		if err != nil || task.Attempt != 1 || task.StartedAt == nil {
			t.Fatalf("task %s: attempt %d, %v", id, task.Attempt, err)
		}
		starts = append(starts, *task.StartedAt)
	}
	sort.Slice(starts, func(i, j int) bool { return starts[i].Before(starts[j]) })
	for i := range starts {
		for j := i; j < len(starts); j++ {
			if n, allowed := float64(j-i+1), float64(burst)+starts[j].Sub(starts[i]).Seconds()*rate; n > allowed+1e-9 {
				t.Fatalf("%v starts from %s to %s: more than %.2f", n, starts[i], starts[j], allowed)
			}
		}
	}
}
