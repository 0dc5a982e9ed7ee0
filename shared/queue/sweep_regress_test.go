// Regression tests for the findings of an independent review of the sweep.

package queue_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/internal/check"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/store"
	"github.com/s3q/s3q/shared/store/memstore"
)

type rec struct {
	mu  sync.Mutex
	evs []queue.Event
}

func (r *rec) Publish(_ context.Context, evs []queue.Event) ([]error, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evs = append(r.evs, evs...)
	return nil, nil
}

func (r *rec) count(id, dt string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, e := range r.evs {
		if e.TaskID == id && e.DetailType == dt {
			n++
		}
	}
	return n
}

func sweepAt(t *testing.T, s store.Store, o queue.Options, now time.Time, pub queue.EventPublisher) queue.SweepReport {
	t.Helper()
	rep, err := queue.New(s, o).Sweep(bg, now, queue.SweepOptions{Publisher: pub})
	if err != nil {
		t.Fatalf("sweep: %v", err)
	}
	return rep
}

func claim1(t *testing.T, q *queue.Queue, req queue.ClaimRequest, now time.Time) queue.Claimed {
	t.Helper()
	cs, err := q.Claim(bg, req, now)
	if err != nil || len(cs) != 1 {
		t.Fatalf("claim: %v %d", err, len(cs))
	}
	return cs[0]
}

// A. A dead-lettering followed by a Retry before the next sweep: the Task
// Dead-Lettered event is never published (the outbox entry is dropped as
// stale because the record no longer owes it).
func TestADeadLetteredTaskIsRetriedOnlyOnceItsEventIsOut(t *testing.T) {
	s := memstore.New()
	o := queue.Options{}
	q := queue.New(s, o)
	task := mustSubmit(t, q, queue.SubmitRequest{MaxAttempts: 1}, T0)
	c := claim1(t, q, queue.ClaimRequest{}, T0)
	if got, err := q.Fail(bg, task.ID, c.Lease.Token, queue.FailRequest{Error: "boom"}, T0.Add(time.Second)); err != nil || got.Status != queue.StatusFailed {
		t.Fatalf("fail: %v %s", err, got.Status)
	}
	var se *queue.StateError
	if _, err := q.Retry(bg, task.ID, T0.Add(10*time.Second)); !errors.As(err, &se) {
		t.Fatalf("a retry before the sweep published the event: %v, want a StateError", err)
	}
	pub := &rec{}
	sweepAt(t, s, o, T0.Add(time.Minute), pub)
	if n := pub.count(task.ID, queue.DetailTypeTaskDeadLettered); n != 1 {
		t.Fatalf("%d Task Dead-Lettered events, want 1", n)
	}
	if _, err := q.Retry(bg, task.ID, T0.Add(2*time.Minute)); err != nil {
		t.Fatalf("a retry once the event is out: %v", err)
	}
}

// A'. fail -> retry -> fail again before the sweep: two dead-letterings, one event.
func TestTwoDeadLetteringsMakeTwoEvents(t *testing.T) {
	s := memstore.New()
	o := queue.Options{}
	q := queue.New(s, o)
	task := mustSubmit(t, q, queue.SubmitRequest{MaxAttempts: 1}, T0)
	c := claim1(t, q, queue.ClaimRequest{}, T0)
	pub := &rec{}
	q.Fail(bg, task.ID, c.Lease.Token, queue.FailRequest{Error: "one"}, T0.Add(time.Second))
	sweepAt(t, s, o, T0.Add(2*time.Second), pub)
	if _, err := q.Retry(bg, task.ID, T0.Add(3*time.Second)); err != nil {
		t.Fatal(err)
	}
	c = claim1(t, q, queue.ClaimRequest{}, T0.Add(4*time.Second))
	q.Fail(bg, task.ID, c.Lease.Token, queue.FailRequest{Error: "two"}, T0.Add(5*time.Second))
	sweepAt(t, s, o, T0.Add(time.Minute), pub)
	if n := pub.count(task.ID, queue.DetailTypeTaskDeadLettered); n != 2 {
		t.Fatalf("2 dead-letterings, %d events", n)
	}
}

