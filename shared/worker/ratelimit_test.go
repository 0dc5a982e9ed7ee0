package worker_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/client"
	"github.com/s3q/s3q/shared/queue"
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
