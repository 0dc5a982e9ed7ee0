package queuetest

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/internal/check"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/store/storefault"
)

// The claim-index marker and its queue's wake-up (side_marker.go).
func runSideMarker(t *testing.T, f Factory) {
	t.Run("a_task_has_exactly_the_marker_its_record_names_while_it_is_pending_or_running_and_none_once_finished", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		wantKeys(t, "markers before the submit", e.markers())
		task := e.submit(queue.SubmitRequest{}, t0)
		wantKeys(t, "markers after the submit", e.markers(), task.IndexKey)
		c := e.claimOne(t0)
		wantKeys(t, "markers while it runs", e.markers(), task.IndexKey)
		retried, err := e.q.Fail(ctx, queue.FailRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token, Error: "x"}, t0)
		if err != nil {
			t.Fatal(err)
		}
		if retried.IndexKey == task.IndexKey {
			t.Fatalf("the retry kept marker %s", task.IndexKey)
		}
		wantKeys(t, "markers after a fail with retries left", e.markers(), retried.IndexKey)
		c = e.claimOne(t0.Add(time.Hour))
		if _, err := e.q.Complete(ctx, queue.CompleteRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token}, t0.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		wantKeys(t, "markers after the complete", e.markers())
		e.consistent()
	})

	t.Run("a_deadline_marker_comes_with_its_queues_wake_up_for_that_minute", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		task := e.submit(queue.SubmitRequest{TTL: check.Dur("1h")}, t0)
		if !strings.Contains(task.IndexKey, "/index/deadline/") {
			t.Fatalf("marker %s, want one under deadline/", task.IndexKey)
		}
		wantKeys(t, "markers", e.markers(), task.IndexKey)
		w := e.wakeups()
		wantKeyCount(t, "wake-ups", w, 1)
		if !strings.HasSuffix(w[0], "_default") {
			t.Fatalf("wake-up %s is not the default queue's", w[0])
		}
	})

	t.Run("a_fail_whose_record_write_fails_leaves_the_task_running_and_its_new_marker_a_stale_hint_that_a_claim_deletes", func(t *testing.T) {
		t.Parallel()
		e, fs := newLossEnv(t, f)
		task := e.submit(queue.SubmitRequest{}, t0)
		c := e.claim(queue.ClaimRequest{LeaseFor: crashLease}, t0)[0]
		recordWriteFails(t, e, fs, "default", task.Ref(), func() error {
			_, err := e.q.Fail(ctx, queue.FailRequest{ID: task.Ref(), LeaseToken: c.Lease.Token, Error: "x"}, t0.Add(time.Second))
			return err
		})
		if m := e.markers(); len(m) != 2 {
			t.Fatalf("markers %v, want the record's and the failed write's", m)
		}
		wantStatus(t, e.get(task.Ref()), queue.StatusRunning)
		// Nothing starts it while its lease is valid.
		if cs, err := e.reopen().Claim(ctx, queue.ClaimRequest{}, t0.Add(30*time.Second)); err != nil || len(cs) != 0 {
			t.Fatalf("claim during the lease: %d tasks, %v", len(cs), err)
		}
		recoverAll(t, e, t0)
		wantStatus(t, e.get(task.Ref()), queue.StatusCompleted)
		wantKeys(t, "markers after recovery", e.markers())
	})

	t.Run("a_fail_whose_marker_answer_was_lost_writes_one_marker_and_the_task_runs_again_once", func(t *testing.T) {
		t.Parallel()
		e, fs := newLossEnv(t, f)
		task := e.submit(queue.SubmitRequest{}, t0)
		c := e.claimOne(t0)
		lose(fs, storefault.OpPut, "q/default/index/ready/")
		got, err := e.q.Fail(ctx, queue.FailRequest{ID: task.Ref(), LeaseToken: c.Lease.Token, Error: "x"}, t0)
		if err != nil {
			t.Fatal(err)
		}
		wantHits(t, fs, 1)
		wantKeys(t, "markers", e.markers(), got.IndexKey)
		e.consistent()
		again := e.claimOne(t0.Add(time.Hour))
		if again.Task.ID != task.ID || again.Task.Attempt != 2 {
			t.Fatalf("claimed %s attempt %d, want %s attempt 2", again.Task.ID, again.Task.Attempt, task.ID)
		}
		e.claimNone(t0.Add(time.Hour))
	})

	t.Run("a_deadline_marker_whose_answer_was_lost_still_lets_the_sweep_find_the_task", func(t *testing.T) {
		t.Parallel()
		e, fs := newLossEnv(t, f)
		lose(fs, storefault.OpPut, "q/default/index/deadline/")
		res, err := e.q.Submit(ctx, queue.SubmitRequest{TaskType: "email.send", TTL: check.Dur("1m")}, t0)
		if err != nil {
			t.Fatal(err)
		}
		wantHits(t, fs, 1)
		e.consistent()
		rep := e.sweep(t0.Add(2*time.Minute), nil)
		if rep.Expired != 1 {
			t.Fatalf("sweep expired %d, want 1", rep.Expired)
		}
		wantStatus(t, e.get(res.Task.Ref()), queue.StatusExpired)
	})

	t.Run("a_complete_and_a_fail_racing_from_one_version_leave_one_winner_with_its_marker", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		task := e.submit(queue.SubmitRequest{}, t0)
		c := e.claim(queue.ClaimRequest{LeaseFor: crashLease}, t0)[0]
		p1, p2 := e.cached(task.Ref()), e.cached(task.Ref())
		now := t0.Add(time.Second)
		errs := race(
			func() error {
				_, err := p1.Complete(ctx, queue.CompleteRequest{ID: task.Ref(), LeaseToken: c.Lease.Token}, now)
				return err
			},
			func() error {
				_, err := p2.Fail(ctx, queue.FailRequest{ID: task.Ref(), LeaseToken: c.Lease.Token, Error: "x"}, now)
				return err
			},
		)
		win := oneWinner(t, errs)
		got := e.get(task.Ref())
		want := []queue.Status{queue.StatusCompleted, queue.StatusPending}[win]
		wantStatus(t, got, want)
		// The winner's marker is there (a loser's is a stale hint).
		if got.IndexKey != "" && !slices.Contains(e.markers(), got.IndexKey) {
			t.Fatalf("the winner names marker %s, which is missing: %v", got.IndexKey, e.markers())
		}
		recoverAll(t, e, now)
		wantKeys(t, "markers after recovery", e.markers())
	})
}
