package queuetest

import (
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/internal/check"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/store"
	"github.com/s3q/s3q/shared/store/storefault"
)

// runAttackRaceDedupCases are the dedup cases of runAttackRace (groups.go).
func runAttackRaceDedupCases(t *testing.T, f Factory) {

	// A failed dedup holder retried and purged at once, each in the
	// middle of the other.
	t.Run("a_retry_whose_record_write_meets_a_purge_of_its_task_leaves_the_key_free", func(t *testing.T) {
		e := newAttackEnv(t, f)
		st := deadHolder(e)
		now := t0.Add(time.Minute)
		q, h := e.interleave("/tasks/", "put", func() {
			if _, err := e.reopen().Purge(ctx, queue.BulkRequest{Queue: attackQueue, Status: queue.StatusFailed}, now); err != nil {
				t.Errorf("purge: %v", err)
			}
		})
		_, err := q.Retry(ctx, st.id, now)
		wantFired(t, h)
		if !errors.Is(err, queue.ErrNotFound) {
			t.Fatalf("retry of a task purged meanwhile: %v, want not found", err)
		}
		e.keyIsFree(now)
	})
	t.Run("a_purge_whose_tombstone_write_meets_a_retry_of_its_task_leaves_one_live_holder", func(t *testing.T) {
		e := newAttackEnv(t, f)
		st := deadHolder(e)
		now := t0.Add(time.Minute)
		q, h := e.interleave("/tasks/", "put", func() {
			if _, err := e.reopen().Retry(ctx, st.id, now); err != nil {
				t.Errorf("retry: %v", err)
			}
		})
		if _, err := q.Purge(ctx, queue.BulkRequest{Queue: attackQueue, Status: queue.StatusFailed}, now); err != nil {
			t.Fatal(err)
		}
		wantFired(t, h)
		wantStatus(t, e.get(st.id), queue.StatusPending)
		res, err := e.q.Submit(ctx, attackSubmit(""), now)
		if err != nil || !res.Deduplicated || res.Task.ID != bareID(st.id) {
			t.Fatalf("submit with the key: %+v, %v: want it deduplicated to the retried task", res, err)
		}
		e.consistent()
	})

	// A submit with a dedup key in the middle of a retry of the task that
	// held it: one live task holds the key, whichever lands.
	for _, at := range []struct{ name, match, op string }{
		{"before_its_first_write", "/", ""},
		{"between_its_pointer_and_its_record", "/tasks/", "put"},
	} {
		t.Run("a_submit_of_a_dedup_key_"+at.name+"_of_a_retry_of_its_holder_leaves_one_live_holder", func(t *testing.T) {
			e := newAttackEnv(t, f)
			st := deadHolder(e)
			now := t0.Add(time.Minute)
			var sub queue.SubmitResult
			var subErr error
			q, h := e.interleave(at.match, at.op, func() {
				sub, subErr = e.reopen().Submit(ctx, attackSubmit(""), now)
			})
			_, err := q.Retry(ctx, st.id, now)
			wantFired(t, h)
			e.consistent()
			live := 0
			for _, task := range e.records() {
				if task.DedupKey == "k" && !task.Status.Terminal() {
					live++
				}
			}
			if live != 1 {
				t.Fatalf("%d live tasks hold the key (retry: %v; submit: %+v, %v), want 1", live, err, sub, subErr)
			}
		})
	}

	// A submit of the key, a purge and a retry of its failed holder race
	// freely: one live holder at most, and recovery settles everything.
	t.Run("a_dedup_submit_a_purge_and_a_retry_of_the_holder_racing_leave_one_live_holder", func(t *testing.T) {
		rounds := 4
		if f.Real {
			rounds = 2
		}
		for i := 0; i < rounds; i++ {
			e := newAttackEnv(t, f)
			st := deadHolder(e)
			now := t0.Add(time.Minute)
			q1, q2, q3 := e.reopen(), e.reopen(), e.reopen()
			race(
				func() error { _, err := q1.Submit(ctx, attackSubmit(""), now); return err },
				func() error {
					_, err := q2.Purge(ctx, queue.BulkRequest{Queue: attackQueue, Status: queue.StatusFailed}, now)
					return err
				},
				func() error { _, err := q3.Retry(ctx, st.id, now); return err },
			)
			live := 0
			for _, task := range e.records() {
				if task.PurgedAt == nil && task.DedupKey == "k" && !task.Status.Terminal() {
					live++
				}
			}
			if live > 1 {
				t.Fatalf("%d live tasks hold the key", live)
			}
			attackRecover(t, e, now)
		}
	})
}

// keyIsFree fails unless a submit of dedup key "k" at now makes a new
// task, and recovery after it leaves everything settled.
func (e *env) keyIsFree(now time.Time) {
	e.t.Helper()
	res, err := e.reopen().Submit(ctx, attackSubmit(""), now)
	if err != nil || res.Deduplicated {
		e.t.Fatalf("submit with the key: %+v, %v: want a new task", res, err)
	}
	attackRecover(e.t, e, now)
}

