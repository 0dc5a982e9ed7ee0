package queuetest

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/internal/check"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/store"
	"github.com/s3q/s3q/shared/store/storefault"
)

// runAttackRaceConcurrencyCases are the concurrency cases of runAttackRace (groups.go).
func runAttackRaceConcurrencyCases(t *testing.T, f Factory) {

	// A late complete in the middle of a claim that takes over its slot
	// (its lease lapsed): never two tasks of a one-slot queue running.
	t.Run("a_late_complete_in_the_middle_of_a_slot_takeover_leaves_at_most_one_task_running", func(t *testing.T) {
		e := newAttackEnv(t, f)
		e.submit(queue.SubmitRequest{TaskType: "x", Queue: attackQueue}, t0)
		e.submit(queue.SubmitRequest{TaskType: "x", Queue: attackQueue}, t0)
		cs := e.claim(queue.ClaimRequest{Queue: attackQueue, LeaseFor: attackLease}, t0)
		if len(cs) != 1 {
			t.Fatalf("claimed %d tasks, want 1", len(cs))
		}
		a := cs[0].Task
		late := t0.Add(2 * attackLease)
		var completeErr error
		q, h := e.interleave("/tasks/", "put", func() {
			completeErr = completeTask(e.reopen(), a.Ref(), cs[0].Lease.Token, late)
		})
		got, err := q.Claim(ctx, queue.ClaimRequest{Queue: attackQueue, LeaseFor: attackLease}, late)
		if err != nil {
			t.Fatal(err)
		}
		wantFired(t, h)
		running := 0
		for _, task := range e.records() {
			if task.Status == queue.StatusRunning {
				running++
			}
		}
		if running > 1 || len(got) > 1 {
			t.Fatalf("%d tasks running (claim got %d, late complete: %v), want at most 1", running, len(got), completeErr)
		}
		e.noDoubleRun(late)
		attackRecover(t, e, late)
	})
}

