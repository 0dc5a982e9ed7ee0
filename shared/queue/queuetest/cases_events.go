package queuetest

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/internal/check"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/store"
	"github.com/s3q/s3q/shared/store/storefault"
)

// runOwed: a dead letter, or an expired task, whose event the sweep has
// not published yet is retried or purged at once: the call publishes
// the event itself, its one write notes it sent, and the sweep after it
// publishes nothing more. Under a publisher that fails, a write that
// fails after the publish, or a lost answer, the event is published at
// least once and never skipped.
func runOwed(t *testing.T, f Factory) {
	// deadLetter submits a task with one attempt and fails it at t0+1s.
	deadLetter := func(t *testing.T, e *env) queue.Task {
		t.Helper()
		task := e.submit(queue.SubmitRequest{MaxAttempts: 1, DedupKey: "owed-key"}, t0)
		c := e.claimOne(t0)
		got, err := e.q.Fail(ctx, queue.FailRequest{ID: task.Ref(), LeaseToken: c.Lease.Token, Error: "boom"}, t0.Add(time.Second))
		if err != nil || got.Status != queue.StatusFailed {
			t.Fatalf("fail: %v %s", err, got.Status)
		}
		return got
	}
	outbox := func(e *env) []string {
		var out []string
		for _, k := range e.keys("sweep/") {
			if strings.Contains(k, "_event_") {
				out = append(out, k)
			}
		}
		return out
	}

	t.Run("a_dead_letter_is_retried_at_once_and_the_retry_publishes_its_event_once", func(t *testing.T) {
		t.Parallel()
		pub := &recorder{}
		e := newEnv(t, f, func(o *queue.Options) { o.Publisher = pub })
		task := deadLetter(t, e)
		got, err := e.q.Retry(ctx, task.Ref(), t0.Add(2*time.Second))
		if err != nil {
			t.Fatalf("retry right after the dead letter: %v", err)
		}
		wantStatus(t, got, queue.StatusPending)
		wantTime(t, "dead_letter_event_sent_at", got.DeadLetterEventSentAt, t0.Add(2*time.Second))
		if n := pub.count(task.ID, queue.DetailTypeTaskDeadLettered); n != 1 {
			t.Fatalf("%d Task Dead-Lettered events after the retry, want 1", n)
		}
		if ev := byTask(t, pub.take())[task.ID]; detail(t, ev)["last_error"] != "boom" {
			t.Fatalf("event detail %s", ev.Detail)
		}
		if keys := outbox(e); len(keys) != 0 {
			t.Fatalf("outbox entries left after the retry: %v", keys)
		}
		e.sweep(t0.Add(5*time.Minute), pub)
		if evs := pub.take(); len(evs) != 0 {
			t.Fatalf("the sweep after the retry published %d more events", len(evs))
		}
		// It runs again, and a second dead letter owes a second event.
		c := e.claimOne(t0.Add(5 * time.Minute))
		if _, err := e.q.Fail(ctx, queue.FailRequest{ID: task.Ref(), LeaseToken: c.Lease.Token, Error: "again"}, t0.Add(6*time.Minute)); err != nil {
			t.Fatal(err)
		}
		if _, err := e.q.Retry(ctx, task.Ref(), t0.Add(6*time.Minute+time.Second)); err != nil {
			t.Fatal(err)
		}
		if ev := byTask(t, pub.take())[task.ID]; ev.DetailType != queue.DetailTypeTaskDeadLettered || detail(t, ev)["last_error"] != "again" {
			t.Fatalf("second dead letter's event %+v", ev)
		}
	})

	t.Run("a_bulk_retry_right_after_the_dead_letters_retries_them_all_and_publishes_each_event", func(t *testing.T) {
		t.Parallel()
		pub := &recorder{}
		e := newEnv(t, f, func(o *queue.Options) { o.Publisher = pub })
		var ids []string
		for i := 0; i < 3; i++ {
			task := e.submit(queue.SubmitRequest{MaxAttempts: 1}, t0)
			c := e.claimOne(t0)
			if _, err := e.q.Fail(ctx, queue.FailRequest{ID: task.Ref(), LeaseToken: c.Lease.Token, Error: "boom"}, t0.Add(time.Second)); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, task.ID)
		}
		res, err := e.q.Bulk(ctx, queue.OpRetry, queue.BulkRequest{Queue: "default"}, t0.Add(2*time.Second))
		if err != nil || res.Changed != 3 || len(res.Skipped) != 0 {
			t.Fatalf("bulk retry: %v %+v", err, res)
		}
		e.sweep(t0.Add(time.Minute), pub)
		for _, id := range ids {
			if n := pub.count(id, queue.DetailTypeTaskDeadLettered); n != 1 {
				t.Fatalf("task %s: %d events, want 1", id, n)
			}
		}
	})

	t.Run("a_retry_whose_publish_fails_is_retryable_and_the_sweep_still_publishes_the_event", func(t *testing.T) {
		t.Parallel()
		pub := &recorder{callErr: errors.New("bus down")}
		e := newEnv(t, f, func(o *queue.Options) { o.Publisher = pub })
		task := deadLetter(t, e)
		if _, err := e.q.Retry(ctx, task.Ref(), t0.Add(2*time.Second)); !errors.Is(err, store.ErrRetryable) {
			t.Fatalf("retry with the bus down: %v, want ErrRetryable", err)
		}
		got := e.get(task.Ref())
		if got.Status != queue.StatusFailed || got.DeadLetterEventSentAt != nil {
			t.Fatalf("after a failed publish: %s, sent at %v", got.Status, got.DeadLetterEventSentAt)
		}
		good := &recorder{}
		e.sweep(t0.Add(time.Minute), good)
		if n := good.count(task.ID, queue.DetailTypeTaskDeadLettered); n != 1 {
			t.Fatalf("%d events from the sweep, want 1", n)
		}
	})

	t.Run("a_retry_that_dies_after_publishing_leaves_the_event_owed_and_the_sweep_publishes_it_again", func(t *testing.T) {
		t.Parallel()
		pub := &recorder{}
		e, fs := newLossEnv(t, f, func(o *queue.Options) { o.Publisher = pub })
		task := deadLetter(t, e)
		fs.FailMatching(storefault.OpPutIfMatch, "q/", storefault.FailBefore, 1)
		if _, err := e.reopen().Retry(ctx, task.Ref(), t0.Add(2*time.Second)); err == nil {
			t.Fatal("a retry whose write failed answered no error")
		}
		wantHits(t, fs, 1)
		if got := e.get(task.Ref()); got.Status != queue.StatusFailed || got.DeadLetterEventSentAt != nil {
			t.Fatalf("after the crash: %s, sent at %v", got.Status, got.DeadLetterEventSentAt)
		}
		e.sweep(t0.Add(time.Minute), pub)
		if n := pub.count(task.ID, queue.DetailTypeTaskDeadLettered); n != 2 {
			t.Fatalf("%d events, want 2 (the retry's, then the sweep's: at least once)", n)
		}
		if got, err := e.q.Retry(ctx, task.Ref(), t0.Add(2*time.Minute)); err != nil || got.Status != queue.StatusPending {
			t.Fatalf("retry after the sweep: %v", err)
		}
		if n := pub.count(task.ID, queue.DetailTypeTaskDeadLettered); n != 2 {
			t.Fatalf("%d events after the second retry, want still 2", n)
		}
	})

	t.Run("a_retry_whose_write_answer_was_lost_is_recognised_and_publishes_once", func(t *testing.T) {
		t.Parallel()
		pub := &recorder{}
		e, fs := newLossEnv(t, f, func(o *queue.Options) { o.Publisher = pub })
		task := deadLetter(t, e)
		lose(fs, storefault.OpPutIfMatch, "q/")
		got, err := e.reopen().Retry(ctx, task.Ref(), t0.Add(2*time.Second))
		if err != nil || got.Status != queue.StatusPending {
			t.Fatalf("retry whose answer was lost: %v %s", err, got.Status)
		}
		wantHits(t, fs, 1)
		e.sweep(t0.Add(time.Minute), pub)
		if n := pub.count(task.ID, queue.DetailTypeTaskDeadLettered); n != 1 {
			t.Fatalf("%d events, want 1", n)
		}
		if got := e.get(task.Ref()); got.Status != queue.StatusPending || got.DeadLetterEventSentAt == nil {
			t.Fatalf("record %s, sent at %v", got.Status, got.DeadLetterEventSentAt)
		}
	})

	t.Run("a_dead_letter_and_an_expired_task_are_purged_at_once_after_their_events_are_published", func(t *testing.T) {
		t.Parallel()
		pub := &recorder{}
		e := newEnv(t, f, func(o *queue.Options) { o.Publisher = pub })
		dead := deadLetter(t, e)
		exp := e.submit(queue.SubmitRequest{TTL: check.Dur("0s")}, t0)
		wantStatus(t, exp, queue.StatusExpired)
		for _, st := range []queue.Status{queue.StatusFailed, queue.StatusExpired} {
			res, err := e.q.Purge(ctx, queue.BulkRequest{Queue: "default", Status: st}, t0.Add(2*time.Second))
			if err != nil || res.Changed != 1 {
				t.Fatalf("purge %s: %v %+v", st, err, res)
			}
		}
		if n := pub.count(dead.ID, queue.DetailTypeTaskDeadLettered); n != 1 {
			t.Fatalf("%d Task Dead-Lettered events, want 1", n)
		}
		if n := pub.count(exp.ID, queue.DetailTypeTaskExpired); n != 1 {
			t.Fatalf("%d Task Expired events, want 1", n)
		}
		e.sweep(t0.Add(5*time.Minute), pub)
		if n := len(pub.take()); n != 2 {
			t.Fatalf("%d events in all after the sweep, want 2", n)
		}
		if keys := outbox(e); len(keys) != 0 {
			t.Fatalf("outbox entries left: %v", keys)
		}
	})

	t.Run("an_expired_parent_is_purged_only_after_the_sweep_has_expired_its_children", func(t *testing.T) {
		t.Parallel()
		pub := &recorder{}
		e := newEnv(t, f, func(o *queue.Options) { o.Publisher = pub })
		parent := e.submit(queue.SubmitRequest{TTL: check.Dur("10s")}, t0)
		child := e.submit(queue.SubmitRequest{ParentID: parent.ID}, t0)
		if _, err := e.q.Expire(ctx, parent.Ref(), t0.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		res, err := e.q.Purge(ctx, queue.BulkRequest{Queue: "default", Status: queue.StatusExpired}, t0.Add(2*time.Second))
		if err != nil || res.Changed != 0 || len(res.Skipped) != 1 {
			t.Fatalf("purge of an expired parent before its cascade: %v %+v", err, res)
		}
		if len(pub.take()) != 0 {
			t.Fatal("a refused purge published an event")
		}
		e.sweep(t0.Add(3*time.Second), pub)
		wantStatus(t, e.get(child.Ref()), queue.StatusExpired)
		res, err = e.q.Purge(ctx, queue.BulkRequest{Queue: "default", Status: queue.StatusExpired}, t0.Add(4*time.Second))
		if err != nil || res.Changed != 2 {
			t.Fatalf("purge after the sweep: %v %+v", err, res)
		}
	})

	t.Run("without_a_publisher_a_dead_letter_waits_for_the_sweep", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		task := deadLetter(t, e)
		var se *queue.StateError
		if _, err := e.q.Retry(ctx, task.Ref(), t0.Add(2*time.Second)); !errors.As(err, &se) {
			t.Fatalf("retry without a publisher: %v, want a StateError", err)
		}
	})
}

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

