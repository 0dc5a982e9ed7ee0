package queuetest

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/internal/check"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/store"
)

func runClaim(t *testing.T, f Factory) {
	t.Run("claim_on_an_empty_queue_returns_nothing", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		e.claimNone(t0)
	})

	t.Run("claim_returns_a_running_task_with_a_lease", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		task := e.submit(queue.SubmitRequest{}, t0)
		c := e.claim(queue.ClaimRequest{WorkerID: "w1", LeaseFor: time.Minute}, t0.Add(time.Second))
		if len(c) != 1 || c[0].Task.ID != task.ID {
			t.Fatalf("claimed %+v", c)
		}
		got := c[0]
		wantStatus(t, got.Task, queue.StatusRunning)
		if got.Task.Attempt != 1 || got.Task.WorkerID != "w1" || got.Lease.Token == "" || got.Lease.TaskID != task.ID {
			t.Fatalf("claimed task: attempt=%d worker=%q lease=%+v", got.Task.Attempt, got.Task.WorkerID, got.Lease)
		}
		if !got.Lease.ExpiresAt.Equal(t0.Add(time.Second + time.Minute)) {
			t.Fatalf("lease expires_at = %s", got.Lease.ExpiresAt)
		}
		stored := e.get(task.Ref())
		wantStatus(t, stored, queue.StatusRunning)
		if stored.LeaseToken != got.Lease.Token {
			t.Fatal("stored lease token differs from the returned one")
		}
	})

	t.Run("claim_without_lease_for_uses_the_task_timeout", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		e.submit(queue.SubmitRequest{Timeout: check.Dur("90s")}, t0)
		c := e.claimOne(t0)
		if !c.Lease.ExpiresAt.Equal(t0.Add(90 * time.Second)) {
			t.Fatalf("lease expires_at = %s, want now+90s", c.Lease.ExpiresAt)
		}
	})

	t.Run("a_task_is_not_claimable_before_available_at_and_is_at_that_instant", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		when := t0.Add(40 * 24 * time.Hour) // well past any 15-minute cap
		task := e.submit(queue.SubmitRequest{ScheduleAt: &when}, t0)
		e.claimNone(when.Add(-time.Microsecond))
		c := e.claimOne(when)
		if c.Task.ID != task.ID {
			t.Fatal("wrong task")
		}
	})

	t.Run("a_claim_never_starts_a_task_at_or_past_its_expires_at", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		task := e.submit(queue.SubmitRequest{TTL: check.Dur("10m")}, t0)
		exp := t0.Add(10 * time.Minute)
		e.claimNone(exp) // exactly at expires_at: too late
		got := e.get(task.Ref())
		wantStatus(t, got, queue.StatusExpired)
		wantTime(t, "expired_at", got.ExpiredAt, exp)
		if got.ExpiryReason != queue.ReasonTTL || got.Attempt != 0 || got.StartedAt != nil {
			t.Fatalf("expired task: reason=%q attempt=%d started_at=%v", got.ExpiryReason, got.Attempt, got.StartedAt)
		}
		if m := e.markers(); len(m) != 0 {
			t.Fatalf("markers left: %v", m)
		}
		e2 := newEnv(t, f)
		ok := e2.submit(queue.SubmitRequest{TTL: check.Dur("10m")}, t0)
		c := e2.claimOne(exp.Add(-time.Microsecond)) // one microsecond before: still starts
		if c.Task.ID != ok.ID {
			t.Fatal("wrong task")
		}
	})

	t.Run("claim_order_is_earliest_deadline_first_then_oldest_available", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		old := e.submit(queue.SubmitRequest{}, t0)
		newer := e.submit(queue.SubmitRequest{}, t0.Add(time.Second))
		late := e.submit(queue.SubmitRequest{TTL: check.Dur("2h")}, t0.Add(2*time.Second))
		soon := e.submit(queue.SubmitRequest{TTL: check.Dur("1h")}, t0.Add(3*time.Second))
		var got []string
		for i := 0; i < 4; i++ {
			got = append(got, e.claimOne(t0.Add(time.Minute)).Task.ID)
		}
		want := []string{soon.ID, late.ID, old.ID, newer.ID}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("claim order %v, want %v", got, want)
			}
		}
	})

	t.Run("max_tasks_claims_several_at_once", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		for i := 0; i < 5; i++ {
			e.submit(queue.SubmitRequest{}, t0)
		}
		cs := e.claim(queue.ClaimRequest{MaxTasks: 3}, t0)
		if len(cs) != 3 {
			t.Fatalf("claimed %d, want 3", len(cs))
		}
		cs = e.claim(queue.ClaimRequest{MaxTasks: 10}, t0)
		if len(cs) != 2 {
			t.Fatalf("claimed %d, want the 2 left", len(cs))
		}
	})

	t.Run("claim_takes_only_its_queue_and_task_types", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		a := e.submit(queue.SubmitRequest{TaskType: "a"}, t0)
		b := e.submit(queue.SubmitRequest{TaskType: "b"}, t0)
		other := e.submit(queue.SubmitRequest{TaskType: "a", Queue: "other"}, t0)
		cs := e.claim(queue.ClaimRequest{TaskTypes: []string{"b"}}, t0)
		if len(cs) != 1 || cs[0].Task.ID != b.ID {
			t.Fatalf("claim of type b got %+v", cs)
		}
		cs = e.claim(queue.ClaimRequest{TaskTypes: []string{"a"}, MaxTasks: 5}, t0)
		if len(cs) != 1 || cs[0].Task.ID != a.ID {
			t.Fatalf("claim of type a got %+v", cs)
		}
		cs = e.claim(queue.ClaimRequest{Queue: "other"}, t0)
		if len(cs) != 1 || cs[0].Task.ID != other.ID {
			t.Fatalf("claim of queue other got %+v", cs)
		}
	})

	t.Run("a_valid_lease_keeps_other_claimers_away", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		e.submit(queue.SubmitRequest{}, t0)
		c := e.claim(queue.ClaimRequest{LeaseFor: time.Minute}, t0)
		if len(c) != 1 {
			t.Fatal("no claim")
		}
		other := e.reopen() // another process, with no cache
		for _, now := range []time.Time{t0, t0.Add(30 * time.Second), t0.Add(time.Minute - time.Microsecond)} {
			if cs, err := other.Claim(ctx, queue.ClaimRequest{}, now); err != nil || len(cs) != 0 {
				t.Fatalf("second claimer at %s got %d tasks (err %v) while the lease is valid", now, len(cs), err)
			}
		}
	})

	t.Run("an_expired_lease_is_reclaimed_by_the_next_claim", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		task := e.submit(queue.SubmitRequest{}, t0)
		first := e.claim(queue.ClaimRequest{LeaseFor: time.Minute}, t0)[0]
		other := e.reopen()
		cs, err := other.Claim(ctx, queue.ClaimRequest{LeaseFor: time.Minute}, t0.Add(time.Minute))
		if err != nil || len(cs) != 1 || cs[0].Task.ID != task.ID {
			t.Fatalf("reclaim: %+v %v", cs, err)
		}
		if cs[0].Task.Attempt != 2 || cs[0].Lease.Token == first.Lease.Token {
			t.Fatalf("reclaimed: attempt %d, same token %v", cs[0].Task.Attempt, cs[0].Lease.Token == first.Lease.Token)
		}
		// The old holder has lost it.
		_, err = e.q.Complete(ctx, queue.CompleteRequest{ID: task.Ref(), LeaseToken: first.Lease.Token}, t0.Add(time.Minute+time.Second))
		check.Err(t, err, queue.ErrLeaseMismatch)
	})

	t.Run("an_expired_lease_with_attempts_spent_fails_the_task", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		task := e.submit(queue.SubmitRequest{MaxAttempts: 1}, t0)
		e.claim(queue.ClaimRequest{LeaseFor: time.Minute}, t0)
		e.claimNone(t0.Add(time.Hour))
		got := e.get(task.Ref())
		wantStatus(t, got, queue.StatusFailed)
		if got.LastError == "" || got.FailedAt == nil {
			t.Fatalf("failed task without last_error / failed_at: %+v", got)
		}
		if m := e.markers(); len(m) != 0 {
			t.Fatalf("markers left: %v", m)
		}
	})

	t.Run("an_expired_lease_past_the_deadline_expires_the_task", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		task := e.submit(queue.SubmitRequest{TTL: check.Dur("10m")}, t0)
		e.claim(queue.ClaimRequest{LeaseFor: 15 * time.Minute}, t0)
		// The deadline passes while it runs: it is not interrupted.
		if _, err := e.q.Heartbeat(ctx, queue.HeartbeatRequest{ID: task.Ref(), LeaseToken: e.get(task.Ref()).LeaseToken}, t0.Add(11*time.Minute)); err != nil {
			t.Fatalf("heartbeat after the deadline on a running task: %v", err)
		}
		// Its worker dies; the lease runs out; it is not started again.
		e.claimNone(t0.Add(time.Hour))
		wantStatus(t, e.get(task.Ref()), queue.StatusExpired)
	})

	t.Run("claim_rejects_a_bad_lease_duration_and_bad_names", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		e.submit(queue.SubmitRequest{}, t0)
		_, err := e.q.Claim(ctx, queue.ClaimRequest{LeaseFor: -time.Second}, t0)
		check.Err(t, err, queue.ErrInvalidLeaseDuration)
		_, err = e.q.Claim(ctx, queue.ClaimRequest{LeaseFor: 13 * time.Hour}, t0)
		check.Err(t, err, queue.ErrInvalidLeaseDuration)
		_, err = e.q.Claim(ctx, queue.ClaimRequest{Queue: "a/b"}, t0)
		check.Field(t, err, "queue")
		_, err = e.q.Claim(ctx, queue.ClaimRequest{TaskTypes: []string{".."}}, t0)
		check.Field(t, err, "task_types")
		_, err = e.q.Claim(ctx, queue.ClaimRequest{MaxTasks: 1000}, t0)
		check.Field(t, err, "max_tasks")
		wantStatus(t, e.get(e.claimOne(t0).Task.ID), queue.StatusRunning) // still there, untouched
	})

	t.Run("a_marker_without_a_record_is_deleted_once_old", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		ghost := queue.NewID(t0)
		key := "q/default/index/ready/0/20260128T090000.000000Z_" + ghost
		if _, err := e.s.Put(ctx, key, nil); err != nil {
			t.Fatal(err)
		}
		e.claimNone(t0.Add(time.Second)) // young: maybe a submit in flight, kept
		if m := e.markers(); len(m) != 1 {
			t.Fatalf("young orphan marker deleted: %v", m)
		}
		e.claimNone(t0.Add(10 * time.Minute))
		if m := e.markers(); len(m) != 0 {
			t.Fatalf("old orphan marker kept: %v", m)
		}
	})
}

