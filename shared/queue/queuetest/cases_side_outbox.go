package queuetest

import (
	"testing"
	"time"

	"github.com/s3q/s3q/shared/internal/check"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/store/storefault"
)

// The outbox entry of a transition that owes follow-up work
// (side_outbox.go).
func runSideOutbox(t *testing.T, f Factory) {
	// deadLettering returns a running task with one attempt and its lease.
	deadLettering := func(e *env) queue.Claimed {
		e.submit(queue.SubmitRequest{MaxAttempts: 1}, t0)
		return e.claim(queue.ClaimRequest{LeaseFor: crashLease}, t0)[0]
	}

	t.Run("an_outbox_entry_exists_from_a_dead_letter_until_the_sweep_has_published_its_event", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		c := deadLettering(e)
		if _, err := e.q.Fail(ctx, queue.FailRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token, Error: "x"}, t0); err != nil {
			t.Fatal(err)
		}
		wantKeyCount(t, "outbox entries after the dead letter", e.outbox(), 1)
		// A task that completes owes nothing.
		e.submit(queue.SubmitRequest{}, t0)
		done := e.claimOne(t0)
		if _, err := e.q.Complete(ctx, queue.CompleteRequest{ID: done.Task.Ref(), LeaseToken: done.Lease.Token}, t0); err != nil {
			t.Fatal(err)
		}
		wantKeyCount(t, "outbox entries after a complete", e.outbox(), 1)
		if ev := e.wantEvents(t0.Add(time.Minute), 1)[c.Task.ID]; ev.DetailType != queue.DetailTypeTaskDeadLettered {
			t.Fatalf("no Task Dead-Lettered event: %+v", ev)
		}
		wantKeys(t, "outbox entries after the sweep", e.outbox())
	})

	t.Run("a_dead_letter_whose_record_write_fails_leaves_the_task_running_and_an_outbox_entry_the_sweep_deletes_unpublished", func(t *testing.T) {
		t.Parallel()
		e, fs := newLossEnv(t, f)
		c := deadLettering(e)
		recordWriteFails(t, e, fs, "default", c.Task.Ref(), func() error {
			_, err := e.q.Fail(ctx, queue.FailRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token, Error: "x"}, t0.Add(time.Second))
			return err
		})
		wantKeyCount(t, "outbox entries", e.outbox(), 1)
		pub := &recorder{}
		rep := e.sweep(t0.Add(10*time.Minute), pub)
		if evs := pub.take(); len(evs) != 0 || rep.StaleMarkers == 0 {
			t.Fatalf("the sweep published %d events and deleted %d stale hints, want none and the entry", len(evs), rep.StaleMarkers)
		}
		wantKeys(t, "outbox entries after the sweep", e.outbox())
		// The lapsed lease is settled by the next claim: dead-lettered
		// once, with one event.
		if _, err := e.reopen().Claim(ctx, queue.ClaimRequest{}, t0.Add(10*time.Minute)); err != nil {
			t.Fatal(err)
		}
		wantStatus(t, e.get(c.Task.Ref()), queue.StatusFailed)
		e.wantEvents(t0.Add(11*time.Minute), 1)
		wantKeys(t, "outbox entries", e.outbox())
	})

	t.Run("a_dead_letter_whose_outbox_entry_answer_was_lost_writes_one_entry_and_owes_one_event", func(t *testing.T) {
		t.Parallel()
		e, fs := newLossEnv(t, f)
		c := deadLettering(e)
		lose(fs, storefault.OpPut, "sweep/")
		if _, err := e.q.Fail(ctx, queue.FailRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token, Error: "x"}, t0); err != nil {
			t.Fatal(err)
		}
		wantHits(t, fs, 1)
		wantKeyCount(t, "outbox entries", e.outbox(), 1)
		e.wantEvents(t0.Add(time.Minute), 1)
	})

	t.Run("an_outbox_entry_whose_answer_was_lost_still_owes_the_expiry_event", func(t *testing.T) {
		t.Parallel()
		e, fs := newLossEnv(t, f)
		lose(fs, storefault.OpPut, "sweep/")
		res, err := e.q.Submit(ctx, queue.SubmitRequest{TaskType: "email.send", TTL: check.Dur("0s")}, t0)
		if err != nil || res.Task.Status != queue.StatusExpired {
			t.Fatalf("submit: %+v, %v", res.Task, err)
		}
		wantHits(t, fs, 1)
		e.wantEvents(t0.Add(time.Minute), 1)
	})

	t.Run("a_dead_letter_and_a_complete_racing_from_one_version_owe_exactly_the_winners_event", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		c := deadLettering(e)
		ref := c.Task.Ref()
		p1, p2 := e.cached(ref), e.cached(ref)
		now := t0.Add(time.Second)
		errs := race(
			func() error {
				_, err := p1.Complete(ctx, queue.CompleteRequest{ID: ref, LeaseToken: c.Lease.Token}, now)
				return err
			},
			func() error {
				_, err := p2.Fail(ctx, queue.FailRequest{ID: ref, LeaseToken: c.Lease.Token, Error: "x"}, now)
				return err
			},
		)
		win := oneWinner(t, errs)
		wantStatus(t, e.get(ref), []queue.Status{queue.StatusCompleted, queue.StatusFailed}[win])
		if win == 1 && len(e.outbox()) != 1 {
			t.Fatalf("the dead letter won without its outbox entry: %v", e.outbox())
		}
		e.wantEvents(t0.Add(10*time.Minute), win)
		wantKeys(t, "outbox entries after the sweep", e.outbox())
	})
}
