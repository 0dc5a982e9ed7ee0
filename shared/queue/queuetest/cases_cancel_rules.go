package queuetest

import (
	"errors"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/queue"
)

// runCancelRules: a cancel request outlives a lapsed lease and wins over
// a retryable failure; a retry never makes two live tasks of one dedup
// key; the times a retry computes are whole microseconds.
func runCancelRules(t *testing.T, f Factory) {
	t.Run("a_cancel_request_survives_a_lapsed_lease", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		task := e.submit(queue.SubmitRequest{}, t0)
		e.claim(queue.ClaimRequest{LeaseFor: time.Minute}, t0)
		// The lease has already run out: nobody holds it.
		if _, err := e.q.Cancel(ctx, task.Ref(), t0.Add(2*time.Minute)); err != nil {
			t.Fatal(err)
		}
		cs, err := e.reopen().Claim(ctx, queue.ClaimRequest{}, t0.Add(3*time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		if len(cs) == 1 {
			t.Fatalf("cancelled task %s was started again (attempt %d, cancel_requested=%v)", cs[0].Task.ID, cs[0].Task.Attempt, cs[0].Task.CancelRequested)
		}
	})

	t.Run("a_cancel_request_wins_over_a_retryable_failure", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		task := e.submit(queue.SubmitRequest{}, t0)
		c := e.claimOne(t0)
		if _, err := e.q.Cancel(ctx, task.Ref(), t0.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		got, err := e.q.Fail(ctx, queue.FailRequest{ID: task.Ref(), LeaseToken: c.Lease.Token, Error: "interrupted"}, t0.Add(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if got.Status == queue.StatusPending {
			t.Fatalf("a cancel-requested task went back to pending (cancel_requested=%v): it would run again", got.CancelRequested)
		}
	})

	t.Run("retry_never_makes_two_live_tasks_of_one_dedup_key", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		a := e.submit(queue.SubmitRequest{DedupKey: "k", MaxAttempts: 1}, t0)
		ca := e.claimOne(t0)
		if _, err := e.q.Fail(ctx, queue.FailRequest{ID: a.Ref(), LeaseToken: ca.Lease.Token, Error: "x"}, t0); err != nil {
			t.Fatal(err)
		}
		b, err := e.q.Submit(ctx, queue.SubmitRequest{TaskType: "x", DedupKey: "k"}, t0.Add(time.Second))
		if err != nil || b.Deduplicated {
			t.Fatalf("b: %+v %v", b, err)
		}
		_, err = e.q.Retry(ctx, a.Ref(), t0.Add(2*time.Second))
		var se *queue.StateError
		if !errors.As(err, &se) {
			t.Fatalf("retry of a task whose dedup key another live task holds: %v, want a StateError", err)
		}
		// Once b is finished the key is free and a can be retried; a submit
		// meanwhile does not take the key over from the reviving a.
		cb := e.claimOne(t0.Add(3 * time.Second))
		if cb.Task.ID != b.Task.ID {
			t.Fatalf("claimed %s, want b %s", cb.Task.ID, b.Task.ID)
		}
		if _, err := e.q.Complete(ctx, queue.CompleteRequest{ID: b.Task.Ref(), LeaseToken: cb.Lease.Token}, t0.Add(3*time.Second)); err != nil {
			t.Fatal(err)
		}
		if _, err := e.q.Sweep(ctx, t0.Add(4*time.Second), queue.SweepOptions{}); err != nil { // publishes a's Task Dead-Lettered event
			t.Fatal(err)
		}
		if r, err := e.q.Retry(ctx, a.Ref(), t0.Add(4*time.Second)); err != nil || r.Status != queue.StatusPending {
			t.Fatalf("retry once the key is free: %v %v", r.Status, err)
		}
		c, err := e.q.Submit(ctx, queue.SubmitRequest{TaskType: "x", DedupKey: "k"}, t0.Add(5*time.Second))
		if err != nil || !c.Deduplicated || c.Task.ID != a.ID {
			t.Fatalf("a submit after the retry must return the revived task: %+v %v", c, err)
		}
		ga, gb := e.get(a.Ref()), e.get(b.Task.Ref())
		if !ga.Status.Terminal() && !gb.Status.Terminal() {
			t.Fatalf("two live tasks for dedup key k: %s (%s) and %s (%s)", ga.ID, ga.Status, gb.ID, gb.Status)
		}
	})

	t.Run("a_retry_with_the_default_backoff_is_available_at_a_whole_microsecond", func(t *testing.T) {
		t.Parallel()
		// The default backoff has jitter; a time off the microsecond would
		// make the record and its index key disagree.
		e := newEnv(t, f, func(o *queue.Options) { o.Backoff = nil })
		for i := 0; i < 20; i++ {
			e.submit(queue.SubmitRequest{}, t0)
		}
		for _, c := range e.claim(queue.ClaimRequest{MaxTasks: 20}, t0) {
			got, err := e.q.Fail(ctx, queue.FailRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token, Error: "x"}, t0)
			if err != nil {
				t.Fatal(err)
			}
			if got.AvailableAt.Nanosecond()%1000 != 0 {
				t.Fatalf("a retry is available at %s (index key %s): not a whole microsecond", got.AvailableAt.Format(time.RFC3339Nano), got.IndexKey)
			}
		}
	})
}
