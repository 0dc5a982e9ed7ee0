package queuetest

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/internal/check"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/store"
	"github.com/s3q/s3q/shared/store/storefault"
)

// The dedup pointer (side_dedup.go).
func runSideDedup(t *testing.T, f Factory) {
	t.Run("a_dedup_pointer_names_its_task_while_it_lives_and_its_key_is_free_once_the_task_finishes_or_is_purged", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		a := e.submit(queue.SubmitRequest{DedupKey: "k"}, t0)
		if got := e.pointer("k"); got != a.ID {
			t.Fatalf("the pointer names %q, want %s", got, a.ID)
		}
		e.dedupedTo(a.ID, t0)
		if _, err := e.q.Cancel(ctx, a.Ref(), t0); err != nil {
			t.Fatal(err)
		}
		b := e.submit(queue.SubmitRequest{DedupKey: "k"}, t0.Add(time.Second))
		if b.ID == a.ID || e.pointer("k") != b.ID {
			t.Fatalf("after the cancel the key went to %s, the pointer names %q", b.ID, e.pointer("k"))
		}
		if _, err := e.q.Purge(ctx, queue.BulkRequest{Queue: queue.DefaultQueue, Status: queue.StatusPending}, t0.Add(2*time.Second)); err != nil {
			t.Fatal(err)
		}
		if got := e.pointer("k"); got != "" {
			t.Fatalf("after the purge the pointer names %q, want it free", got)
		}
		c := e.submit(queue.SubmitRequest{DedupKey: "k"}, t0.Add(3*time.Second))
		if c.ID == b.ID || e.pointer("k") != c.ID {
			t.Fatalf("after the purge the key went to %s, the pointer names %q", c.ID, e.pointer("k"))
		}
		e.consistent()
	})

	t.Run("a_retry_whose_record_write_fails_leaves_a_reviving_pointer_that_holds_the_key_only_for_the_grace", func(t *testing.T) {
		t.Parallel()
		e, fs := newLossEnv(t, f)
		a := e.cancelledHolder()
		recordWriteFails(t, e, fs, "default", a.Ref(), func() error {
			_, err := e.q.Retry(ctx, a.Ref(), t0.Add(time.Second))
			return err
		})
		wantStatus(t, e.get(a.Ref()), queue.StatusCancelled)
		if got := e.pointer("k"); got != a.ID {
			t.Fatalf("the pointer names %q, want the retried %s", got, a.ID)
		}
		// Within the grace the key is being retried...
		if _, err := e.q.Submit(ctx, queue.SubmitRequest{TaskType: "email.send", DedupKey: "k"}, t0.Add(time.Minute)); !errors.Is(err, queue.ErrConflict) {
			t.Fatalf("a submit during the grace: %v, want a conflict", err)
		}
		// ...then free: the stale pointer is taken over.
		b := e.takesKey(t0.Add(10*time.Minute), a.ID)
		var se *queue.StateError
		if _, err := e.q.Retry(ctx, a.Ref(), t0.Add(11*time.Minute)); !errors.As(err, &se) {
			t.Fatalf("a retry while %s holds the key: %v, want a state error", b.ID, err)
		}
		// The failed retry's marker is a stale hint, which a claim deletes.
		if _, err := e.reopen().Claim(ctx, queue.ClaimRequest{MaxTasks: 10}, t0.Add(11*time.Minute)); err != nil {
			t.Fatal(err)
		}
		e.consistent()
	})

	t.Run("two_retries_of_tasks_sharing_a_dedup_key_leave_one_live_holder_named_by_its_pointer", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		a := e.cancelledHolder()
		b := e.cancelledHolder()
		win := []queue.Task{a, b}[e.raceRetries(t0.Add(time.Second), a.Ref(), b.Ref())]
		wantStatus(t, e.get(win.Ref()), queue.StatusPending)
		if got := e.pointer("k"); got != win.ID {
			t.Fatalf("the pointer names %q, want the winner %s", got, win.ID)
		}
		e.consistent()
	})

	t.Run("a_retry_while_another_task_with_its_key_is_being_retried_is_refused_until_the_grace", func(t *testing.T) {
		t.Parallel()
		e, fs := newLossEnv(t, f)
		a := e.cancelledHolder()
		b := e.cancelledHolder()
		// a's retry has taken the key back and not yet written its
		// record (here: never will).
		recordWriteFails(t, e, fs, "default", a.Ref(), func() error {
			_, err := e.q.Retry(ctx, a.Ref(), t0.Add(time.Second))
			return err
		})
		var se *queue.StateError
		if _, err := e.q.Retry(ctx, b.Ref(), t0.Add(time.Minute)); !errors.As(err, &se) {
			t.Fatalf("a retry of %s while %s is being retried: %v, want a state error", b.ID, a.ID, err)
		}
		if got, err := e.q.Retry(ctx, b.Ref(), t0.Add(10*time.Minute)); err != nil || got.Status != queue.StatusPending {
			t.Fatalf("a retry of %s after the grace: %v, %v", b.ID, got.Status, err)
		}
		if got := e.pointer("k"); got != b.ID {
			t.Fatalf("the pointer names %q, want %s", got, b.ID)
		}
	})

	runLostDedup(t, f)
}