// runConcurrency proves max_concurrency: however many claimers race, at
// most max_concurrency tasks of the queue hold a valid lease at once.
func runConcurrency(t *testing.T, f Factory) {
	t.Run("racing_claimers_never_start_more_than_max_concurrency", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		const limit = 3
		e.declare(queues.Declaration{Name: "mc", MaxConcurrency: limit}, t0)
		for i := 0; i < 10; i++ {
			e.submit(queue.SubmitRequest{Queue: "mc"}, t0)
		}
		remaining := 10
		for round := 0; remaining > 0; round++ {
			now := t0.Add(time.Duration(round) * time.Second)
			var won []queue.Claimed
			var mu sync.Mutex
			var wg sync.WaitGroup
			var failed atomic.Value
			start := make(chan struct{})
			for w := 0; w < Workers; w++ {
				q := e.reopen() // each claimer its own process
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					cs, err := q.Claim(ctx, queue.ClaimRequest{Queue: "mc", LeaseFor: time.Minute, MaxTasks: 2}, now)
					if err != nil {
						failed.Store(err)
					}
					mu.Lock()
					won = append(won, cs...)
					mu.Unlock()
				}()
			}
			close(start)
			wg.Wait()
			if err, _ := failed.Load().(error); err != nil {
				t.Fatalf("round %d: claim: %v", round, err)
			}
			if len(won) > limit {
				t.Fatalf("round %d: %d tasks started at once, max_concurrency is %d", round, len(won), limit)
			}
			if len(won) == 0 {
				t.Fatalf("round %d: nothing claimed with %d tasks left and every slot free", round, remaining)
			}
			d, _ := e.decls.Get(ctx, "mc", now)
			if c, err := e.q.CountQueue(ctx, d.Settings(), now); err != nil || *c.Running != len(won) {
				t.Fatalf("round %d: %v slots held for %d running tasks (%v)", round, c.Running, len(won), err)
			}
			for _, c := range won {
				if _, err := e.q.Complete(ctx, queue.CompleteRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token}, now); err != nil {
					t.Fatal(err)
				}
			}
			remaining -= len(won)
			if round > 20 {
				t.Fatal("the queue does not drain")
			}
		}
		d, _ := e.decls.Get(ctx, "mc", t0)
		if c, _ := e.q.CountQueue(ctx, d.Settings(), t0); *c.Running != 0 {
			t.Fatalf("%d slots held after every task completed", *c.Running)
		}
	})

	t.Run("workers_claiming_and_completing_at_once_never_run_more_than_max_concurrency", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		const limit, tasks = 2, 24
		e.declare(queues.Declaration{Name: "steady", MaxConcurrency: limit}, t0)
		for i := 0; i < tasks; i++ {
			e.submit(queue.SubmitRequest{Queue: "steady"}, t0)
		}
		var running, most, done atomic.Int32
		var wg sync.WaitGroup
		errs := make(chan error, Workers)
		for w := 0; w < Workers/2; w++ {
			q := e.reopen() // each worker its own process, with its own cached listings
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; done.Load() < tasks && i < 40*tasks; i++ {
					now := t0.Add(time.Duration(i) * 100 * time.Millisecond)
					cs, err := q.Claim(ctx, queue.ClaimRequest{Queue: "steady", LeaseFor: time.Hour}, now)
					if err != nil {
						errs <- err
						return
					}
					for _, c := range cs {
						// Counted from the claim until before the complete: a
						// window inside the one the slot is held in, so more
						// than max_concurrency counted at once is a real breach.
						n := running.Add(1)
						for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
						}
						time.Sleep(time.Millisecond) // the work (wall time; the clock is now)
						running.Add(-1)
						if _, err := q.Complete(ctx, queue.CompleteRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token}, now); err != nil {
							errs <- err
							return
						}
						done.Add(1)
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if done.Load() != tasks {
			t.Fatalf("%d of %d tasks done", done.Load(), tasks)
		}
		if m := most.Load(); m > limit {
			t.Fatalf("%d tasks ran at once, max_concurrency is %d", m, limit)
		}
	})

	t.Run("every_way_out_of_running_gives_the_slot_back", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		e.declare(queues.Declaration{Name: "one", MaxConcurrency: 1}, t0)
		for i := 0; i < 5; i++ {
			e.submit(queue.SubmitRequest{Queue: "one", MaxAttempts: 5}, t0)
		}
		next := func(now time.Time) queue.Claimed {
			t.Helper()
			cs := e.claim(queue.ClaimRequest{Queue: "one", LeaseFor: time.Minute}, now)
			if len(cs) != 1 {
				t.Fatalf("claim at %s: %d tasks, want 1", now.Format(time.TimeOnly), len(cs))
			}
			if more := e.claim(queue.ClaimRequest{Queue: "one"}, now); len(more) != 0 {
				t.Fatalf("a second task started with max_concurrency 1")
			}
			return cs[0]
		}
		c := next(t0)
		if _, err := e.q.Fail(ctx, queue.FailRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token, Error: "x", Retryable: ptrBool(true)}, t0); err != nil {
			t.Fatal(err)
		}
		c = next(t0)
		if _, err := e.q.Reschedule(ctx, queue.RescheduleRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token, Delay: *check.Dur("1h")}, t0); err != nil {
			t.Fatal(err)
		}
		c = next(t0)
		if _, err := e.q.Cancel(ctx, c.Task.Ref(), t0); err != nil {
			t.Fatal(err)
		}
		if _, err := e.q.AckCancel(ctx, queue.AckCancelRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token}, t0); err != nil {
			t.Fatal(err)
		}
		c = next(t0)
		if _, err := e.q.Complete(ctx, queue.CompleteRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token}, t0); err != nil {
			t.Fatal(err)
		}
		next(t0)
	})

	t.Run("a_slot_of_a_dead_worker_is_taken_over_once_its_lease_lapses", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		e.declare(queues.Declaration{Name: "dead", MaxConcurrency: 2}, t0)
		for i := 0; i < 4; i++ {
			e.submit(queue.SubmitRequest{Queue: "dead"}, t0)
		}
		first := e.claim(queue.ClaimRequest{Queue: "dead", LeaseFor: time.Minute, MaxTasks: 4}, t0)
		if len(first) != 2 {
			t.Fatalf("claimed %d, want 2", len(first))
		}
		// One worker heartbeats, the other dies. Fresh processes find no
		// slot while the leases are valid, and the dead one's after.
		hb, err := e.q.Heartbeat(ctx, queue.HeartbeatRequest{ID: first[0].Task.Ref(), LeaseToken: first[0].Lease.Token, LeaseFor: 10 * time.Minute}, t0.Add(50*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if cs, err := e.reopen().Claim(ctx, queue.ClaimRequest{Queue: "dead", LeaseFor: time.Minute, MaxTasks: 4}, t0.Add(30*time.Second)); err != nil || len(cs) != 0 {
			t.Fatalf("claim while both leases are valid: %d tasks, %v", len(cs), err)
		}
		later := t0.Add(time.Minute + time.Second)
		got, err := e.reopen().Claim(ctx, queue.ClaimRequest{Queue: "dead", LeaseFor: time.Minute, MaxTasks: 4}, later)
		if err != nil || len(got) != 1 {
			t.Fatalf("claim after one lease lapsed: %d tasks, %v; want 1 (the other is heartbeating)", len(got), err)
		}
		// The heartbeating task still holds its slot and gives it back.
		if _, err := e.q.Complete(ctx, queue.CompleteRequest{ID: hb.Task.Ref(), LeaseToken: hb.Lease.Token}, later); err != nil {
			t.Fatal(err)
		}
		if cs := e.claim(queue.ClaimRequest{Queue: "dead", LeaseFor: time.Minute, MaxTasks: 4}, later); len(cs) != 1 {
			t.Fatalf("claim after the complete: %d tasks, want 1", len(cs))
		}
		if keys := e.keys("q/dead/slots/"); len(keys) != 2 {
			t.Fatalf("slots %v, want 2", keys)
		}
	})

	t.Run("max_concurrency_costs_a_list_and_two_puts_per_task", func(t *testing.T) {
		t.Parallel()
		perTask := func(mc int) store.Counts {
			t.Helper()
			c := store.NewCounting(f.New(t))
			q, decls := queues.New(c, queues.Options{})
			name := "cost"
			if _, _, err := decls.Declare(ctx, queues.Declaration{Name: name, MaxConcurrency: mc}, t0); err != nil {
				t.Fatal(err)
			}
			const n = 50
			c.Reset()
			for i := 0; i < n; i++ {
				// 20 ms apart: a LIST serves the claims of a second, as in
				// a busy worker process (Options.ListCacheFor).
				now := t0.Add(time.Duration(i) * 20 * time.Millisecond)
				if _, err := q.Submit(ctx, queue.SubmitRequest{TaskType: "t", Queue: name}, now); err != nil {
					t.Fatal(err)
				}
				cs, err := q.Claim(ctx, queue.ClaimRequest{Queue: name, LeaseFor: time.Minute}, now)
				if err != nil || len(cs) != 1 {
					t.Fatalf("claim: %d %v", len(cs), err)
				}
				if _, err := q.Complete(ctx, queue.CompleteRequest{ID: cs[0].Task.Ref(), LeaseToken: cs[0].Lease.Token}, now); err != nil {
					t.Fatal(err)
				}
			}
			return c.Counts()
		}
		const n = 50
		without, with := perTask(0), perTask(5)
		per := func(c store.Counts) string {
			return fmt.Sprintf("put=%.2f list=%.2f get=%.2f delete=%.2f", float64(c.Put)/n, float64(c.List)/n, float64(c.Get)/n, float64(c.Delete)/n)
		}
		t.Logf("requests per task (submit, claim, complete): without max_concurrency %s; with %s", per(without), per(with))
		if d := with.Sub(without); d.Put != 2*n || d.List > n/10 || d.Delete != 0 || d.Get != 0 {
			t.Errorf("max_concurrency adds %s per task, want 2 PUTs, an amortised LIST, no GET or DELETE", per(d))
		}
	})
}

