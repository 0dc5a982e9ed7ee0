package queuetest

import (
	"testing"
	"time"

	"github.com/s3q/s3q/shared/internal/check"
	"github.com/s3q/s3q/shared/queue"
)

// runPresent: a pending task past its expires_at reads expired on every
// read (a listing, the counts, the record as a read presents it) before
// the sweep has written it, and no claim starts it.
func runPresent(t *testing.T, f Factory) {
	t.Run("a_pending_task_past_its_deadline_reads_expired_before_the_sweep_writes_it", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		task := e.submit(queue.SubmitRequest{TTL: check.Dur("5s")}, t0)
		other := e.submit(queue.SubmitRequest{}, t0)
		late := t0.Add(8 * time.Second)

		// The record still says pending; a read at late presents it expired.
		stored := e.get(task.Ref())
		wantStatus(t, stored, queue.StatusPending)
		read := stored.AsOf(late)
		wantStatus(t, read, queue.StatusExpired)
		wantTime(t, "expired_at", read.ExpiredAt, t0.Add(5*time.Second))
		if read.ExpiryReason != queue.ReasonTTL {
			t.Fatalf("expiry_reason %q, want ttl", read.ExpiryReason)
		}
		if got := stored.AsOf(t0.Add(4 * time.Second)); got.Status != queue.StatusPending {
			t.Fatalf("before its deadline it reads %s", got.Status)
		}

		res, err := e.q.List(ctx, queue.ListRequest{Queue: "default", Status: queue.StatusPending, Now: late})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Tasks) != 1 || res.Tasks[0].ID != other.ID {
			t.Fatalf("pending listing at the deadline+3s: %v, want only %s", ids(res.Tasks), other.ID)
		}
		res, err = e.q.List(ctx, queue.ListRequest{Queue: "default", Now: late})
		if err != nil {
			t.Fatal(err)
		}
		for _, got := range res.Tasks {
			if got.ID == task.ID && got.Status != queue.StatusExpired {
				t.Fatalf("full listing shows it %s", got.Status)
			}
		}
		st, err := e.stats("default", late)
		if err != nil {
			t.Fatal(err)
		}
		if st.Counts.Expired != 1 || st.Counts.Live != 1 {
			t.Fatalf("counts %+v, want 1 expired and 1 live", st.Counts)
		}

		// A claim never starts it; the sweep writes it and its event.
		for _, c := range e.claim(queue.ClaimRequest{MaxTasks: 10}, late) {
			if c.Task.ID == task.ID {
				t.Fatal("a claim started a task past its deadline")
			}
		}
		pub := &recorder{}
		e.sweep(late, pub)
		wantStatus(t, e.get(task.Ref()), queue.StatusExpired)
		if n := pub.count(task.ID, queue.DetailTypeTaskExpired); n != 1 {
			t.Fatalf("%d Task Expired events, want 1", n)
		}
		st, err = e.stats("default", late)
		if err != nil || st.Counts.Expired != 1 {
			t.Fatalf("counts after the sweep %+v %v, want 1 expired", st.Counts, err)
		}
	})
	t.Run("cancel_or_expire_of_a_task_that_reads_expired_is_refused_and_its_event_still_goes_out", func(t *testing.T) {
		// Every read shows a pending task past its deadline as expired
		// (reason ttl): a cancel must not turn it into cancelled (a
		// terminal status the user saw changing into another, and its
		// Task Expired event never published), nor a hand expire rewrite
		// its reason to manual.
		t.Parallel()
		e := newEnv(t, f)
		task := e.submit(queue.SubmitRequest{TTL: check.Dur("5s")}, t0)
		late := t0.Add(8 * time.Second)
		_, err := e.q.Cancel(ctx, task.Ref(), late)
		wantState(t, err, queue.StatusExpired)
		_, err = e.q.Expire(ctx, task.Ref(), late)
		wantState(t, err, queue.StatusExpired)
		for _, op := range []queue.BulkOp{queue.OpCancel, queue.OpExpire} {
			for _, dry := range []bool{true, false} {
				res, err := e.q.Bulk(ctx, op, queue.BulkRequest{Queue: queue.DefaultQueue, Status: queue.StatusPending, DryRun: dry}, late)
				if err != nil || res.Matched != 0 || res.Changed != 0 {
					t.Fatalf("bulk %s of pending tasks (dry run %v): %+v %v, want none matched: it reads expired", op, dry, res, err)
				}
			}
		}
		pub := &recorder{}
		e.sweep(late, pub)
		got := e.get(task.Ref())
		wantStatus(t, got, queue.StatusExpired)
		if got.ExpiryReason != queue.ReasonTTL {
			t.Fatalf("expiry_reason %q, want ttl", got.ExpiryReason)
		}
		if n := pub.count(task.ID, queue.DetailTypeTaskExpired); n != 1 {
			t.Fatalf("%d Task Expired events, want 1", n)
		}
	})
}

func ids(ts []queue.Task) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.ID
	}
	return out
}
