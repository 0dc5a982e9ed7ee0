package queuetest

import (
	"testing"
	"time"

	"github.com/s3q/s3q/shared/internal/check"
	"github.com/s3q/s3q/shared/queue"
)

// runFastWaitsCases are the waits cases of runFast (groups.go).
func runFastWaitsCases(t *testing.T, f Factory) {

	t.Run("arrivals_wake_on_this_processes_submit_after_its_record_is_written", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		woken := e.q.Arrivals("a")
		other := e.q.Arrivals("b")
		if _, err := e.reopen().Submit(ctx, queue.SubmitRequest{TaskType: "x", Queue: "a"}, t0); err != nil {
			t.Fatal(err) // another process's submit: no signal here
		}
		select {
		case <-woken:
			t.Fatal("woken by another process's submit")
		default:
		}
		task := e.submit(queue.SubmitRequest{Queue: "a"}, t0)
		select {
		case <-woken:
		default:
			t.Fatal("not woken by this process's submit")
		}
		select {
		case <-other:
			t.Fatal("queue b woken by a submit to a")
		default:
		}
		if _, err := e.s.Get(ctx, queue.TaskKey(task.Queue, task.ID)); err != nil {
			t.Fatalf("woken before the record exists: %v", err)
		}
	})
}

// runWaits: a queue's waits are bounded apart from every other queue's
// (Queue.HoldWait).
func runWaits(t *testing.T, f Factory) {
	t.Run("a_queue_flooding_its_waits_leaves_another_queues_waits_unaffected", func(t *testing.T) {
		e := newEnv(t, f)
		until := t0.Add(25 * time.Second)
		// Queue a's callers take its 3 holds and ask for more.
		var holds []*queue.WaitHold
		for range 3 {
			h, err := e.q.HoldWait(ctx, "a", 3, until, t0)
			if err != nil {
				t.Fatal(err)
			}
			holds = append(holds, h)
		}
		for range 5 {
			_, err := e.q.HoldWait(ctx, "a", 3, until, t0)
			check.Err(t, err, queue.ErrTooManyWaits)
		}
		// Queue b's waits are held all the same, as many as its bound.
		for range 3 {
			if _, err := e.q.HoldWait(ctx, "b", 3, until, t0); err != nil {
				t.Fatalf("queue b: %v", err)
			}
		}
		// A released hold is taken again; another process shares them.
		if err := holds[0].Release(ctx); err != nil {
			t.Fatal(err)
		}
		other := e.reopen()
		h, err := other.HoldWait(ctx, "a", 3, until, t0.Add(time.Second))
		if err != nil {
			t.Fatalf("after a release: %v", err)
		}
		_, err = other.HoldWait(ctx, "a", 3, until, t0.Add(time.Second))
		check.Err(t, err, queue.ErrTooManyWaits)
		// Holds whose release was lost (their process died) are taken
		// over once their wait is over, not before.
		_, err = other.HoldWait(ctx, "a", 3, until, until)
		check.Err(t, err, queue.ErrTooManyWaits)
		if _, err := other.HoldWait(ctx, "a", 3, until.Add(25*time.Second), until.Add(time.Millisecond)); err != nil {
			t.Fatalf("after the waits' end: %v", err)
		}
		// The release of a hold taken over since changes nothing.
		_ = holds[1].Release(ctx)
		_ = holds[2].Release(ctx)
		_ = h.Release(ctx)
	})
}