// runCancelDedupCases are the dedup cases of runCancel (groups.go).
func runCancelDedupCases(t *testing.T, f Factory) {

	t.Run("retry_takes_its_dedup_key_back_from_a_holder_past_its_deadline_and_expires_that_holder", func(t *testing.T) {
		e := newEnv(t, f)
		first := e.submit(queue.SubmitRequest{DedupKey: "k"}, t0)
		if _, err := e.q.Cancel(ctx, first.Ref(), t0); err != nil {
			t.Fatal(err)
		}
		holder := e.submit(queue.SubmitRequest{DedupKey: "k", TTL: check.Dur("1m")}, t0)
		if holder.ID == first.ID {
			t.Fatal("the cancelled task still held its key")
		}
		// The holder can never run after t0+1m, though no sweep marked it.
		got, err := e.q.Retry(ctx, first.Ref(), t0.Add(2*time.Minute))
		if err != nil || got.Status != queue.StatusPending {
			t.Fatalf("retry: %v %v", got.Status, err)
		}
		wantStatus(t, e.get(holder.Ref()), queue.StatusExpired)
		res, err := e.q.Submit(ctx, queue.SubmitRequest{TaskType: "x", DedupKey: "k"}, t0.Add(3*time.Minute))
		if err != nil || !res.Deduplicated || res.Task.ID != first.ID {
			t.Fatalf("the key after the retry: %+v %v", res, err)
		}
	})
}

// runCancelRulesDedupCases are the dedup cases of runCancelRules (groups.go).
func runCancelRulesDedupCases(t *testing.T, f Factory) {

	t.Run("retry_never_makes_two_live_tasks_of_one_dedup_key", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		a := e.submit(queue.SubmitRequest{DedupKey: "k", MaxAttempts: 1}, t0)
		ca := e.claimOne(t0)
		if _, err := e.q.Fail(ctx, queue.FailRequest{ID: a.Ref(), LeaseToken: ca.Lease.Token, Error: "x"}, t0); err != nil {
			t.Fatal(err)
		}
		b, err := e.q.Submit(ctx, queue.SubmitRequest{TaskType: "x", DedupKey: "k"}, t0.Add(time.Second))
		if err != nil || b.Deduplicated {
			t.Fatalf("b: %+v %v", b, err)
		}
		_, err = e.q.Retry(ctx, a.Ref(), t0.Add(2*time.Second))
		var se *queue.StateError
		if !errors.As(err, &se) {
			t.Fatalf("retry of a task whose dedup key another live task holds: %v, want a StateError", err)
		}
		// Once b is finished the key is free and a can be retried; a submit
		// meanwhile does not take the key over from the reviving a.
		cb := e.claimOne(t0.Add(3 * time.Second))
		if cb.Task.ID != b.Task.ID {
			t.Fatalf("claimed %s, want b %s", cb.Task.ID, b.Task.ID)
		}
		if _, err := e.q.Complete(ctx, queue.CompleteRequest{ID: b.Task.Ref(), LeaseToken: cb.Lease.Token}, t0.Add(3*time.Second)); err != nil {
			t.Fatal(err)
		}
		if _, err := e.q.Sweep(ctx, t0.Add(4*time.Second), queue.SweepOptions{}); err != nil { // publishes a's Task Dead-Lettered event
			t.Fatal(err)
		}
		if r, err := e.q.Retry(ctx, a.Ref(), t0.Add(4*time.Second)); err != nil || r.Status != queue.StatusPending {
			t.Fatalf("retry once the key is free: %v %v", r.Status, err)
		}
		c, err := e.q.Submit(ctx, queue.SubmitRequest{TaskType: "x", DedupKey: "k"}, t0.Add(5*time.Second))
		if err != nil || !c.Deduplicated || c.Task.ID != a.ID {
			t.Fatalf("a submit after the retry must return the revived task: %+v %v", c, err)
		}
		ga, gb := e.get(a.Ref()), e.get(b.Task.Ref())
		if !ga.Status.Terminal() && !gb.Status.Terminal() {
			t.Fatalf("two live tasks for dedup key k: %s (%s) and %s (%s)", ga.ID, ga.Status, gb.ID, gb.Status)
		}
	})
}