// runFastClaimCases are the claim cases of runFast (groups.go).
func runFastClaimCases(t *testing.T, f Factory) {

	t.Run("a_claim_of_a_task_this_process_submitted_makes_no_read", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		c := store.NewCounting(e.s)
		q := e.open(c)
		if cs, err := q.Claim(ctx, queue.ClaimRequest{}, t0); err != nil || len(cs) != 0 { // lists the empty queue
			t.Fatalf("claim of an empty queue: %v %d", err, len(cs))
		}
		if _, err := q.Submit(ctx, queue.SubmitRequest{TaskType: "x"}, t0); err != nil {
			t.Fatal(err)
		}
		c.Reset()
		cs, err := q.Claim(ctx, queue.ClaimRequest{LeaseFor: time.Minute}, t0.Add(100*time.Millisecond))
		if err != nil || len(cs) != 1 {
			t.Fatalf("claim: %v %d", err, len(cs))
		}
		if got := c.Counts(); got.Get != 0 || got.Put != 1 || got.List != 0 {
			t.Fatalf("claim made %v, want one PUT: the listing (under a second old) and the record are this process's own", got)
		}
	})

	t.Run("a_claim_on_a_stale_cached_record_never_takes_a_task_another_holds", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		id := e.submit(queue.SubmitRequest{}, t0).ID // e.q caches it pending
		other := e.reopen()
		theirs, err := other.Claim(ctx, queue.ClaimRequest{LeaseFor: time.Minute}, t0)
		if err != nil || len(theirs) != 1 {
			t.Fatalf("other claim: %v %d", err, len(theirs))
		}
		if cs := e.claim(queue.ClaimRequest{}, t0.Add(time.Second)); len(cs) != 0 {
			t.Fatalf("claimed %s, which another process holds", cs[0].Task.ID)
		}
		if got := e.get(id); got.LeaseToken != theirs[0].Lease.Token || got.Attempt != 1 {
			t.Fatalf("task lease %s attempt %d, want the other process's, attempt 1", got.LeaseToken, got.Attempt)
		}
	})

	t.Run("a_claim_for_several_tasks_tries_them_at_once_and_gets_them_all", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		for range 5 {
			e.submit(queue.SubmitRequest{}, t0)
		}
		cs := e.reopen()
		got, err := cs.Claim(ctx, queue.ClaimRequest{MaxTasks: 5, LeaseFor: time.Minute}, t0)
		if err != nil || len(got) != 5 {
			t.Fatalf("claim: %v, %d tasks, want 5", err, len(got))
		}
		seen := map[string]bool{}
		for _, c := range got {
			if seen[c.Task.ID] || c.Task.Status != queue.StatusRunning {
				t.Fatalf("task %s twice or %s", c.Task.ID, c.Task.Status)
			}
			seen[c.Task.ID] = true
		}
	})
}

