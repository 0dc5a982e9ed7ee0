package queuetest

import (
	"testing"
	"time"

	"github.com/s3q/s3q/shared/internal/check"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/store/storefault"
)

// runCancelExpiryCases are the expiry cases of runCancel (groups.go).
func runCancelExpiryCases(t *testing.T, f Factory) {

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

// runLostManageExpiryCases are the expiry cases of runLostManage (groups.go).
func runLostManageExpiryCases(t *testing.T, f Factory) {

	for _, c := range []struct{ name, op, prefix string }{
		{"record", storefault.OpPutIfMatch, "q/default/tasks/"},
		{"outbox_entry", storefault.OpPut, "sweep/"},
	} {
		t.Run("an_expire_whose_"+c.name+"_answer_was_lost_is_recognised_and_owes_one_event", func(t *testing.T) {
			e, fs := newLossEnv(t, f)
			a := e.submit(queue.SubmitRequest{}, t0)
			lose(fs, c.op, c.prefix)
			got, err := e.q.Expire(ctx, a.Ref(), t0)
			if err != nil {
				t.Fatal(err)
			}
			wantHits(t, fs, 1)
			wantStatus(t, got, queue.StatusExpired)
			e.consistent()
			pub := &recorder{}
			e.sweep(t0.Add(time.Minute), pub)
			if evs := byTask(t, pub.take()); len(evs) != 1 {
				t.Fatalf("%d events, want 1", len(evs))
			}
		})

		t.Run("a_sweep_whose_event_note_on_the_"+c.name+"_answer_was_lost_publishes_once", func(t *testing.T) {
			e, fs := newLossEnv(t, f)
			a := e.submit(queue.SubmitRequest{}, t0)
			if _, err := e.q.Expire(ctx, a.Ref(), t0); err != nil {
				t.Fatal(err)
			}
			if c.op == storefault.OpPut {
				lose(fs, storefault.OpDelete, c.prefix) // the outbox entry's delete
			} else {
				lose(fs, c.op, c.prefix) // the note of expiry_event_sent_at
			}
			pub := &recorder{}
			if _, err := e.q.Sweep(ctx, t0.Add(time.Minute), queue.SweepOptions{Publisher: pub}); err != nil {
				t.Fatal(err)
			}
			wantHits(t, fs, 1)
			e.sweep(t0.Add(2*time.Minute), pub)
			e.sweep(t0.Add(3*time.Minute), pub)
			if evs := byTask(t, pub.take()); len(evs) != 1 {
				t.Fatalf("%d events, want 1", len(evs))
			}
			if got := e.get(a.Ref()); got.ExpiryEventSentAt == nil {
				t.Fatal("the event is still owed")
			}
			if h := e.hints(); len(h) != 0 {
				t.Fatalf("hints left: %v", h)
			}
		})

		t.Run("a_sweep_whose_"+c.name+"_answer_was_lost_expires_the_task_once", func(t *testing.T) {
			e, fs := newLossEnv(t, f)
			a := e.submit(queue.SubmitRequest{TTL: check.Dur("1m")}, t0)
			lose(fs, c.op, c.prefix)
			pub := &recorder{}
			rep, err := e.q.Sweep(ctx, t0.Add(2*time.Minute), queue.SweepOptions{Publisher: pub})
			if err != nil {
				t.Fatal(err)
			}
			wantHits(t, fs, 1)
			if rep.Expired != 1 {
				t.Fatalf("sweep expired %d, want 1", rep.Expired)
			}
			wantStatus(t, e.get(a.Ref()), queue.StatusExpired)
			e.sweep(t0.Add(3*time.Minute), pub)
			if evs := byTask(t, pub.take()); len(evs) != 1 {
				t.Fatalf("%d events, want 1", len(evs))
			}
			e.consistent()
		})
	}
}

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

// runRetryWaitExpiryCases are the expiry cases of runRetryWait (groups.go).
func runRetryWaitExpiryCases(t *testing.T, f Factory) {

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
