package queuetest

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/internal/check"
	"github.com/s3q/s3q/shared/queue"
)

// Workers is the number of concurrent claimers in the race cases.
const Workers = 16

func runRace(t *testing.T, f Factory) {
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

	t.Run("sixteen_workers_complete_every_task_exactly_once", func(t *testing.T) {
		e := newEnv(t, f)
		n := 300
		if f.Real {
			n = 200
		}
		for i := 0; i < n; i++ {
			req := queue.SubmitRequest{TaskType: "job", Input: jsonOf(i)}
			if i%3 == 0 {
				req.TTL = check.Dur("1h")
			}
			e.submit(req, t0)
		}
		// Half the workers are processes of their own, half share one
		// Queue (one process running 8 claim loops).
		shared := e.reopen()
		// A clock the test controls: it moves a second whenever a worker
		// finds nothing (so cached listings refresh), and never while a
		// worker is between its claim and its complete (they hold held),
		// so no machine, however slow, can lapse a lease in use.
		var elapsed atomic.Int64
		var held sync.RWMutex
		clock := func() time.Time { return t0.Add(time.Duration(elapsed.Load())) }

		var mu sync.Mutex
		holder := map[string]queue.Lease{} // task -> current lease
		completed := map[string]int{}
		var violations []string
		var done atomic.Int32
		var wg sync.WaitGroup
		errs := make(chan error, Workers)
		for w := 0; w < Workers; w++ {
			q := shared
			if w%2 == 0 {
				q = e.reopen()
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				// A guard against a livelock, not a timing check.
				deadline := time.Now().Add(5 * time.Minute)
				for int(done.Load()) < n {
					if time.Now().After(deadline) {
						errs <- fmt.Errorf("worker gave up with %d of %d done", done.Load(), n)
						return
					}
					held.RLock()
					now := clock()
					cs, err := q.Claim(ctx, queue.ClaimRequest{LeaseFor: 10 * time.Minute, WorkerID: fmt.Sprint(w)}, now)
					if err != nil {
						held.RUnlock()
						errs <- err
						return
					}
					for _, c := range cs {
						mu.Lock()
						if prev, ok := holder[c.Task.ID]; ok && now.Before(prev.ExpiresAt) {
							violations = append(violations, fmt.Sprintf("task %s claimed while lease %s was valid", c.Task.ID, prev.Token))
						}
						holder[c.Task.ID] = c.Lease
						mu.Unlock()
						_, err := q.Complete(ctx, queue.CompleteRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token, Output: jsonOf(w)}, clock())
						mu.Lock()
						if err == nil {
							completed[c.Task.ID]++
							delete(holder, c.Task.ID)
							done.Add(1)
						} else {
							violations = append(violations, fmt.Sprintf("complete %s: %v", c.Task.ID, err))
						}
						mu.Unlock()
					}
					held.RUnlock()
					if len(cs) == 0 {
						held.Lock()
						elapsed.Add(int64(time.Second))
						held.Unlock()
						time.Sleep(time.Millisecond)
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if len(violations) > 0 {
			t.Fatalf("%d violations, first: %s", len(violations), violations[0])
		}
		if len(completed) != n {
			t.Fatalf("%d tasks completed, want %d", len(completed), n)
		}
		for id, c := range completed {
			if c != 1 {
				t.Fatalf("task %s completed %d times", id, c)
			}
			if got := e.get(id); got.Status != queue.StatusCompleted || got.Attempt != 1 {
				t.Fatalf("task %s: status %s attempt %d", id, got.Status, got.Attempt)
			}
		}
		if m := e.markers(); len(m) != 0 {
			t.Fatalf("%d markers left, e.g. %s", len(m), m[0])
		}
	})

	t.Run("workers_that_crash_mid_lease_lose_no_task_and_none_runs_twice_under_a_valid_lease", func(t *testing.T) {
		e := newEnv(t, f)
		n := 120
		for i := 0; i < n; i++ {
			e.submit(queue.SubmitRequest{TaskType: "job", MaxAttempts: 50}, t0)
		}
		// The leases run on a clock the test controls, not the machine's:
		// it moves only when a worker finds nothing to claim, and never
		// while a worker is between its claim and its complete (they hold
		// held): a slow or loaded machine cannot lapse a lease a worker is
		// still using, and the abandoned ones still run out.
		var elapsed atomic.Int64 // since t0
		var held sync.RWMutex
		clock := func() time.Time { return t0.Add(time.Duration(elapsed.Load())) }
		const lease = 300 * time.Millisecond

		// Claims of each task in the order the store took them (attempt
		// order). Goroutines read the clock before they claim, so their
		// registration order here may differ; the attempt number does not.
		type claimRec struct {
			now     time.Time
			expires time.Time
		}
		var mu sync.Mutex
		claims := map[string]map[int]claimRec{}
		completed := map[string]int{}
		var violations []string
		var done, abandoned atomic.Int32
		var wg sync.WaitGroup
		errs := make(chan error, Workers)
		for w := 0; w < Workers; w++ {
			q := e.reopen()
			wg.Add(1)
			go func() {
				defer wg.Done()
				// A guard against a livelock, not a timing check: a loaded
				// 2-core machine with the race detector needs minutes.
				deadline := time.Now().Add(5 * time.Minute)
				for k := 0; int(done.Load()) < n; k++ {
					if time.Now().After(deadline) {
						errs <- fmt.Errorf("gave up with %d of %d done", done.Load(), n)
						return
					}
					held.RLock()
					now := clock()
					cs, err := q.Claim(ctx, queue.ClaimRequest{LeaseFor: lease, MaxTasks: 2}, now)
					if err != nil {
						held.RUnlock()
						errs <- err
						return
					}
					for i, c := range cs {
						mu.Lock()
						if claims[c.Task.ID] == nil {
							claims[c.Task.ID] = map[int]claimRec{}
						}
						if _, dup := claims[c.Task.ID][c.Task.Attempt]; dup {
							violations = append(violations, fmt.Sprintf("task %s: attempt %d claimed twice", c.Task.ID, c.Task.Attempt))
						}
						claims[c.Task.ID][c.Task.Attempt] = claimRec{now: now, expires: c.Lease.ExpiresAt}
						mu.Unlock()
						// Every third claim of a worker is abandoned: the worker "crashes".
						if (k+i+w)%3 == 0 {
							abandoned.Add(1)
							continue
						}
						_, err := q.Complete(ctx, queue.CompleteRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token}, clock())
						mu.Lock()
						switch {
						case err == nil:
							completed[c.Task.ID]++
							done.Add(1)
						case errors.Is(err, queue.ErrLeaseExpired) || errors.Is(err, queue.ErrLeaseMismatch) || errors.Is(err, queue.ErrNotRunning):
							// slow worker: its lease ran out and the task went to someone else
						default:
							violations = append(violations, fmt.Sprintf("complete %s: %v", c.Task.ID, err))
						}
						mu.Unlock()
					}
					held.RUnlock()
					if len(cs) == 0 {
						held.Lock()
						elapsed.Add(int64(lease / 3)) // let abandoned leases run out
						held.Unlock()
						time.Sleep(time.Millisecond) // and the others work
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		for id, byAttempt := range claims {
			for a, c := range byAttempt {
				if prev, ok := byAttempt[a-1]; ok && c.now.Before(prev.expires) {
					violations = append(violations, fmt.Sprintf("task %s: attempt %d claimed at %s while attempt %d's lease ran to %s", id, a, c.now, a-1, prev.expires))
				}
			}
		}
		if len(violations) > 0 {
			t.Fatalf("%d violations, first: %s", len(violations), violations[0])
		}
		if abandoned.Load() == 0 {
			t.Fatal("no claim was abandoned: the case tested nothing")
		}
		if len(completed) != n {
			t.Fatalf("%d tasks completed, want %d", len(completed), n)
		}
		for id, c := range completed {
			if c != 1 {
				t.Fatalf("task %s completed %d times", id, c)
			}
		}
	})

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