// runRaceClaimCases are the claim cases of runRace (groups.go).
func runRaceClaimCases(t *testing.T, f Factory) {
	t.Run("many_claimers_one_task_exactly_one_wins", func(t *testing.T) {
		e := newEnv(t, f)
		for round := 0; round < 3; round++ {
			now := t0.Add(time.Duration(round) * time.Hour)
			task := e.submit(queue.SubmitRequest{}, now)
			var wins atomic.Int32
			var wg sync.WaitGroup
			errs := make(chan error, Workers)
			start := make(chan struct{})
			for w := 0; w < Workers; w++ {
				q := e.reopen() // each claimer its own process
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					cs, err := q.Claim(ctx, queue.ClaimRequest{LeaseFor: time.Minute}, now)
					if err != nil {
						errs <- err
						return
					}
					for _, c := range cs {
						if c.Task.ID == task.ID {
							wins.Add(1)
						}
					}
				}()
			}
			close(start)
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatalf("claim: %v", err)
			}
			if n := wins.Load(); n != 1 {
				t.Fatalf("round %d: %d claimers won the task, want exactly 1", round, n)
			}
			got := e.get(task.Ref())
			if got.Attempt != 1 {
				t.Fatalf("attempt = %d after one winning claim", got.Attempt)
			}
			if _, err := e.q.Complete(ctx, queue.CompleteRequest{ID: task.Ref(), LeaseToken: got.LeaseToken}, now); err != nil {
				t.Fatal(err)
			}
		}
	})
}
