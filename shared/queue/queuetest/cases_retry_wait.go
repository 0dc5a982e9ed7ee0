package queuetest

import (
	"testing"
	"time"

	"github.com/s3q/s3q/shared/internal/check"
	"github.com/s3q/s3q/shared/queue"
)

// runRetryWait: a failure with RetryAfter, and the rule of a synchronous
// wait, on every store.
func runRetryWait(t *testing.T, f Factory) {
	// A failure with RetryAfter (a push target's Retry-After) is retried
	// at exactly now + RetryAfter, using up an attempt; past the deadline
	// the task expires instead of running.
	t.Run("a_fail_with_retry_after_is_retried_at_that_time_and_expires_past_its_deadline", func(t *testing.T) {
		now := t0
		e := newEnv(t, f)
		q := e.q
		exp := now.Add(time.Minute)
		task := e.submit(queue.SubmitRequest{TaskType: "t", ExpiresAt: &exp}, now)
		claim := func(at time.Time) []queue.Claimed {
			c, err := q.Claim(ctx, queue.ClaimRequest{}, at)
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
		c := claim(now)
		got, err := q.Fail(ctx, queue.FailRequest{ID: task.Ref(), LeaseToken: c[0].Lease.Token, Error: "503", RetryAfter: 30 * time.Second}, now)
		if err != nil || got.Status != queue.StatusPending || !got.AvailableAt.Equal(now.Add(30*time.Second)) || got.Attempt != 1 {
			t.Fatalf("after fail: %s available %s attempt %d, %v", got.Status, got.AvailableAt, got.Attempt, err)
		}
		if len(claim(now.Add(29*time.Second))) != 0 {
			t.Fatal("claimed before Retry-After")
		}
		c = claim(now.Add(30 * time.Second))
		if len(c) != 1 || c[0].Task.Attempt != 2 {
			t.Fatalf("claim at Retry-After: %+v", c)
		}
		later := now.Add(30 * time.Second)
		if _, err := q.Fail(ctx, queue.FailRequest{ID: task.Ref(), LeaseToken: c[0].Lease.Token, Error: "503", RetryAfter: time.Hour}, later); err != nil {
			t.Fatal(err)
		}
		if c := claim(later.Add(2 * time.Hour)); len(c) != 0 {
			t.Fatalf("ran past its deadline: %+v", c)
		}
		if got, _ := q.Get(ctx, task.Ref()); got.Status != queue.StatusExpired {
			t.Fatalf("past the deadline: %s", got.Status)
		}
		if _, err := q.Fail(ctx, queue.FailRequest{ID: task.Ref(), LeaseToken: "x", RetryAfter: 1 << 62}, now); err == nil {
			t.Error("an out-of-range RetryAfter was accepted")
		}
	})

	// At each look: wait on before the deadline; past it, a pending task
	// is expired and a running one asked to cancel; a finished task ends
	// the wait.
	t.Run("a_wait_stops_a_task_whose_deadline_passed_during_it", func(t *testing.T) {
		q := newEnv(t, f).q
		submit := func() queue.Task {
			t.Helper()
			res, err := q.Submit(ctx, queue.SubmitRequest{TaskType: "a", TTL: check.Dur("1m")}, t0)
			if err != nil {
				t.Fatal(err)
			}
			return res.Task
		}
		look := func(tk queue.Task, now time.Time, want queue.WaitState) queue.Task {
			t.Helper()
			got, state, err := q.CheckWait(ctx, tk, now)
			if err != nil || state != want {
				t.Fatalf("CheckWait at %s: %v %v, want state %v", now, state, err, want)
			}
			return got
		}

		pending := submit()
		look(pending, t0.Add(59*time.Second), queue.WaitOn)
		if got := look(pending, t0.Add(time.Minute), queue.WaitDeadline); got.Status != queue.StatusExpired {
			t.Errorf("a pending task past its deadline is %s, want expired", got.Status)
		}

		submit()
		cl, err := q.Claim(ctx, queue.ClaimRequest{LeaseFor: time.Hour}, t0.Add(time.Second))
		if err != nil || len(cl) != 1 {
			t.Fatalf("claim: %v %v", cl, err)
		}
		got := look(cl[0].Task, t0.Add(2*time.Minute), queue.WaitDeadline)
		if got.Status != queue.StatusRunning || !got.CancelRequested {
			t.Errorf("a running task past its deadline: %s, cancel_requested %v; want running and asked to cancel", got.Status, got.CancelRequested)
		}
		done, err := q.Complete(ctx, queue.CompleteRequest{ID: got.Ref(), LeaseToken: cl[0].Lease.Token}, t0.Add(2*time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		look(done, t0.Add(time.Hour), queue.WaitDone)
	})
}
