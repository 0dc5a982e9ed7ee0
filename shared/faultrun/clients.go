// The clients of a run: submitters and workers through the Go client, and
// the transport that loses some of their answers.

package faultrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/s3q/s3q/shared/client"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/wire"
)

// apiTransport carries the clients' requests to the API: it counts the
// 500 answers, and loses a share of the answers after the request was
// served, as a dropped connection would.
type apiTransport struct {
	next     http.RoundTripper
	lostRate float64

	mu  sync.Mutex
	rng *mrand.Rand

	n500, lost atomic.Int64
}

// errAnswerLost is the network error of an API answer lost on its way.
var errAnswerLost = &net.OpError{Op: "read", Net: "tcp", Err: errors.New("faultrun: answer lost on its way to the client")}

func (t *apiTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(r)
	if err != nil {
		return resp, err
	}
	if resp.StatusCode == http.StatusInternalServerError {
		t.n500.Add(1)
	}
	t.mu.Lock()
	lose := t.rng.Float64() < t.lostRate
	t.mu.Unlock()
	if lose {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		t.lost.Add(1)
		return nil, errAnswerLost
	}
	return resp, nil
}

// submitted is what the client saw of one submit.
type submitted struct {
	id       string // the id the client sent
	dedupKey string
	taskID   string // the task the answer named (another's when deduplicated)
	dedup    bool
	ok       bool
	err      error
	end      time.Time // when the answer that counted came back
}

// run is the state the goroutines of a run share.
type run struct {
	cfg     Config
	cl      *client.Client
	submits []submitted // by submit number; each written by one goroutine

	executions, crashes, completed, failed, leaseErrors, clientGaveUp atomic.Int64
}

// retry calls f until it succeeds, fails for good, or attempts run out:
// network errors and answers that say to come back (503, other 5xx, 409
// conflict, 429) are retried with capped, jittered backoff. The client
// already retries submits and lease operations on 5xx and network errors
// by itself; a retry here after one of those (not a 409) means it gave up,
// and is counted.
func (r *run) retry(ctx context.Context, f func() error) error {
	var err error
	delay := 50 * time.Millisecond
	for attempt := 0; attempt < 8; attempt++ {
		if err = f(); err == nil || !temporary(err) {
			return err
		}
		var ce *client.Error
		if !errors.As(err, &ce) || ce.Code != "conflict" {
			r.clientGaveUp.Add(1)
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(delay/2 + mrand.N(delay/2+1)):
		}
		delay = min(2*delay, time.Second)
	}
	return err
}

// temporary reports whether a client error may go away on a retry.
func temporary(err error) bool {
	var ce *client.Error
	if errors.As(err, &ce) {
		return ce.Temporary()
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		strings.Contains(err.Error(), "connection reset")
}

// submit makes submit number i: an id always; a TTL for i%3 == 1; a dedup
// key shared with two other submits for i%3 == 2 (the last of the three
// with a TTL too).
func (r *run) submit(ctx context.Context, i int) {
	req := wire.SubmitRequest{ID: queue.NewID(time.Now()), TaskType: "faultrun", Input: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))}
	switch i % 3 {
	case 1:
		ttl := queue.Duration(max((r.cfg.TTL * time.Duration(1+i%5) / 5).Truncate(time.Second), time.Second))
		req.TTL = &ttl
	case 2:
		req.DedupKey = fmt.Sprintf("key-%d", i/9)
		if i%9 == 8 { // one submit of each key has a TTL too
			ttl := queue.Duration(r.cfg.TTL)
			req.TTL = &ttl
		}
	}
	s := submitted{id: req.ID, dedupKey: req.DedupKey}
	s.err = r.retry(ctx, func() error {
		res, err := r.cl.Submit(ctx, client.SubmitRequest{SubmitRequest: req})
		if err == nil {
			s.taskID, s.dedup, s.ok, s.end = res.Task.ID, res.Deduplicated, true, time.Now()
		}
		return err
	})
	r.submits[i] = s
}

// work claims and works tasks until ctx ends.
func (r *run) work(ctx context.Context, w int) {
	rng := mrand.New(mrand.NewPCG(r.cfg.Seed, uint64(w)+1))
	idle := 20 * time.Millisecond
	for ctx.Err() == nil {
		// A failed claim is not repeated: the loop claims again.
		claimed, err := r.cl.Claim(ctx, client.ClaimRequest{LeaseFor: r.cfg.LeaseFor, WorkerID: fmt.Sprintf("w%d", w)})
		if err != nil || len(claimed) == 0 {
			select {
			case <-ctx.Done():
			case <-time.After(idle):
			}
			idle = min(2*idle, 200*time.Millisecond)
			continue
		}
		idle = 20 * time.Millisecond
		for _, c := range claimed {
			if r.executions.Add(1) == 1 && r.cfg.CrashRate > 0 {
				r.crashes.Add(1) // the first claim of a run always walks away
				continue
			}
			r.runTask(ctx, rng, c)
		}
	}
}

// runTask works one claimed task: crash (walk away mid-lease), or
// heartbeat sometimes and then fail or complete.
func (r *run) runTask(ctx context.Context, rng *mrand.Rand, c client.Claimed) {
	u := rng.Float64()
	if u < r.cfg.CrashRate {
		r.crashes.Add(1)
		return
	}
	if rng.IntN(4) == 0 {
		_ = r.retry(ctx, func() error {
			_, err := r.cl.Heartbeat(ctx, client.HeartbeatRequest{Lease: c.Lease, LeaseFor: r.cfg.LeaseFor})
			return err
		})
	}
	var err error
	if u < r.cfg.CrashRate+r.cfg.FailRate {
		err = r.retry(ctx, func() error {
			_, err := r.cl.Fail(ctx, client.FailRequest{Lease: c.Lease, Error: "faultrun: failed on purpose"})
			return err
		})
		if err == nil {
			r.failed.Add(1)
		}
	} else {
		err = r.retry(ctx, func() error {
			_, err := r.cl.Complete(ctx, client.CompleteRequest{Lease: c.Lease, Output: json.RawMessage(`{"done":true}`)})
			return err
		})
		if err == nil {
			r.completed.Add(1)
		}
	}
	if err != nil && ctx.Err() == nil {
		r.leaseErrors.Add(1)
		r.cfg.Logf("faultrun: task %s attempt %d: %v", c.Task.ID, c.Task.Attempt, err)
	}
}
