package queuetest

import (
	"slices"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/store/storefault"
)

// The status entry of a task in a rare status (side_status.go).
func runSideStatus(t *testing.T, f Factory) {
	entry := func(s queue.Status, id string) string { return "q/default/status/" + string(s) + "/" + id }

	t.Run("a_status_entry_exists_exactly_while_its_task_is_failed_expired_or_cancelled", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		a := e.submit(queue.SubmitRequest{MaxAttempts: 1}, t0)
		wantKeys(t, "status entries of a pending task", e.inQueues("/status/"))
		if _, err := e.q.Cancel(ctx, a.Ref(), t0); err != nil {
			t.Fatal(err)
		}
		wantKeys(t, "status entries after the cancel", e.inQueues("/status/"), entry(queue.StatusCancelled, a.ID))
		if _, err := e.q.Retry(ctx, a.Ref(), t0.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		wantKeys(t, "status entries after the retry", e.inQueues("/status/"))
		c := e.claimOne(t0.Add(time.Second))
		wantKeys(t, "status entries while it runs", e.inQueues("/status/"))
		if _, err := e.q.Fail(ctx, queue.FailRequest{ID: a.Ref(), LeaseToken: c.Lease.Token, Error: "x"}, t0.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		wantKeys(t, "status entries after the dead letter", e.inQueues("/status/"), entry(queue.StatusFailed, a.ID))
		b := e.submit(queue.SubmitRequest{}, t0)
		if _, err := e.q.Expire(ctx, b.Ref(), t0); err != nil {
			t.Fatal(err)
		}
		wantKeys(t, "status entries after an expire", e.inQueues("/status/"), entry(queue.StatusFailed, a.ID), entry(queue.StatusExpired, b.ID))
	})

	t.Run("a_cancel_whose_record_write_fails_leaves_the_task_pending_and_a_stale_status_entry_that_a_listing_deletes", func(t *testing.T) {
		t.Parallel()
		e, fs := newLossEnv(t, f)
		a := e.submit(queue.SubmitRequest{}, t0)
		recordWriteFails(t, e, fs, "default", a.Ref(), func() error {
			_, err := e.q.Cancel(ctx, a.Ref(), t0)
			return err
		})
		wantStatus(t, e.get(a.Ref()), queue.StatusPending)
		wantKeys(t, "status entries", e.inQueues("/status/"), entry(queue.StatusCancelled, a.ID))
		wall := time.Now().UTC() // the store stamps keys with its own clock
		if got := e.listIDs(queue.ListRequest{Status: queue.StatusCancelled, Now: wall.Add(10 * time.Minute)}); len(got) != 0 {
			t.Fatalf("listed %v as cancelled", got)
		}
		wantKeys(t, "status entries after the listing", e.inQueues("/status/"))
		if _, err := e.q.Cancel(ctx, a.Ref(), t0.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		if got := e.listIDs(queue.ListRequest{Status: queue.StatusCancelled}); len(got) != 1 || got[0] != a.ID {
			t.Fatalf("listed %v as cancelled, want %s", got, a.ID)
		}
	})

	t.Run("a_cancel_whose_status_entry_answer_was_lost_writes_one_entry_and_lists_the_task_once", func(t *testing.T) {
		t.Parallel()
		e, fs := newLossEnv(t, f)
		a := e.submit(queue.SubmitRequest{}, t0)
		lose(fs, storefault.OpPut, "q/default/status/")
		if _, err := e.q.Cancel(ctx, a.Ref(), t0); err != nil {
			t.Fatal(err)
		}
		wantHits(t, fs, 1)
		wantKeys(t, "status entries", e.inQueues("/status/"), entry(queue.StatusCancelled, a.ID))
		if got := e.listIDs(queue.ListRequest{Status: queue.StatusCancelled}); len(got) != 1 || got[0] != a.ID {
			t.Fatalf("listed %v as cancelled, want %s", got, a.ID)
		}
		e.consistent()
	})

	t.Run("a_cancel_and_an_expire_racing_from_one_version_leave_one_winner_listed_under_its_status", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		a := e.submit(queue.SubmitRequest{}, t0)
		p1, p2 := e.cached(a.Ref()), e.cached(a.Ref())
		now := t0.Add(time.Second)
		errs := race(
			func() error { _, err := p1.Cancel(ctx, a.Ref(), now); return err },
			func() error { _, err := p2.Expire(ctx, a.Ref(), now); return err },
		)
		statuses := []queue.Status{queue.StatusCancelled, queue.StatusExpired}
		win := oneWinner(t, errs)
		wantStatus(t, e.get(a.Ref()), statuses[win])
		if !slices.Contains(e.inQueues("/status/"), entry(statuses[win], a.ID)) {
			t.Fatalf("the winner's status entry is missing: %v", e.inQueues("/status/"))
		}
		wall := time.Now().UTC().Add(10 * time.Minute) // past the grace of the loser's entry
		if got := e.listIDs(queue.ListRequest{Status: statuses[win], Now: wall}); len(got) != 1 || got[0] != a.ID {
			t.Fatalf("listed %v as %s, want %s", got, statuses[win], a.ID)
		}
		if got := e.listIDs(queue.ListRequest{Status: statuses[1-win], Now: wall}); len(got) != 0 {
			t.Fatalf("listed %v as %s", got, statuses[1-win])
		}
		wantKeys(t, "status entries after the listings", e.inQueues("/status/"), entry(statuses[win], a.ID))
	})
}