// cancelledHolder submits a task with dedup key "k" at t0 and cancels it.
func (e *env) cancelledHolder() queue.Task {
	e.t.Helper()
	task := e.submit(queue.SubmitRequest{DedupKey: "k"}, t0)
	if _, err := e.q.Cancel(ctx, task.Ref(), t0); err != nil {
		e.t.Fatal(err)
	}
	return task
}

// dedupedTo submits with dedup key "k" at now and fails unless the
// answer is task id, deduplicated.
func (e *env) dedupedTo(id string, now time.Time) {
	e.t.Helper()
	res, err := e.q.Submit(ctx, queue.SubmitRequest{TaskType: "email.send", DedupKey: "k"}, now)
	if err != nil || !res.Deduplicated || res.Task.ID != id {
		e.t.Fatalf("a submit with key k at %s: %+v, %v; want task %s, deduplicated", now.Format(time.RFC3339), res, err, id)
	}
}

// takesKey submits with dedup key "k" at now and fails unless it makes a
// new task, none of not; it returns the task.
func (e *env) takesKey(now time.Time, not ...string) queue.Task {
	e.t.Helper()
	res, err := e.q.Submit(ctx, queue.SubmitRequest{TaskType: "email.send", DedupKey: "k"}, now)
	if err != nil || res.Deduplicated || slices.Contains(not, res.Task.ID) {
		e.t.Fatalf("a submit with key k at %s: %+v, %v; want a new task", now.Format(time.RFC3339), res, err)
	}
	return res.Task
}

// pointer returns the task the dedup pointer of key names in the default
// queue, or "" when it is free.
func (e *env) pointer(key string) string {
	e.t.Helper()
	return e.taskIDIn(queue.DedupKey(queue.DefaultQueue, key))
}

