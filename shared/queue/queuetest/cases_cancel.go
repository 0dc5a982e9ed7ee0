package queuetest

import (
	"testing"
	"time"

	"github.com/s3q/s3q/shared/internal/check"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/store/storefault"
)

// runCancelCancelCases are the cancel cases of runCancel (groups.go).
func runCancelCancelCases(t *testing.T, f Factory) {
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
}

// runCancelRulesCancelCases are the cancel cases of runCancelRules (groups.go).
func runCancelRulesCancelCases(t *testing.T, f Factory) {
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
}

// runLostManageCancelCases are the cancel cases of runLostManage (groups.go).
func runLostManageCancelCases(t *testing.T, f Factory) {

	t.Run("a_cancel_whose_answer_was_lost_is_recognised", func(t *testing.T) {
		t.Parallel()
		e, fs := newLossEnv(t, f)
		a := e.submit(queue.SubmitRequest{DedupKey: "k"}, t0)
		lose(fs, storefault.OpPutIfMatch, "q/default/tasks/")
		got, err := e.q.Cancel(ctx, a.Ref(), t0)
		if err != nil {
			t.Fatal(err)
		}
		wantHits(t, fs, 1)
		wantStatus(t, got, queue.StatusCancelled)
		e.consistent()
		res, err := e.q.Submit(ctx, queue.SubmitRequest{TaskType: "email.send", DedupKey: "k"}, t0)
		if err != nil || res.Deduplicated {
			t.Fatalf("the key is not free: %+v, %v", res, err)
		}
	})
}
