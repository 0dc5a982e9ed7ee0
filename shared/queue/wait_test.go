package queue_test

import (
	"context"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/internal/check"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/store/memstore"
)

// The rule of a synchronous wait (DESIGN §6), at each look: wait on
// before the deadline; past it, a pending task is expired and a running
// one asked to cancel; a finished task ends the wait.
func TestCheckWaitStopsATaskWhoseDeadlinePassedDuringTheWait(t *testing.T) {
	ctx := context.Background()
	q := queue.New(memstore.New(), queue.Options{})
	submit := func() queue.Task {
		t.Helper()
		res, err := q.Submit(ctx, queue.SubmitRequest{TaskType: "a", TTL: check.Dur("1m")}, T0)
		if err != nil {
			t.Fatal(err)
		}
		return res.Task
	}
	check := func(tk queue.Task, now time.Time, want queue.WaitState) queue.Task {
		t.Helper()
		got, state, err := q.CheckWait(ctx, tk, now)
		if err != nil || state != want {
			t.Fatalf("CheckWait at %s: %v %v, want state %v", now, state, err, want)
		}
		return got
	}

	pending := submit()
	check(pending, T0.Add(59*time.Second), queue.WaitOn)
	if got := check(pending, T0.Add(time.Minute), queue.WaitDeadline); got.Status != queue.StatusExpired {
		t.Errorf("a pending task past its deadline is %s, want expired", got.Status)
	}

	submit()
	cl, err := q.Claim(ctx, queue.ClaimRequest{LeaseFor: time.Hour}, T0.Add(time.Second))
	if err != nil || len(cl) != 1 {
		t.Fatalf("claim: %v %v", cl, err)
	}
	got := check(cl[0].Task, T0.Add(2*time.Minute), queue.WaitDeadline)
	if got.Status != queue.StatusRunning || !got.CancelRequested {
		t.Errorf("a running task past its deadline: %s, cancel_requested %v; want running and asked to cancel", got.Status, got.CancelRequested)
	}
	done, err := q.Complete(ctx, got.ID, cl[0].Lease.Token, nil, T0.Add(2*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	check(done, T0.Add(time.Hour), queue.WaitDone)
}
