package queuetest

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/internal/check"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/store"
)

// deadlineLists is a store that counts the LISTs of deadline/ heads.
type deadlineLists struct {
	store.Store
	n atomic.Int64
}

func (d *deadlineLists) List(ctx context.Context, prefix, after string, limit int) (store.Page, error) {
	if strings.HasPrefix(prefix, "q/") && strings.HasSuffix(prefix, "/index/deadline/") {
		d.n.Add(1)
	}
	return d.Store.List(ctx, prefix, after, limit)
}

// runSweepQueues: however many queue names callers have sent, the sweep's
// own work is done first and the queue heads it has no time for wait for
// the next sweep.
func runSweepQueues(t *testing.T, f Factory) {
	t.Run("a_queue_declared_with_more_shards_than_the_deployment_is_swept_in_every_shard", func(t *testing.T) {
		e := newEnv(t, f)
		if _, _, err := e.decls.Declare(ctx, queues.Declaration{Name: "wide", Shards: 4}, t0); err != nil {
			t.Fatal(err)
		}
		var ids []string
		for i := 0; i < 12; i++ {
			ids = append(ids, e.submit(queue.SubmitRequest{Queue: "wide", TTL: check.Dur("1m")}, t0).Ref())
		}
		// A process that has not read the declaration, as a sweep's is.
		rep, err := e.reopen().Sweep(ctx, t0.Add(2*time.Minute), queue.SweepOptions{})
		if err != nil || rep.Expired != len(ids) {
			t.Fatalf("sweep: %+v %v", rep, err)
		}
		for _, id := range ids {
			wantStatus(t, e.get(id), queue.StatusExpired)
		}
	})

	t.Run("many_queue_names_with_due_wake_ups_do_not_stop_the_sweep_publishing_events", func(t *testing.T) {
		n := 20_000
		if f.Real {
			n = 300
		}
		e := newEnv(t, f)
		// An expiry whose event is owed, and one due in a queue of its own.
		owed := e.submit(queue.SubmitRequest{}, t0)
		if _, err := e.q.Expire(ctx, owed.Ref(), t0); err != nil {
			t.Fatal(err)
		}
		due := e.submit(queue.SubmitRequest{Queue: "zz-last", TTL: check.Dur("1m")}, t0)
		// n queue names, each with a wake-up due, as n submits with a
		// one-minute TTL leave them.
		keys := make([]string, 0, n)
		for i := 0; i < n; i++ {
			keys = append(keys, fmt.Sprintf("sweep/wake/%s_hostile-%05d", keyTime(t0), i))
		}
		e.putMany(keys)

		// The sweep runs out of time after 50 queue heads.
		rep, pub := sweepOutOfTime(t, e, 50)
		if !rep.Incomplete || rep.EventsSent != 1 || rep.QueuesDue < min(n, 1000) || rep.Queues >= rep.QueuesDue {
			t.Fatalf("first sweep: %+v", rep)
		}
		if evs := pub.take(); len(evs) != 1 || evs[0].TaskID != owed.ID {
			t.Fatalf("events: %+v", evs)
		}
		wantStatus(t, e.get(owed.Ref()), queue.StatusExpired)

		// Given time, the next sweep reads every head, expires the due
		// task, and deletes the wake-ups, past the grace.
		if rep := e.sweep(t0.Add(3*time.Minute), pub); rep.Incomplete || rep.Queues != n+1 || rep.WakeupsDeleted != n {
			t.Fatalf("second sweep: %+v", rep)
		}
		wantStatus(t, e.get(due.Ref()), queue.StatusExpired)
		if rep := e.sweep(t0.Add(4*time.Minute), pub); rep.Queues != 1 || rep.WakeupsDeleted != 1 {
			t.Fatalf("third sweep: %+v", rep) // zz-last's, read clean once more
		}
		if evs := pub.take(); len(evs) != 1 || evs[0].TaskID != due.ID {
			t.Fatalf("events: %+v", evs)
		}
		wantKeys(t, "wake-ups", e.wakeups())
		if rep := e.sweep(t0.Add(5*time.Minute), nil); rep.Requests != (store.Counts{List: 1}) {
			t.Fatalf("idle sweep: %v", rep.Requests)
		}
	})
}

// sweepOutOfTime runs a sweep at t0+1m whose clock passes its deadline
// once it has listed lists queue heads, and returns its report and what
// it published.
func sweepOutOfTime(t *testing.T, e *env, lists int64) (queue.SweepReport, *recorder) {
	t.Helper()
	gate := &deadlineLists{Store: e.s}
	wall := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time {
		if gate.n.Load() >= lists {
			return wall
		}
		return wall.Add(-time.Second)
	}
	pub := &recorder{}
	rep, err := e.open(gate).Sweep(ctx, t0.Add(time.Minute), queue.SweepOptions{Publisher: pub, Deadline: wall, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	return rep, pub
}