// runLostDedup: the lost answers of the dedup pointer's writes, and the
// holders a submit ends in place.
func runLostDedup(t *testing.T, f Factory) {
	for _, withID := range []bool{false, true} {
		suffix := ""
		if withID {
			suffix = "_with_an_id"
		}
		t.Run("a_dedup_pointer_whose_answer_was_lost_is_held_by_its_own_task"+suffix, func(t *testing.T) {
			e, fs := newLossEnv(t, f)
			req := queue.SubmitRequest{TaskType: "email.send", DedupKey: "k"}
			if withID {
				req.ID = queue.NewID(t0)
			}
			lose(fs, storefault.OpPutIfAbsent, "q/default/dedup/")
			first, err := e.q.Submit(ctx, req, t0)
			if err != nil || first.Deduplicated {
				t.Fatalf("submit: %+v, %v", first, err)
			}
			wantHits(t, fs, 1)
			e.dedupedTo(first.Task.ID, t0.Add(time.Second))
			wantTasks(t, e, 1)
			e.consistent()
		})
	}

	t.Run("a_dedup_takeover_whose_answer_was_lost_is_recognised", func(t *testing.T) {
		t.Parallel()
		e, fs := newLossEnv(t, f)
		a := e.submit(queue.SubmitRequest{DedupKey: "k"}, t0)
		c := e.claimOne(t0)
		if _, err := e.q.Complete(ctx, queue.CompleteRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token}, t0); err != nil {
			t.Fatal(err)
		}
		lose(fs, storefault.OpPutIfMatch, "q/default/dedup/")
		b := e.takesKey(t0.Add(time.Second), a.ID)
		wantHits(t, fs, 1)
		e.dedupedTo(b.ID, t0.Add(2*time.Second))
		e.consistent()
	})

	t.Run("a_dedup_takeover_whose_write_fails_once_before_applying_retries_it_and_takes_the_key", func(t *testing.T) {
		t.Parallel()
		e, fs := newLossEnv(t, f)
		a := e.submit(queue.SubmitRequest{DedupKey: "k"}, t0)
		c := e.claimOne(t0)
		if _, err := e.q.Complete(ctx, queue.CompleteRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token}, t0); err != nil {
			t.Fatal(err)
		}
		// One throttled takeover write (503, not applied): the submit
		// tries again, as its create of the pointer does, and succeeds.
		fs.FailMatching(storefault.OpPutIfMatch, "q/default/dedup/", storefault.FailBefore, 1)
		b := e.takesKey(t0.Add(time.Second), a.ID)
		wantHits(t, fs, 1)
		e.dedupedTo(b.ID, t0.Add(2*time.Second))
		e.consistent()
	})

	t.Run("a_dedup_takeover_whose_writes_keep_failing_gives_up_with_a_retryable_error_and_leaves_the_key_free", func(t *testing.T) {
		t.Parallel()
		e, fs := newLossEnv(t, f)
		a := e.submit(queue.SubmitRequest{DedupKey: "k"}, t0)
		c := e.claimOne(t0)
		if _, err := e.q.Complete(ctx, queue.CompleteRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token}, t0); err != nil {
			t.Fatal(err)
		}
		fs.FailMatching(storefault.OpPutIfMatch, "q/default/dedup/", storefault.FailBefore, store.OwnAttempts)
		_, err := e.q.Submit(ctx, queue.SubmitRequest{TaskType: "email.send", DedupKey: "k"}, t0.Add(time.Second))
		if !errors.Is(err, store.ErrRetryable) {
			t.Fatalf("err = %v, want a retryable store error", err)
		}
		wantHits(t, fs, store.OwnAttempts)
		e.takesKey(t0.Add(2*time.Second), a.ID)
		e.consistent()
	})

	t.Run("a_submit_that_cannot_create_its_record_releases_its_dedup_key", func(t *testing.T) {
		t.Parallel()
		e, fs := newLossEnv(t, f)
		fs.FailMatching(storefault.OpPutIfAbsent, "q/default/tasks/", storefault.FailBefore, store.OwnAttempts)
		_, err := e.q.Submit(ctx, queue.SubmitRequest{TaskType: "email.send", DedupKey: "k"}, t0)
		if !errors.Is(err, store.ErrRetryable) {
			t.Fatalf("err = %v, want a retryable store error", err)
		}
		wantHits(t, fs, store.OwnAttempts)
		wantTasks(t, e, 0)
		e.consistent()
		// The key is free at once, not after StaleMarkerGrace.
		e.takesKey(t0.Add(time.Second))
		wantTasks(t, e, 1)
		e.consistent()
	})

	t.Run("a_submit_whose_record_create_fails_once_retries_it_and_keeps_its_key", func(t *testing.T) {
		t.Parallel()
		e, fs := newLossEnv(t, f)
		fs.FailMatching(storefault.OpPutIfAbsent, "q/default/tasks/", storefault.FailBefore, 1)
		res, err := e.q.Submit(ctx, queue.SubmitRequest{TaskType: "email.send", DedupKey: "k"}, t0)
		if err != nil {
			t.Fatal(err)
		}
		wantHits(t, fs, 1)
		wantTasks(t, e, 1)
		e.consistent()
		e.dedupedTo(res.Task.ID, t0.Add(time.Second))
	})

	t.Run("a_dedup_keyed_submit_retried_with_its_id_after_its_task_finished_replays_it", func(t *testing.T) {
		t.Parallel()
		e, _ := newLossEnv(t, f)
		req := queue.SubmitRequest{ID: queue.NewID(t0), TaskType: "email.send", DedupKey: "k"}
		a, err := e.q.Submit(ctx, req, t0)
		if err != nil {
			t.Fatal(err)
		}
		c := e.claimOne(t0)
		if _, err := e.q.Complete(ctx, queue.CompleteRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token}, t0); err != nil {
			t.Fatal(err)
		}
		// The key moves on to another task; then the first answer's
		// retry arrives.
		b := e.submit(queue.SubmitRequest{DedupKey: "k"}, t0.Add(time.Second))
		again, err := e.q.Submit(ctx, req, t0.Add(2*time.Second))
		if err != nil || !again.Replayed || again.Task.ID != a.Task.ID || again.Task.Status != queue.StatusCompleted {
			t.Fatalf("retry: %+v, %v", again, err)
		}
		wantTasks(t, e, 2)
		if got := e.get(b.Ref()); got.Status != queue.StatusPending {
			t.Fatalf("the key's holder is %s", got.Status)
		}
		e.consistent()
	})

	t.Run("a_pending_dedup_holder_past_its_deadline_is_expired_and_gives_up_the_key", func(t *testing.T) {
		t.Parallel()
		e, _ := newLossEnv(t, f)
		a := e.submit(queue.SubmitRequest{DedupKey: "k", TTL: check.Dur("1m")}, t0)
		res := e.takesKey(t0.Add(2*time.Minute), a.ID)
		old := e.get(a.Ref())
		wantStatus(t, old, queue.StatusExpired)
		if old.ExpiryReason != queue.ReasonTTL {
			t.Fatalf("expiry reason %q", old.ExpiryReason)
		}
		e.consistent()
		pub := &recorder{}
		e.sweep(t0.Add(3*time.Minute), pub)
		if ev, ok := byTask(t, pub.take())[a.ID]; !ok || ev.DetailType != "Task Expired" {
			t.Fatalf("no Task Expired event for the old holder: %+v", ev)
		}
		if got := e.claimOne(t0.Add(3 * time.Minute)); got.Task.ID != res.ID {
			t.Fatalf("claimed %s, want %s", got.Task.ID, res.ID)
		}
	})

	t.Run("a_running_dedup_holder_whose_lease_lapsed_past_its_deadline_is_expired_and_gives_up_the_key", func(t *testing.T) {
		t.Parallel()
		e, _ := newLossEnv(t, f)
		a := e.submit(queue.SubmitRequest{DedupKey: "k", TTL: check.Dur("1m")}, t0)
		e.claim(queue.ClaimRequest{LeaseFor: 90 * time.Second}, t0)
		e.takesKey(t0.Add(2*time.Minute), a.ID)
		wantStatus(t, e.get(a.Ref()), queue.StatusExpired)
		e.consistent()
	})

	t.Run("a_running_dedup_holder_whose_lease_lapsed_with_attempts_left_keeps_the_key", func(t *testing.T) {
		t.Parallel()
		e, _ := newLossEnv(t, f)
		a := e.submit(queue.SubmitRequest{DedupKey: "k"}, t0)
		e.claim(queue.ClaimRequest{LeaseFor: time.Minute}, t0)
		e.dedupedTo(a.ID, t0.Add(2*time.Minute))
		e.consistent()
	})

	t.Run("a_running_dedup_holder_past_its_deadline_keeps_the_key", func(t *testing.T) {
		t.Parallel()
		e, _ := newLossEnv(t, f)
		a := e.submit(queue.SubmitRequest{DedupKey: "k", TTL: check.Dur("1m")}, t0)
		e.claimOne(t0)
		e.dedupedTo(a.ID, t0.Add(2*time.Minute))
		e.consistent()
	})
}