// runSweepEventsCases are the events cases of runSweep (groups.go).
func runSweepEventsCases(t *testing.T, f Factory) {

	t.Run("tasks_expired_by_a_claim_by_hand_or_on_arrival_get_their_event_from_the_next_sweep", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		byClaim := e.submit(queue.SubmitRequest{TTL: check.Dur("1m")}, t0)
		byHand := e.submit(queue.SubmitRequest{Queue: "other"}, t0)
		onArrival := e.submit(queue.SubmitRequest{TTL: check.Dur("0s")}, t0)
		e.claimNone(t0.Add(time.Minute))
		if _, err := e.q.Expire(ctx, byHand.Ref(), t0.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		if n := len(e.hints()); n != 3 {
			t.Fatalf("%d outbox entries, want 3", n)
		}
		pub := &recorder{}
		rep := e.sweep(t0.Add(2*time.Minute), pub)
		if rep.Expired != 0 || rep.EventsSent != 3 || rep.ExpiredByType["email.send"] != 3 {
			t.Fatalf("report: %+v", rep)
		}
		evs := byTask(t, pub.take())
		for id, want := range map[string][2]any{byClaim.ID: {"ttl", 60.0}, byHand.ID: {"manual", 60.0}, onArrival.ID: {"ttl", 0.0}} {
			m := detail(t, evs[id])
			if m["reason"] != want[0] || m["age_seconds"] != want[1] {
				t.Fatalf("event of %s: %v, want reason %v age %v", id, m, want[0], want[1])
			}
			if e.get(id).ExpiryEventSentAt == nil {
				t.Fatalf("task %s: expiry_event_sent_at not set", id)
			}
		}
		wantKeys(t, "hints", e.hints())
	})

	t.Run("a_task_that_lands_in_failed_gets_a_dead_lettered_event_each_time", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		spent := e.submit(queue.SubmitRequest{MaxAttempts: 1, Queue: "a"}, t0)
		permanent := e.submit(queue.SubmitRequest{Queue: "b"}, t0)
		lapsed := e.submit(queue.SubmitRequest{MaxAttempts: 1, Queue: "c"}, t0)
		no := false
		for _, tc := range []struct {
			id, q string
			req   queue.FailRequest
		}{{spent.ID, "a", queue.FailRequest{Error: "boom"}}, {permanent.ID, "b", queue.FailRequest{Error: "bad input", Retryable: &no}}} {
			c := e.claim(queue.ClaimRequest{Queue: tc.q}, t0)[0]
			tc.req.ID, tc.req.LeaseToken = e.ref(tc.id), c.Lease.Token
			if _, err := e.q.Fail(ctx, tc.req, t0); err != nil {
				t.Fatal(err)
			}
		}
		e.claim(queue.ClaimRequest{Queue: "c", LeaseFor: time.Minute}, t0)
		if cs := e.claim(queue.ClaimRequest{Queue: "c"}, t0.Add(2*time.Minute)); len(cs) != 0 {
			t.Fatal("claimed a task whose attempts are spent")
		}
		pub := &recorder{}
		if rep := e.sweep(t0.Add(3*time.Minute), pub); rep.EventsSent != 3 {
			t.Fatalf("report: %+v", rep)
		}
		evs := byTask(t, pub.take())
		for id, lastErr := range map[string]string{spent.ID: "boom", permanent.ID: "bad input", lapsed.ID: "lease expired after attempt 1 of 1"} {
			if ev := evs[id]; ev.DetailType != queue.DetailTypeTaskDeadLettered || detail(t, ev)["last_error"] != lastErr {
				t.Fatalf("event of %s: %s %s", id, ev.DetailType, ev.Detail)
			}
		}
		// Retried by hand and failed again: a new event.
		if _, err := e.q.Retry(ctx, spent.Ref(), t0.Add(4*time.Minute)); err != nil {
			t.Fatal(err)
		}
		c := e.claim(queue.ClaimRequest{Queue: "a"}, t0.Add(4*time.Minute))[0]
		if _, err := e.q.Fail(ctx, queue.FailRequest{ID: spent.Ref(), LeaseToken: c.Lease.Token, Error: "boom again"}, t0.Add(5*time.Minute)); err != nil {
			t.Fatal(err)
		}
		if rep := e.sweep(t0.Add(6*time.Minute), pub); rep.EventsSent != 1 {
			t.Fatalf("report: %+v", rep)
		}
		if evs := pub.take(); len(evs) != 1 || detail(t, evs[0])["last_error"] != "boom again" {
			t.Fatalf("events: %+v", evs)
		}
		wantKeys(t, "hints", e.hints())
	})

	t.Run("an_event_the_publisher_does_not_deliver_is_published_by_a_later_sweep", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		first := e.submit(queue.SubmitRequest{TTL: check.Dur("1m")}, t0)
		e.submit(queue.SubmitRequest{TTL: check.Dur("1m")}, t0)
		flaky := &recorder{fail: func(ev queue.Event) error {
			if ev.TaskID == first.ID {
				return errors.New("throttled")
			}
			return nil
		}}
		rep, err := e.reopen().Sweep(ctx, t0.Add(time.Minute), queue.SweepOptions{Publisher: flaky})
		if err == nil || !strings.Contains(err.Error(), "throttled") || rep.EventsSent != 1 || rep.EventsFailed != 1 || rep.Expired != 2 {
			t.Fatalf("report: %v %+v", err, rep)
		}
		if got := e.get(first.Ref()); got.Status != queue.StatusExpired || got.ExpiryEventSentAt != nil {
			t.Fatalf("undelivered: %s sent_at %v", got.Status, got.ExpiryEventSentAt)
		}
		if n := len(e.hints()); n != 1 {
			t.Fatalf("%d outbox entries, want 1", n)
		}
		down := &recorder{callErr: errors.New("service unavailable")}
		rep, err = e.reopen().Sweep(ctx, t0.Add(2*time.Minute), queue.SweepOptions{Publisher: down})
		if err == nil || rep.EventsFailed != 1 {
			t.Fatalf("sweep with the bus down: %v %+v", err, rep)
		}
		pub := &recorder{}
		if rep := e.sweep(t0.Add(3*time.Minute), pub); rep.EventsSent != 1 {
			t.Fatalf("report: %+v", rep)
		}
		if evs := pub.take(); len(evs) != 1 || evs[0].TaskID != first.ID {
			t.Fatalf("events: %+v", evs)
		}
		wantKeys(t, "hints", e.hints())
		if rep := e.sweep(t0.Add(4*time.Minute), pub); rep.EventsSent != 0 {
			t.Fatalf("report: %+v", rep)
		}
	})
}