// runLostManageDedupCases are the dedup cases of runLostManage (groups.go).
func runLostManageDedupCases(t *testing.T, f Factory) {

	t.Run("a_dedup_pointer_left_by_a_conflicting_submit_of_a_taken_id_does_not_hold_its_key", func(t *testing.T) {
		e := newEnv(t, f)
		x := e.submit(queue.SubmitRequest{ID: queue.NewID(t0), DedupKey: "k1"}, t0)
		// A submit of x's id with another body and key k2 took k2's
		// pointer and crashed before its (refused) create: the pointer
		// names x, a live task that does not hold k2.
		body, _ := json.Marshal(map[string]any{"task_id": x.ID, "created_at": t0})
		if _, err := e.s.PutIfAbsent(ctx, queue.DedupKey(queue.DefaultQueue, "k2"), body); err != nil {
			t.Fatal(err)
		}
		res, err := e.q.Submit(ctx, queue.SubmitRequest{TaskType: "email.send", DedupKey: "k2"}, t0.Add(5*time.Minute))
		if err != nil || res.Deduplicated || res.Task.ID == x.ID || res.Task.DedupKey != "k2" {
			t.Fatalf("a submit with k2: %+v %v", res, err)
		}
		e.consistent()
		// Nor does it stop a retry of the task that holds the key.
		f := e.submit(queue.SubmitRequest{DedupKey: "k3"}, t0)
		if _, err := e.q.Cancel(ctx, f.Ref(), t0); err != nil {
			t.Fatal(err)
		}
		obj, err := e.s.Get(ctx, queue.DedupKey(queue.DefaultQueue, "k3"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.s.PutIfMatch(ctx, queue.DedupKey(queue.DefaultQueue, "k3"), body, obj.ETag); err != nil {
			t.Fatal(err)
		}
		if got, err := e.q.Retry(ctx, f.Ref(), t0.Add(5*time.Minute)); err != nil || got.Status != queue.StatusPending {
			t.Fatalf("retry of the task with k3: %v %v", got.Status, err)
		}
		e.consistent()
	})
}

// runRaceDedupCases are the dedup cases of runRace (groups.go).
func runRaceDedupCases(t *testing.T, f Factory) {

	t.Run("concurrent_submits_with_one_dedup_key_make_one_task", func(t *testing.T) {
		e := newEnv(t, f)
		var wg sync.WaitGroup
		ids := make(chan string, Workers)
		errs := make(chan error, Workers)
		start := make(chan struct{})
		for w := 0; w < Workers; w++ {
			q := e.reopen()
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				res, err := q.Submit(ctx, queue.SubmitRequest{TaskType: "x", DedupKey: "once"}, t0)
				if err != nil {
					errs <- err
					return
				}
				ids <- res.Task.ID
			}()
		}
		close(start)
		wg.Wait()
		close(ids)
		close(errs)
		for err := range errs {
			if !errors.Is(err, queue.ErrConflict) {
				t.Fatalf("submit: %v", err)
			}
		}
		seen := map[string]bool{}
		for id := range ids {
			seen[id] = true
		}
		if len(seen) != 1 {
			t.Fatalf("%d distinct tasks for one dedup key", len(seen))
		}
		if n := len(e.inQueues("/tasks/")); n != 1 {
			t.Fatalf("%d task records for one dedup key", n)
		}
	})
}

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

// runSubmitDedupCases are the dedup cases of runSubmit (groups.go).
func runSubmitDedupCases(t *testing.T, f Factory) {

	t.Run("dedup_key_returns_the_existing_task_while_it_is_live", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		first, err := e.q.Submit(ctx, queue.SubmitRequest{TaskType: "x", DedupKey: "order-42"}, t0)
		if err != nil || first.Deduplicated {
			t.Fatalf("first submit: %+v %v", first, err)
		}
		again, err := e.q.Submit(ctx, queue.SubmitRequest{TaskType: "x", DedupKey: "order-42"}, t0.Add(time.Second))
		if err != nil || !again.Deduplicated || again.Task.ID != first.Task.ID {
			t.Fatalf("second submit: dedup=%v id=%s want %s, err %v", again.Deduplicated, again.Task.ID, first.Task.ID, err)
		}
		other, err := e.q.Submit(ctx, queue.SubmitRequest{TaskType: "x", DedupKey: "order-42", Queue: "other"}, t0)
		if err != nil || other.Deduplicated {
			t.Fatalf("same key in another queue must not dedup: %+v %v", other, err)
		}
		// Still live while running.
		c := e.claimOne(t0.Add(2 * time.Second))
		running, _ := e.q.Submit(ctx, queue.SubmitRequest{TaskType: "x", DedupKey: "order-42"}, t0.Add(3*time.Second))
		if !running.Deduplicated || running.Task.ID != first.Task.ID {
			t.Fatalf("dedup while running: %+v", running)
		}
		if _, err := e.q.Complete(ctx, queue.CompleteRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token}, t0.Add(4*time.Second)); err != nil {
			t.Fatal(err)
		}
		after, err := e.q.Submit(ctx, queue.SubmitRequest{TaskType: "x", DedupKey: "order-42"}, t0.Add(5*time.Second))
		if err != nil || after.Deduplicated || after.Task.ID == first.Task.ID {
			t.Fatalf("after completion a new task is made: %+v %v", after, err)
		}
	})
}
