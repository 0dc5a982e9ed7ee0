package queuetest

import (
	"testing"
	"time"

	"github.com/s3q/s3q/shared/internal/check"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/store/storefault"
)

// runCancelRetryCases are the retry cases of runCancel (groups.go).
func runCancelRetryCases(t *testing.T, f Factory) {

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
}

// runLostManageRetryCases are the retry cases of runLostManage (groups.go).
func runLostManageRetryCases(t *testing.T, f Factory) {

	for _, c := range []struct{ name, op, prefix string }{
		{"record", storefault.OpPutIfMatch, "q/default/tasks/"},
		{"dedup_pointer", storefault.OpPutIfMatch, "q/default/dedup/"},
		{"marker", storefault.OpPut, "q/default/index/ready/"},
	} {
		t.Run("a_retry_whose_"+c.name+"_answer_was_lost_is_recognised", func(t *testing.T) {
			e, fs := newLossEnv(t, f)
			a := e.submit(queue.SubmitRequest{DedupKey: "k"}, t0)
			if _, err := e.q.Cancel(ctx, a.Ref(), t0); err != nil {
				t.Fatal(err)
			}
			lose(fs, c.op, c.prefix)
			got, err := e.q.Retry(ctx, a.Ref(), t0.Add(time.Second))
			if err != nil {
				t.Fatal(err)
			}
			wantHits(t, fs, 1)
			wantStatus(t, got, queue.StatusPending)
			e.consistent()
			res, err := e.q.Submit(ctx, queue.SubmitRequest{TaskType: "email.send", DedupKey: "k"}, t0.Add(time.Hour))
			if err != nil || !res.Deduplicated || res.Task.ID != a.ID {
				t.Fatalf("the key: %+v, %v", res, err)
			}
		})
	}
}
