package queuetest

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/store"
)

// The attack listing cases: a claim's LIST overtaken by this Queue's own
// writes (a submit, a fail with retries, a complete) while it is in
// flight. This Queue's own writes are to be seen at once by its next
// claim, whatever the listing cache says, and a task it finished is not
// handed out again.

// listGate holds the first LIST of a prefix containing match until
// released, and says when it is held.
type listGate struct {
	store.Store
	match string

	mu      sync.Mutex
	armed   bool
	held    chan struct{} // closed when the LIST is held
	release chan struct{} // closed to let it go
}

func newListGate(s store.Store, match string) *listGate {
	return &listGate{Store: s, match: match, armed: true, held: make(chan struct{}), release: make(chan struct{})}
}

func (g *listGate) List(ctx context.Context, prefix, startAfter string, limit int) (store.Page, error) {
	g.mu.Lock()
	hold := g.armed && strings.Contains(prefix, g.match)
	if hold {
		g.armed = false
	}
	g.mu.Unlock()
	if hold {
		page, err := g.Store.List(ctx, prefix, startAfter, limit) // answered now, delivered late
		close(g.held)
		<-g.release
		return page, err
	}
	return g.Store.List(ctx, prefix, startAfter, limit)
}

func runAttackScan(t *testing.T, f Factory) {
	for _, w := range []struct {
		name string
		// setup returns a write to make while the LIST is in flight, and
		// the task the next claim must get ("" for none).
		setup func(e *env, q *queue.Queue) (write func() error, want func() string)
	}{
		{"a_submit", func(e *env, q *queue.Queue) (func() error, func() string) {
			var id string
			return func() error {
					res, err := q.Submit(ctx, queue.SubmitRequest{TaskType: "x"}, t0)
					id = res.Task.ID
					return err
				},
				func() string { return id }
		}},
		{"a_fail_with_retries_left", func(e *env, q *queue.Queue) (func() error, func() string) {
			task := e.submit(queue.SubmitRequest{}, t0.Add(-time.Hour))
			c := e.claim(queue.ClaimRequest{LeaseFor: 2 * time.Hour}, t0.Add(-time.Hour))[0]
			return func() error {
					_, err := q.Fail(ctx, queue.FailRequest{ID: task.Ref(), LeaseToken: c.Lease.Token, Error: "x", RetryAfter: time.Nanosecond}, t0.Add(-time.Second))
					return err
				},
				func() string { return task.ID }
		}},
		{"a_complete", func(e *env, q *queue.Queue) (func() error, func() string) {
			task := e.submit(queue.SubmitRequest{}, t0.Add(-time.Hour))
			c := e.claim(queue.ClaimRequest{LeaseFor: 2 * time.Hour}, t0.Add(-time.Hour))[0]
			// Back to pending (reschedule), then claimed by this Queue and
			// completed while its LIST, which holds the marker, is in flight.
			if _, err := e.q.Reschedule(ctx, queue.RescheduleRequest{ID: task.Ref(), LeaseToken: c.Lease.Token}, t0.Add(-time.Minute)); err != nil {
				e.t.Fatal(err)
			}
			return func() error {
					cs, err := e.open(e.s).Claim(ctx, queue.ClaimRequest{}, t0)
					if err != nil || len(cs) != 1 {
						e.t.Fatalf("claim: %v, %d", err, len(cs))
					}
					return completeTask(q, cs[0].Task.Ref(), cs[0].Lease.Token, t0)
				},
				func() string { return "" }
		}},
	} {
		t.Run("a_claim_whose_LIST_is_overtaken_by_"+w.name+"_of_its_own_process_sees_it_at_once", func(t *testing.T) {
			e := newEnv(t, f, func(o *queue.Options) { o.ListCacheFor = time.Hour })
			gate := newListGate(e.s, "/index/") // the claim indexes: a claim lists their folder
			q := e.open(gate)
			write, want := w.setup(e, q)
			// Warm the declaration, not the listing: the first LIST is the
			// gated one.
			done := make(chan []queue.Claimed, 1)
			go func() {
				cs, err := q.Claim(ctx, queue.ClaimRequest{Queue: queue.DefaultQueue, LeaseFor: time.Minute}, t0)
				if err != nil {
					t.Error(err)
				}
				done <- cs
			}()
			<-gate.held
			if err := write(); err != nil {
				close(gate.release)
				t.Fatal(err)
			}
			close(gate.release)
			first := <-done
			got := map[string]int{}
			for _, c := range first {
				got[c.Task.ID]++
			}
			second, err := q.Claim(ctx, queue.ClaimRequest{LeaseFor: time.Minute, MaxTasks: 10}, t0)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range second {
				got[c.Task.ID]++
			}
			id := want()
			for gid, n := range got {
				if n > 1 || gid != id {
					t.Fatalf("claims got %v, want only %q once", got, id)
				}
			}
			if id != "" && got[id] != 1 {
				t.Fatalf("this process's own %s was not seen by its next claim (got %v)", w.name, got)
			}
		})
	}
}