// B. A parked task whose holder heartbeats with a shorter lease and then
// dies is not reclaimed when that lease lapses, only at the old parked time.
func TestAShortenedLeaseOfAParkedTaskIsReclaimedWhenItLapses(t *testing.T) {
	s := memstore.New()
	o := queue.Options{}
	q := queue.New(s, o)
	task := mustSubmit(t, q, queue.SubmitRequest{TTL: check.Dur("10m")}, T0)
	c := claim1(t, q, queue.ClaimRequest{LeaseFor: 12 * time.Hour}, T0)
	if rep := sweepAt(t, s, o, T0.Add(11*time.Minute), nil); rep.Parked != 1 {
		t.Fatalf("%+v", rep)
	}
	// lease_for 0 = the task's timeout (5m): the lease now ends at +17m.
	if _, err := q.Heartbeat(bg, task.ID, c.Lease.Token, 0, T0.Add(12*time.Minute)); err != nil {
		t.Fatal(err)
	}
	// the worker dies. An hour after the lease lapsed:
	pub := &rec{}
	for m := 18; m <= 78; m++ {
		sweepAt(t, s, o, T0.Add(time.Duration(m)*time.Minute), pub)
	}
	got, _ := q.Get(bg, task.ID)
	if got.Status != queue.StatusExpired {
		t.Fatalf("lease lapsed at +17m; at +78m the task is still %s (index_key %s, lease_expires_at %s)", got.Status, got.IndexKey, got.LeaseExpiresAt)
	}
}

// C. ttl_from=first_attempt: after its first claim the task has a deadline
// but its marker stays under ready/, so the sweep never reclaims it when
// its worker dies; with no more claims it stays running for ever, no event.
func TestAFirstAttemptTaskWhoseWorkerDiedIsExpiredByTheSweep(t *testing.T) {
	s := memstore.New()
	o := queue.Options{}
	q := queue.New(s, o)
	task := mustSubmit(t, q, queue.SubmitRequest{TTL: check.Dur("10m"), TTLFrom: queue.TTLFromFirstAttempt}, T0)
	claim1(t, q, queue.ClaimRequest{LeaseFor: time.Minute}, T0)
	pub := &rec{}
	for _, d := range []time.Duration{time.Hour, 2 * time.Hour, 24 * time.Hour} {
		sweepAt(t, s, o, T0.Add(d), pub)
	}
	got, _ := q.Get(bg, task.ID)
	if got.Status != queue.StatusExpired || pub.count(task.ID, queue.DetailTypeTaskExpired) != 1 {
		t.Fatalf("deadline %s, lease lapsed at +1m; a day later: %s, index_key %s, events %d", got.ExpiresAt, got.Status, got.IndexKey, pub.count(task.ID, queue.DetailTypeTaskExpired))
	}
}

// E. A failed child retried after its parent expired becomes pending and
// runs: the cascade is over, the parent flag is gone.
func TestAChildOfAnExpiredParentCannotBeRetried(t *testing.T) {
	s := memstore.New()
	o := queue.Options{}
	q := queue.New(s, o)
	parent := mustSubmit(t, q, queue.SubmitRequest{TTL: check.Dur("10m")}, T0)
	kid := mustSubmit(t, q, queue.SubmitRequest{ParentID: parent.ID, TTL: check.Dur("10h"), Queue: "kids", MaxAttempts: 1}, T0)
	c := claim1(t, q, queue.ClaimRequest{Queue: "kids"}, T0)
	q.Fail(bg, kid.ID, c.Lease.Token, queue.FailRequest{Error: "x"}, T0)
	sweepAt(t, s, o, T0.Add(10*time.Minute), nil) // parent expires, cascade
	if p, _ := q.Get(bg, parent.ID); p.Status != queue.StatusExpired {
		t.Fatal(p.Status)
	}
	var se *queue.StateError
	if _, err := q.Retry(bg, kid.ID, T0.Add(11*time.Minute)); !errors.As(err, &se) {
		t.Fatalf("retry of a child of an expired parent: %v, want a StateError", err)
	}
	sweepAt(t, s, o, T0.Add(12*time.Minute), nil)
	if cs, _ := q.Claim(bg, queue.ClaimRequest{Queue: "kids"}, T0.Add(13*time.Minute)); len(cs) == 1 {
		t.Fatalf("a child of an expired parent was retried and started (parent expired at +10m)")
	}
}

var _ = strings.HasPrefix

// D'. The listing phase ignores the sweep's Deadline: with the deadline
// already past at start, the sweep still lists the deadline/ head of every
// queue ever registered (serially) before it checks the time.
func TestASweepPastItsDeadlineListsNothingMore(t *testing.T) {
	s := memstore.New()
	o := queue.Options{}
	q := queue.New(s, o)
	for i := 0; i < 200; i++ {
		mustSubmit(t, q, queue.SubmitRequest{Queue: "tenant-" + string(rune('a'+i%26)) + strings.Repeat("x", i/26)}, T0)
	}
	wall := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	rep, _ := queue.New(s, o).Sweep(bg, T0.Add(time.Minute), queue.SweepOptions{Deadline: wall, Clock: func() time.Time { return wall.Add(time.Second) }})
	if rep.Requests.List > 2 {
		t.Fatalf("deadline passed before the sweep began, yet it made %d LISTs (queues %d, incomplete %v)", rep.Requests.List, rep.Queues, rep.Incomplete)
	}
}
