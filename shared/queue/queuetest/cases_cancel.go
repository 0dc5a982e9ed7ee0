package queuetest

import (
	"errors"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/internal/check"
	"github.com/s3q/s3q/shared/queue"
)

func wantState(t testing.TB, err error, status queue.Status) {
	t.Helper()
	var se *queue.StateError
	if !errors.As(err, &se) || se.Status != status {
		t.Fatalf("err = %v, want a *queue.StateError in status %s", err, status)
	}
}

func runCancel(t *testing.T, f Factory) {
	t.Run("cancel_of_a_pending_task_cancels_it_at_once", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		task := e.submit(queue.SubmitRequest{}, t0)
		got, err := e.q.Cancel(ctx, task.Ref(), t0)
		if err != nil {
			t.Fatal(err)
		}
		wantStatus(t, got, queue.StatusCancelled)
		wantTime(t, "cancelled_at", got.CancelledAt, t0)
		if m := e.markers(); len(m) != 0 {
			t.Fatalf("markers left: %v", m)
		}
		e.claimNone(t0)
		again, err := e.q.Cancel(ctx, task.Ref(), t0.Add(time.Second))
		if err != nil || again.Status != queue.StatusCancelled {
			t.Fatalf("cancel twice: %v %v", again.Status, err)
		}
	})

	t.Run("cancel_of_a_running_task_requests_it_and_the_holder_acknowledges", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		task := e.submit(queue.SubmitRequest{}, t0)
		c := e.claimOne(t0)
		got, err := e.q.Cancel(ctx, task.Ref(), t0.Add(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		wantStatus(t, got, queue.StatusRunning)
		if !got.CancelRequested {
			t.Fatal("cancel_requested not set")
		}
		hb, err := e.q.Heartbeat(ctx, queue.HeartbeatRequest{ID: task.Ref(), LeaseToken: c.Lease.Token}, t0.Add(2*time.Second))
		if err != nil || !hb.Task.CancelRequested {
			t.Fatalf("heartbeat does not show the cancel request: %v %v", hb.Task.CancelRequested, err)
		}
		acked, err := e.q.AckCancel(ctx, queue.AckCancelRequest{ID: task.Ref(), LeaseToken: c.Lease.Token}, t0.Add(3*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		wantStatus(t, acked, queue.StatusCancelled)
		if m := e.markers(); len(m) != 0 {
			t.Fatalf("markers left: %v", m)
		}
	})

	t.Run("cancel_of_a_completed_task_is_a_state_error", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		e.submit(queue.SubmitRequest{}, t0)
		c := e.claimOne(t0)
		if _, err := e.q.Complete(ctx, queue.CompleteRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token}, t0); err != nil {
			t.Fatal(err)
		}
		before := e.raw(c.Task.Ref())
		_, err := e.q.Cancel(ctx, c.Task.Ref(), t0)
		wantState(t, err, queue.StatusCompleted)
		if string(e.raw(c.Task.Ref())) != string(before) {
			t.Fatal("a refused cancel changed the record")
		}
		_, err = e.q.Cancel(ctx, queue.NewID(t0), t0)
		check.Err(t, err, queue.ErrNotFound)
	})

	t.Run("retry_puts_a_failed_or_cancelled_task_back_with_fresh_attempts", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		task := e.submit(queue.SubmitRequest{MaxAttempts: 1}, t0)
		c := e.claimOne(t0)
		if _, err := e.q.Fail(ctx, queue.FailRequest{ID: task.Ref(), LeaseToken: c.Lease.Token, Error: "x"}, t0); err != nil {
			t.Fatal(err)
		}
		_, err := e.q.Retry(ctx, task.Ref(), t0.Add(time.Second))
		wantState(t, err, queue.StatusFailed) // its Task Dead-Lettered event is owed
		if _, err := e.q.Sweep(ctx, t0.Add(time.Second), queue.SweepOptions{}); err != nil {
			t.Fatal(err)
		}
		got, err := e.q.Retry(ctx, task.Ref(), t0.Add(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		wantStatus(t, got, queue.StatusPending)
		if got.Attempt != 0 || !got.AvailableAt.Equal(t0.Add(time.Minute)) {
			t.Fatalf("attempt %d available_at %s", got.Attempt, got.AvailableAt)
		}
		e.claimOne(t0.Add(time.Minute))

		cancelled := e.submit(queue.SubmitRequest{}, t0)
		if _, err := e.q.Cancel(ctx, cancelled.Ref(), t0); err != nil {
			t.Fatal(err)
		}
		if got, err := e.q.Retry(ctx, cancelled.Ref(), t0.Add(2*time.Minute)); err != nil || got.Status != queue.StatusPending {
			t.Fatalf("retry cancelled: %v %v", got.Status, err)
		}
	})

	t.Run("retry_takes_its_dedup_key_back_from_a_holder_past_its_deadline_and_expires_that_holder", func(t *testing.T) {
		e := newEnv(t, f)
		first := e.submit(queue.SubmitRequest{DedupKey: "k"}, t0)
		if _, err := e.q.Cancel(ctx, first.Ref(), t0); err != nil {
			t.Fatal(err)
		}
		holder := e.submit(queue.SubmitRequest{DedupKey: "k", TTL: check.Dur("1m")}, t0)
		if holder.ID == first.ID {
			t.Fatal("the cancelled task still held its key")
		}
		// The holder can never run after t0+1m, though no sweep marked it.
		got, err := e.q.Retry(ctx, first.Ref(), t0.Add(2*time.Minute))
		if err != nil || got.Status != queue.StatusPending {
			t.Fatalf("retry: %v %v", got.Status, err)
		}
		wantStatus(t, e.get(holder.Ref()), queue.StatusExpired)
		res, err := e.q.Submit(ctx, queue.SubmitRequest{TaskType: "x", DedupKey: "k"}, t0.Add(3*time.Minute))
		if err != nil || !res.Deduplicated || res.Task.ID != first.ID {
			t.Fatalf("the key after the retry: %+v %v", res, err)
		}
	})

	t.Run("an_expired_task_cannot_be_retried", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		task := e.submit(queue.SubmitRequest{TTL: check.Dur("0s")}, t0)
		before := e.raw(task.Ref())
		_, err := e.q.Retry(ctx, task.Ref(), t0)
		wantState(t, err, queue.StatusExpired)
		if string(e.raw(task.Ref())) != string(before) {
			t.Fatal("a refused retry changed the record")
		}
		// Nor a failed one whose deadline has passed.
		late := e.submit(queue.SubmitRequest{TTL: check.Dur("1m"), MaxAttempts: 1}, t0)
		c := e.claimOne(t0)
		if _, err := e.q.Fail(ctx, queue.FailRequest{ID: late.Ref(), LeaseToken: c.Lease.Token, Error: "x"}, t0); err != nil {
			t.Fatal(err)
		}
		_, err = e.q.Retry(ctx, late.Ref(), t0.Add(time.Minute))
		wantState(t, err, queue.StatusFailed)
	})

	t.Run("expire_by_hand_marks_a_pending_task_expired_and_refuses_a_running_one", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		task := e.submit(queue.SubmitRequest{}, t0)
		other := e.submit(queue.SubmitRequest{}, t0)
		got, err := e.q.Expire(ctx, task.Ref(), t0.Add(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		wantStatus(t, got, queue.StatusExpired)
		if got.ExpiryReason != queue.ReasonManual {
			t.Fatalf("expiry_reason = %q", got.ExpiryReason)
		}
		c := e.claimOne(t0.Add(time.Second))
		if c.Task.ID != other.ID {
			t.Fatal("claimed the expired task")
		}
		_, err = e.q.Expire(ctx, other.Ref(), t0.Add(2*time.Second))
		wantState(t, err, queue.StatusRunning)
	})

	t.Run("a_wait_holding_a_stale_deadline_does_not_expire_a_task_whose_deadline_moved", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		stale := e.submit(queue.SubmitRequest{TTL: check.Dur("1h")}, t0)
		c := e.claimOne(t0)
		if _, err := e.q.Reschedule(ctx, queue.RescheduleRequest{
			ID: stale.Ref(), LeaseToken: c.Lease.Token, ExtendExpiration: queue.Duration(time.Hour),
		}, t0.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		// The waiter read the task before its deadline moved an hour later.
		got, state, err := e.q.CheckWait(ctx, stale, t0.Add(90*time.Minute))
		if err != nil || state != queue.WaitOn || got.Status != queue.StatusPending {
			t.Fatalf("wait past the old deadline: %v %v %v, want pending and the wait on", got.Status, state, err)
		}
		if got := e.get(stale.ID); got.Status != queue.StatusPending || !got.ExpiresAt.Equal(t0.Add(2*time.Hour)) {
			t.Fatalf("record %s expires %v", got.Status, got.ExpiresAt)
		}
		got, state, err = e.q.CheckWait(ctx, stale, t0.Add(2*time.Hour))
		if err != nil || state != queue.WaitDeadline || got.Status != queue.StatusExpired || got.ExpiryReason != queue.ReasonTTL {
			t.Fatalf("wait at the new deadline: %v %v %v", got.Status, state, err)
		}
	})
}
