package queuetest

import (
	"strings"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/internal/check"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/store/storefault"
)

// The child's marker under its parent and the parent's flag
// (side_child.go).
func runSideChild(t *testing.T, f Factory) {
	childKey := func(parent, child string) string { return "q/default/children/" + parent + "/" + child }
	flagKey := func(parent string) string { return "q/default/children/" + parent + ".flag" }

	t.Run("a_child_has_its_marker_while_it_is_live_and_its_parent_keeps_its_flag", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		parent := e.submit(queue.SubmitRequest{TTL: check.Dur("1h")}, t0)
		child := e.submit(queue.SubmitRequest{ParentID: parent.ID}, t0)
		wantKeys(t, "child hints after the submit", e.inQueues("/children/"), childKey(parent.ID, child.ID), flagKey(parent.ID))
		if _, err := e.q.Cancel(ctx, child.Ref(), t0); err != nil {
			t.Fatal(err)
		}
		wantKeys(t, "child hints after the cancel", e.inQueues("/children/"), flagKey(parent.ID))
		if _, err := e.q.Retry(ctx, child.Ref(), t0.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		wantKeys(t, "child hints after the retry", e.inQueues("/children/"), childKey(parent.ID, child.ID), flagKey(parent.ID))
		if _, err := e.q.Cancel(ctx, child.Ref(), t0.Add(2*time.Second)); err != nil {
			t.Fatal(err)
		}
		wantKeys(t, "child hints after the second cancel", e.inQueues("/children/"), flagKey(parent.ID))
	})

	t.Run("a_child_submit_whose_record_write_fails_leaves_stale_hints_that_the_parents_cascade_deletes", func(t *testing.T) {
		t.Parallel()
		e, fs := newLossEnv(t, f)
		parent := e.submit(queue.SubmitRequest{TTL: check.Dur("1m")}, t0)
		recordWriteFails(t, e, fs, "default", "", func() error {
			_, err := e.q.Submit(ctx, queue.SubmitRequest{TaskType: "email.send", ParentID: parent.ID}, t0)
			return err
		})
		wantTasks(t, e, 1)
		wantKeyCount(t, "child hints", e.inQueues("/children/"), 2)
		e.sweep(t0.Add(5*time.Minute), nil)
		e.sweep(t0.Add(6*time.Minute), nil)
		wantStatus(t, e.get(parent.Ref()), queue.StatusExpired)
		wantKeys(t, "child hints after the cascade", e.inQueues("/children/"))
		wantKeys(t, "hints after the cascade", e.hints())
	})

	t.Run("a_child_retry_whose_record_write_fails_leaves_the_child_cancelled_and_a_stale_marker_that_the_cascade_deletes", func(t *testing.T) {
		t.Parallel()
		e, fs := newLossEnv(t, f)
		parent := e.submit(queue.SubmitRequest{TTL: check.Dur("1h")}, t0)
		child := e.submit(queue.SubmitRequest{ParentID: parent.ID}, t0)
		if _, err := e.q.Cancel(ctx, child.Ref(), t0); err != nil {
			t.Fatal(err)
		}
		recordWriteFails(t, e, fs, "default", child.Ref(), func() error {
			_, err := e.q.Retry(ctx, child.Ref(), t0.Add(time.Second))
			return err
		})
		wantKeys(t, "child hints", e.inQueues("/children/"), childKey(parent.ID, child.ID), flagKey(parent.ID))
		e.sweep(t0.Add(2*time.Hour), nil)
		e.sweep(t0.Add(2*time.Hour+time.Minute), nil)
		wantStatus(t, e.get(parent.Ref()), queue.StatusExpired)
		wantStatus(t, e.get(child.Ref()), queue.StatusCancelled)
		wantKeys(t, "child hints after the cascade", e.inQueues("/children/"))
	})

	for _, suffix := range []string{".flag", ""} {
		t.Run("a_child_submit_whose_parent_hint_answer_was_lost_still_joins_the_cascade"+strings.ReplaceAll(suffix, ".", "_"), func(t *testing.T) {
			t.Parallel()
			e, fs := newLossEnv(t, f)
			parent := e.submit(queue.SubmitRequest{TTL: check.Dur("1m")}, t0)
			prefix := "q/default/children/" + parent.ID + suffix
			if suffix == "" {
				prefix += "/"
			}
			lose(fs, storefault.OpPut, prefix)
			child, err := e.q.Submit(ctx, queue.SubmitRequest{TaskType: "email.send", ParentID: parent.ID}, t0)
			if err != nil {
				t.Fatal(err)
			}
			wantHits(t, fs, 1)
			e.consistent()
			wantKeyCount(t, "child hints", e.inQueues("/children/"), 2)
			e.sweep(t0.Add(2*time.Minute), nil)
			e.sweep(t0.Add(3*time.Minute), nil)
			wantStatus(t, e.get(child.Task.Ref()), queue.StatusExpired)
		})
	}

	t.Run("two_retries_of_one_cancelled_child_leave_one_winner_with_its_marker_which_the_loser_does_not_delete", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		parent := e.submit(queue.SubmitRequest{TTL: check.Dur("1h")}, t0)
		// A deadline of its own, past its parent's: only the cascade
		// expires it at 2h.
		child := e.submit(queue.SubmitRequest{ParentID: parent.ID, TTL: check.Dur("10h")}, t0)
		if _, err := e.q.Cancel(ctx, child.Ref(), t0); err != nil {
			t.Fatal(err)
		}
		e.raceRetries(t0.Add(time.Second), child.Ref(), child.Ref())
		wantStatus(t, e.get(child.Ref()), queue.StatusPending)
		wantKeys(t, "child hints", e.inQueues("/children/"), childKey(parent.ID, child.ID), flagKey(parent.ID))
		// The parent's expiry reaches the child through its marker.
		e.sweep(t0.Add(2*time.Hour), nil)
		e.sweep(t0.Add(2*time.Hour+time.Minute), nil)
		wantStatus(t, e.get(child.Ref()), queue.StatusExpired)
	})
}