func ptrBool(b bool) *bool { return &b }

// The concurrency slot of a task of a queue with max_concurrency
// (side_slot.go).
func runSideSlot(t *testing.T, f Factory) {
	t.Run("a_slot_is_held_by_its_task_while_it_runs_and_free_once_its_lease_ends", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		one, _ := e.oneSlotQueue(2)
		c := e.claim(one, t0)[0]
		e.wantHolders("one", c.Task.ID)
		if cs := e.claim(one, t0); len(cs) != 0 {
			t.Fatalf("claimed %d tasks past max_concurrency", len(cs))
		}
		if _, err := e.q.Complete(ctx, queue.CompleteRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token}, t0); err != nil {
			t.Fatal(err)
		}
		e.wantHolders("one")
		next := e.claim(one, t0)
		if len(next) != 1 || next[0].Task.ID == c.Task.ID {
			t.Fatalf("claimed %d tasks after the complete, want the other one", len(next))
		}
		e.wantHolders("one", next[0].Task.ID)
	})

	t.Run("a_claim_whose_record_write_fails_after_its_slot_landed_leaves_the_task_pending_and_the_slot_taken_over_after_its_lease", func(t *testing.T) {
		t.Parallel()
		e, fs := newLossEnv(t, f)
		one, tasks := e.oneSlotQueue(1)
		a := tasks[0]
		recordWriteFails(t, e, fs, "one", a.Ref(), func() error {
			_, err := e.q.Claim(ctx, one, t0)
			return err
		})
		wantStatus(t, e.get(a.Ref()), queue.StatusPending)
		e.wantHolders("one", a.ID)
		// Held as far as anyone can tell until the lease it names ends...
		if cs, err := e.reopen().Claim(ctx, one, t0.Add(30*time.Second)); err != nil || len(cs) != 0 {
			t.Fatalf("claim during the slot's lease: %d tasks, %v", len(cs), err)
		}
		// ...then taken over.
		cs, err := e.reopen().Claim(ctx, one, t0.Add(2*time.Minute))
		if err != nil || len(cs) != 1 || cs[0].Task.ID != a.ID {
			t.Fatalf("claim after the slot's lease: %d tasks, %v", len(cs), err)
		}
		e.wantHolders("one", a.ID)
		wantKeyCount(t, "slots", e.keys("q/one/slots/"), 1)
	})

	t.Run("a_claim_whose_slot_answer_was_lost_holds_one_slot_and_frees_it_on_complete", func(t *testing.T) {
		t.Parallel()
		e, fs := newLossEnv(t, f)
		one, _ := e.oneSlotQueue(2)
		lose(fs, storefault.OpPutIfAbsent, "q/one/slots/")
		cs, err := e.q.Claim(ctx, one, t0)
		if err != nil || len(cs) != 1 {
			t.Fatalf("claim: %d tasks, %v", len(cs), err)
		}
		wantHits(t, fs, 1)
		e.wantHolders("one", cs[0].Task.ID)
		if _, err := e.q.Complete(ctx, queue.CompleteRequest{ID: cs[0].Task.Ref(), LeaseToken: cs[0].Lease.Token}, t0); err != nil {
			t.Fatal(err)
		}
		if got := e.claim(one, t0); len(got) != 1 {
			t.Fatalf("claim after the complete: %d tasks", len(got))
		}
	})

	t.Run("a_slot_takeover_whose_answer_was_lost_is_recognised", func(t *testing.T) {
		t.Parallel()
		e, fs := newLossEnv(t, f)
		e.declare(queues.Declaration{Name: "one", MaxConcurrency: 1}, t0)
		e.submit(queue.SubmitRequest{Queue: "one"}, t0)
		e.submit(queue.SubmitRequest{Queue: "one"}, t0)
		if cs := e.claim(queue.ClaimRequest{Queue: "one", LeaseFor: time.Minute}, t0); len(cs) != 1 {
			t.Fatalf("claimed %d", len(cs))
		}
		// Its worker dies; after the lease the slot is taken over, and
		// that write's answer is lost.
		later := t0.Add(time.Minute + time.Second)
		lose(fs, storefault.OpPutIfMatch, "q/one/slots/")
		cs, err := e.reopen().Claim(ctx, queue.ClaimRequest{Queue: "one", LeaseFor: time.Minute}, later)
		if err != nil || len(cs) != 1 {
			t.Fatalf("claim: %d tasks, %v", len(cs), err)
		}
		wantHits(t, fs, 1)
		if _, err := e.q.Complete(ctx, queue.CompleteRequest{ID: cs[0].Task.Ref(), LeaseToken: cs[0].Lease.Token}, later); err != nil {
			t.Fatal(err)
		}
		// The slot was freed by the complete: the next task runs at once.
		if got := e.claim(queue.ClaimRequest{Queue: "one", LeaseFor: time.Minute}, later); len(got) != 1 {
			t.Fatalf("claim after the complete: %d tasks", len(got))
		}
	})

	t.Run("two_claimers_racing_for_one_task_under_max_concurrency_leave_one_winner_holding_one_slot", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		e.declare(queues.Declaration{Name: "two", MaxConcurrency: 2}, t0)
		a := e.submit(queue.SubmitRequest{Queue: "two"}, t0)
		p1, p2 := e.cached(a.Ref()), e.cached(a.Ref())
		req := queue.ClaimRequest{Queue: "two", LeaseFor: time.Minute}
		got := make([][]queue.Claimed, 2)
		errs := race(
			func() (err error) { got[0], err = p1.Claim(ctx, req, t0); return err },
			func() (err error) { got[1], err = p2.Claim(ctx, req, t0); return err },
		)
		if errs[0] != nil || errs[1] != nil {
			t.Fatalf("claims: %v", errs)
		}
		if n := len(got[0]) + len(got[1]); n != 1 {
			t.Fatalf("%d claims won the task, want 1", n)
		}
		won := append(got[0], got[1]...)[0]
		e.wantHolders("two", a.ID)
		if _, err := e.q.Complete(ctx, queue.CompleteRequest{ID: won.Task.Ref(), LeaseToken: won.Lease.Token}, t0); err != nil {
			t.Fatal(err)
		}
		e.wantHolders("two")
	})
}

// oneSlotQueue declares queue "one" with max_concurrency 1, submits n
// tasks to it at t0, and returns a claim of it with a one-minute lease.
func (e *env) oneSlotQueue(n int) (queue.ClaimRequest, []queue.Task) {
	e.t.Helper()
	e.declare(queues.Declaration{Name: "one", MaxConcurrency: 1}, t0)
	var tasks []queue.Task
	for range n {
		tasks = append(tasks, e.submit(queue.SubmitRequest{Queue: "one"}, t0))
	}
	return queue.ClaimRequest{Queue: "one", LeaseFor: time.Minute}, tasks
}
