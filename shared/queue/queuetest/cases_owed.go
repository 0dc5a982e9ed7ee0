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