// runSweepRulesEventsCases are the events cases of runSweepRules (groups.go).
func runSweepRulesEventsCases(t *testing.T, f Factory) {
	t.Run("a_dead_lettered_task_can_be_retried_only_once_its_event_is_out", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		task := e.submit(queue.SubmitRequest{MaxAttempts: 1}, t0)
		c := e.claimOne(t0)
		if got, err := e.q.Fail(ctx, queue.FailRequest{ID: task.Ref(), LeaseToken: c.Lease.Token, Error: "boom"}, t0.Add(time.Second)); err != nil || got.Status != queue.StatusFailed {
			t.Fatalf("fail: %v %s", err, got.Status)
		}
		var se *queue.StateError
		if _, err := e.q.Retry(ctx, task.Ref(), t0.Add(10*time.Second)); !errors.As(err, &se) {
			t.Fatalf("a retry before the sweep published the event: %v, want a StateError", err)
		}
		pub := &recorder{}
		e.sweep(t0.Add(time.Minute), pub)
		if n := pub.count(task.ID, queue.DetailTypeTaskDeadLettered); n != 1 {
			t.Fatalf("%d Task Dead-Lettered events, want 1", n)
		}
		if _, err := e.q.Retry(ctx, task.Ref(), t0.Add(2*time.Minute)); err != nil {
			t.Fatalf("a retry once the event is out: %v", err)
		}
	})

	t.Run("two_dead_letterings_of_one_task_make_two_events", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		task := e.submit(queue.SubmitRequest{MaxAttempts: 1}, t0)
		pub := &recorder{}
		c := e.claimOne(t0)
		if _, err := e.q.Fail(ctx, queue.FailRequest{ID: task.Ref(), LeaseToken: c.Lease.Token, Error: "one"}, t0.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		e.sweep(t0.Add(2*time.Second), pub)
		if _, err := e.q.Retry(ctx, task.Ref(), t0.Add(3*time.Second)); err != nil {
			t.Fatal(err)
		}
		c = e.claimOne(t0.Add(4 * time.Second))
		if _, err := e.q.Fail(ctx, queue.FailRequest{ID: task.Ref(), LeaseToken: c.Lease.Token, Error: "two"}, t0.Add(5*time.Second)); err != nil {
			t.Fatal(err)
		}
		e.sweep(t0.Add(time.Minute), pub)
		if n := pub.count(task.ID, queue.DetailTypeTaskDeadLettered); n != 2 {
			t.Fatalf("2 dead-letterings, %d events", n)
		}
	})
}
