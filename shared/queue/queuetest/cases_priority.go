package queuetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/internal/check"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/store"
	"github.com/s3q/s3q/shared/store/storefault"
)

// runPriority: among due tasks a claim takes the highest priority first
// (1 before 5), within one priority the order without priorities, and a
// task not yet due waits whatever its priority.
func runPriority(t *testing.T, f Factory) {
	t.Run("a_claim_takes_the_highest_priority_due_task_first_and_keeps_the_order_within_one", func(t *testing.T) {
		t.Parallel()
		// Each claim in a fresh process (its first LIST reads every
		// priority), then all of them in one (its listing serves them).
		for _, fresh := range []bool{true, false} {
			e := newEnv(t, f)
			// Submitted oldest first; the expected claim order is by
			// priority, then deadline before none, earliest deadline, oldest.
			type sub struct {
				name string
				prio int
				ttl  string
			}
			subs := []sub{
				{"low-old", 5, ""}, {"default-old", 0, ""}, {"default-ttl", 0, "2h"},
				{"high-old", 1, ""}, {"two", 2, ""}, {"high-ttl-late", 1, "3h"},
				{"four", 4, "1h"}, {"high-new", 1, ""}, {"high-ttl-early", 1, "2h"},
				{"low-new", 5, ""}, {"default-new", 3, ""},
			}
			ids := map[string]string{}
			for i, s := range subs {
				req := queue.SubmitRequest{Priority: s.prio, Input: jsonOf(s.name)}
				if s.ttl != "" {
					req.TTL = check.Dur(s.ttl)
				}
				task := e.submit(req, t0.Add(time.Duration(i)*time.Second))
				want := s.prio
				if want == 0 {
					want = queue.DefaultPriority
				}
				if task.Priority != want {
					t.Fatalf("%s: priority %d, want %d", s.name, task.Priority, want)
				}
				ids[task.ID] = s.name
			}
			want := []string{"high-ttl-early", "high-ttl-late", "high-old", "high-new", "two",
				"default-ttl", "default-old", "default-new", "four", "low-old", "low-new"}
			now := t0.Add(time.Minute)
			one := e.reopen()
			for i, w := range want {
				q := one
				if fresh {
					q = e.reopen()
				}
				cs, err := q.Claim(ctx, queue.ClaimRequest{}, now)
				if err != nil || len(cs) != 1 {
					t.Fatalf("claim %d: %d tasks, %v", i, len(cs), err)
				}
				if got := ids[cs[0].Task.ID]; got != w {
					t.Fatalf("claim %d (fresh process %v) took %s, want %s", i, fresh, got, w)
				}
			}
			e.claimNone(now)
		}
	})

	t.Run("a_claim_of_many_takes_them_by_priority", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		for i := range 6 {
			e.submit(queue.SubmitRequest{Priority: 5 - i%5, Input: jsonOf(i)}, t0.Add(time.Duration(i)*time.Second))
		}
		cs := e.claim(queue.ClaimRequest{MaxTasks: 6}, t0.Add(time.Minute))
		var got []int
		for _, c := range cs {
			got = append(got, c.Task.Priority)
		}
		if fmt.Sprint(got) != "[1 2 3 4 5 5]" {
			t.Fatalf("claimed priorities %v, want [1 2 3 4 5 5]", got)
		}
	})

	t.Run("a_task_not_yet_due_waits_whatever_its_priority", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		later := t0.Add(time.Hour)
		high := e.submit(queue.SubmitRequest{Priority: 1, ScheduleAt: &later}, t0)
		highTTL := e.submit(queue.SubmitRequest{Priority: 1, ScheduleAt: &later, TTL: check.Dur("2h")}, t0)
		low := e.submit(queue.SubmitRequest{Priority: 5}, t0)
		if c := e.claim(queue.ClaimRequest{LeaseFor: 2 * time.Hour}, t0.Add(time.Minute)); len(c) != 1 || c[0].Task.ID != low.ID {
			t.Fatalf("claimed %+v, want the due low-priority task", c)
		}
		e.claimNone(later.Add(-time.Microsecond))
		got := map[string]bool{}
		for _, c := range e.claim(queue.ClaimRequest{MaxTasks: 5}, later) {
			got[c.Task.ID] = true
		}
		if len(got) != 2 || !got[high.ID] || !got[highTTL.ID] {
			t.Fatalf("at their time claimed %v, want both high-priority tasks", got)
		}
	})

	t.Run("a_retried_task_keeps_its_priority_and_goes_first_when_due_again", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		high := e.submit(queue.SubmitRequest{Priority: 1}, t0)
		c := e.claimOne(t0)
		if c.Task.ID != high.ID {
			t.Fatal("wrong task")
		}
		for i := range 3 {
			e.submit(queue.SubmitRequest{Input: jsonOf(i)}, t0.Add(time.Second))
		}
		now := t0.Add(2 * time.Second)
		got, err := e.q.Fail(ctx, queue.FailRequest{ID: high.Ref(), LeaseToken: c.Lease.Token, Error: "boom"}, now)
		if err != nil || got.Status != queue.StatusPending || got.Priority != 1 {
			t.Fatalf("after fail: %s priority %d, %v", got.Status, got.Priority, err)
		}
		if !strings.Contains(got.IndexKey, "/index/ready/-p1/") {
			t.Fatalf("retried task's marker %s is not in priority 1's index", got.IndexKey)
		}
		// Before its backoff ends the default tasks go; once due it goes first.
		if c := e.claimOne(now); c.Task.Priority != queue.DefaultPriority {
			t.Fatalf("claimed priority %d before the retry was due", c.Task.Priority)
		}
		if c := e.reopenClaimOne(got.AvailableAt); c.Task.ID != high.ID || c.Task.Attempt != 2 {
			t.Fatalf("claimed %s attempt %d when the retry was due, want the high-priority task", c.Task.ID, c.Task.Attempt)
		}
	})

	t.Run("an_empty_claim_and_a_claim_over_every_priority_cost_one_list", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		c := store.NewCounting(e.s)
		if cs, err := e.open(c).Claim(ctx, queue.ClaimRequest{}, t0); err != nil || len(cs) != 0 {
			t.Fatalf("claimed %d, %v", len(cs), err)
		}
		if n := c.Counts().List; n != 1 {
			t.Fatalf("an empty claim made %d LISTs, want 1", n)
		}
		for p := queue.MinPriority; p <= queue.MaxPriority; p++ {
			e.submit(queue.SubmitRequest{Priority: p}, t0)
			e.submit(queue.SubmitRequest{Priority: p, TTL: check.Dur("1h")}, t0)
		}
		c = store.NewCounting(e.s)
		q := e.open(c)
		cs, err := q.Claim(ctx, queue.ClaimRequest{MaxTasks: 1}, t0.Add(time.Second))
		if err != nil || len(cs) != 1 || cs[0].Task.Priority != queue.MinPriority {
			t.Fatalf("claimed %+v, %v", cs, err)
		}
		if n := c.Counts().List; n != 1 {
			t.Fatalf("a claim over ten sparse indexes made %d LISTs, want 1", n)
		}
		// The listing serves the next claims of the process.
		for range 9 {
			if _, err := q.Claim(ctx, queue.ClaimRequest{}, t0.Add(time.Second)); err != nil {
				t.Fatal(err)
			}
		}
		if n := c.Counts().List; n != 1 {
			t.Fatalf("ten claims made %d LISTs, want 1", n)
		}
	})

	t.Run("counts_list_and_the_sweep_see_every_priority", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		var expiring []string
		for p := queue.MinPriority; p <= queue.MaxPriority; p++ {
			e.submit(queue.SubmitRequest{Priority: p}, t0)
			expiring = append(expiring, e.submit(queue.SubmitRequest{Priority: p, TTL: check.Dur("1m")}, t0).ID)
		}
		res, err := e.q.List(ctx, queue.ListRequest{Queue: queue.DefaultQueue, Status: queue.StatusPending, Limit: 100})
		if err != nil || len(res.Tasks) != 10 {
			t.Fatalf("listed %d pending, %v; want 10", len(res.Tasks), err)
		}
		rep, err := e.q.Sweep(ctx, t0.Add(2*time.Minute), queue.SweepOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range expiring {
			if got := e.get(id); got.Status != queue.StatusExpired {
				t.Fatalf("task %s (priority %d) is %s after the sweep, want expired (%+v)", id, got.Priority, got.Status, rep)
			}
		}
	})

	t.Run("a_priority_out_of_range_is_refused_naming_the_field_and_nothing_is_written", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		for _, p := range []int{-1, 6, 1000} {
			_, err := e.q.Submit(ctx, queue.SubmitRequest{TaskType: "x", Priority: p}, t0)
			var ve *queue.ValidationError
			if !errors.As(err, &ve) || ve.Field != "priority" {
				t.Fatalf("priority %d: %v, want a validation error naming priority", p, err)
			}
		}
		_, _, err := e.decls.Declare(ctx, queues.Declaration{Name: "bad", Priority: 9}, t0)
		var ve *queue.ValidationError
		if !errors.As(err, &ve) || ve.Field != "priority" {
			t.Fatalf("declaring priority 9: %v", err)
		}
		if keys := e.allKeys(); len(keys) > 1 { // s3q.json at most
			t.Fatalf("refused requests wrote %v", keys)
		}
	})

	t.Run("a_queue_default_priority_applies_to_submits_that_give_none", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		if _, _, err := e.decls.Declare(ctx, queues.Declaration{Name: "urgent", Priority: 2}, t0); err != nil {
			t.Fatal(err)
		}
		if got := e.submit(queue.SubmitRequest{Queue: "urgent"}, t0); got.Priority != 2 {
			t.Fatalf("priority %d, want the queue's 2", got.Priority)
		}
		if got := e.submit(queue.SubmitRequest{Queue: "urgent", Priority: 4}, t0); got.Priority != 4 {
			t.Fatalf("priority %d, want the request's 4", got.Priority)
		}
	})

	t.Run("racing_claimers_take_no_lower_priority_task_while_a_higher_one_is_pending", func(t *testing.T) {
		e := newEnv(t, f)
		const high, low = 12, 12
		var highIDs []string
		for i := range high + low {
			p := 1
			if i%2 == 1 {
				p = 5
			}
			task := e.submit(queue.SubmitRequest{Priority: p, Input: jsonOf(i)}, t0.Add(time.Duration(i)*time.Millisecond))
			if p == 1 {
				highIDs = append(highIDs, task.ID)
			}
		}
		now := t0.Add(time.Second)
		var mu sync.Mutex
		var errs []error
		claimed := 0
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range Workers {
			q := e.reopen() // each claimer its own process
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for {
					cs, err := q.Claim(ctx, queue.ClaimRequest{LeaseFor: time.Minute}, now)
					if err != nil {
						mu.Lock()
						errs = append(errs, err)
						mu.Unlock()
						return
					}
					if len(cs) == 0 {
						return
					}
					if cs[0].Task.Priority == 5 {
						// Every high-priority task was started before this claim ended.
						for _, id := range highIDs {
							if st := e.storedStatus(id); st != queue.StatusRunning {
								mu.Lock()
								errs = append(errs, fmt.Errorf("a priority-5 task was claimed while %s was %s", id, st))
								mu.Unlock()
							}
						}
					}
					mu.Lock()
					claimed++
					mu.Unlock()
				}
			}()
		}
		close(start)
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		if claimed != high+low {
			t.Fatalf("claimed %d tasks, want %d", claimed, high+low)
		}
	})
}

// storedStatus reads a task's status from its stored record (no cache).
func (e *env) storedStatus(id string) queue.Status {
	obj, err := e.s.Get(ctx, queue.TaskKey(queue.DefaultQueue, id))
	if err != nil {
		return queue.Status("unreadable: " + err.Error())
	}
	var rec struct {
		Status queue.Status `json:"status"`
	}
	if err := json.Unmarshal(obj.Body, &rec); err != nil {
		return queue.Status("undecodable")
	}
	return rec.Status
}

// runPriorityAttack: priorities under a careless or hostile caller, racing
// claimers, lost answers and stray markers. A task's priority never
// changes (a retry, a lapsed lease, a retry of a dead letter and a change
// of the queue's default leave it), so a task never moves between the
// priority indexes; what can go wrong is a listing of ten indexes cut
// short, a marker in the wrong folder, and claimers racing across them.
func runPriorityAttack(t *testing.T, f Factory) {
	scale := func(n, small int) int {
		if f.Real {
			return small
		}
		return n
	}
	backlog, page := scale(1500, 300), scale(store.MaxListLimit, 100)
	// markersIn writes backlog markers of tasks not yet available into
	// the index folder dir ("deadline/-p1/0/", "ready/-p1/0/", ...):
	// a full page and more that a claim must read past.
	markersIn := func(e *env, dir string) {
		keys := make([]string, backlog)
		for i := range keys {
			k := queue.DeadlineMarkerKey(queue.DefaultQueue, 0, t0.Add(2*time.Hour+time.Duration(i)*time.Second), t0.Add(time.Hour), queue.NewID(t0))
			if strings.HasPrefix(dir, "ready/") {
				// ready/ keys are {available}_{id}: drop the expiry.
				base := k[strings.LastIndex(k, "/")+1:]
				k = k[:strings.LastIndex(k, "/")+1] + base[strings.Index(base, "_")+1:]
			}
			keys[i] = strings.Replace(k, "/index/deadline/0/", "/index/"+dir, 1)
		}
		e.putMany(keys)
	}

	for _, c := range []struct {
		backlog string // where the markers not yet due are
		due     queue.SubmitRequest
	}{
		{"deadline/-p1/0/", queue.SubmitRequest{Priority: 5}},
		{"deadline/-p1/0/", queue.SubmitRequest{Priority: 2, TTL: check.Dur("1h")}},
		{"deadline/-p2/0/", queue.SubmitRequest{}},
		{"deadline/0/", queue.SubmitRequest{Priority: 4}},
		{"ready/-p1/0/", queue.SubmitRequest{Priority: 2}},
		{"ready/-p4/0/", queue.SubmitRequest{Priority: 5}},
	} {
		name := fmt.Sprintf("a_full_page_of_markers_not_yet_due_in_%s_does_not_hide_a_due_task_of_priority_%d_ttl_%v",
			strings.NewReplacer("/", "_", "-", "").Replace(strings.TrimSuffix(c.backlog, "/0/")), max(c.due.Priority, queue.DefaultPriority*boolInt(c.due.Priority == 0)), c.due.TTL != nil)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, f)
			markersIn(e, c.backlog)
			for i, s := range []store.Store{e.s, smallPages{e.s, page}} {
				now := t0.Add(time.Duration(2*i+1) * time.Minute)
				due := e.submit(c.due, now)
				cs, err := e.open(s).Claim(ctx, queue.ClaimRequest{LeaseFor: 12 * time.Hour}, now)
				if err != nil || len(cs) != 1 || cs[0].Task.ID != due.ID {
					t.Fatalf("claim %d (pages of %d): %d tasks, %v; want the due task %s", i, page, len(cs), err, due.ID)
				}
			}
			// A warm process too: its listings of the indexes are kept.
			warm := e.open(smallPages{e.s, page})
			for k := range 3 {
				now := t0.Add(time.Duration(10+k) * time.Minute)
				due := e.submit(c.due, now)
				cs, err := warm.Claim(ctx, queue.ClaimRequest{LeaseFor: 12 * time.Hour}, now)
				if err != nil || len(cs) != 1 || cs[0].Task.ID != due.ID {
					t.Fatalf("warm claim %d: %d tasks, %v; want the due task %s", k, len(cs), err, due.ID)
				}
			}
		})
	}

	t.Run("a_stray_marker_in_another_priority_folder_neither_runs_its_task_twice_nor_stays", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		// A task of priority 5 with a copy of its marker in priority 1's
		// folder (a crash of a build that wrote one elsewhere, a hand
		// copy): the stray is read first, names no record's marker, and
		// the claim goes on to the task's own marker.
		low := e.submit(queue.SubmitRequest{Priority: 5}, t0)
		stray := strings.Replace(low.IndexKey, "/index/ready/-p5/", "/index/ready/-p1/", 1)
		if stray == low.IndexKey {
			t.Fatalf("marker %s is not in priority 5's folder", low.IndexKey)
		}
		e.put(stray)
		// And a task of priority 1 with a stray copy in the default folder.
		high := e.submit(queue.SubmitRequest{Priority: 1, TTL: check.Dur("3h")}, t0)
		stray2 := strings.Replace(high.IndexKey, "/index/deadline/-p1/", "/index/deadline/", 1)
		e.put(stray2)
		now := t0.Add(time.Second)
		got := map[string]int{}
		for range 4 {
			cs, err := e.reopen().Claim(ctx, queue.ClaimRequest{MaxTasks: 3, LeaseFor: time.Hour}, now)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range cs {
				got[c.Task.ID]++
			}
		}
		if got[low.ID] != 1 || got[high.ID] != 1 || len(got) != 2 {
			t.Fatalf("claims took %v, want each of %s and %s once", got, low.ID, high.ID)
		}
		// Once older than the grace, a claim deletes the strays.
		later := t0.Add(3 * time.Hour)
		for range 2 {
			if _, err := e.reopen().Claim(ctx, queue.ClaimRequest{}, later); err != nil {
				t.Fatal(err)
			}
		}
		for _, k := range []string{stray, stray2} {
			if slices.Contains(e.markers(), k) {
				t.Fatalf("the stray marker %s is still there at %s", k, later)
			}
		}
	})

	t.Run("a_queue_default_changed_mid_flight_moves_no_submitted_task", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		if _, _, err := e.decls.Declare(ctx, queues.Declaration{Name: "jobs", Priority: 2}, t0); err != nil {
			t.Fatal(err)
		}
		first := e.submit(queue.SubmitRequest{Queue: "jobs"}, t0)
		running := e.submit(queue.SubmitRequest{Queue: "jobs", Input: jsonOf("pending")}, t0.Add(time.Millisecond))
		c := e.claimFrom("jobs", t0)
		if c.Task.ID != first.ID {
			t.Fatalf("claimed %s, want %s", c.Task.ID, first.ID)
		}
		// The queue's default becomes 5 (and 1 after): nothing submitted moves.
		for i, p := range []int{5, 1} {
			if _, _, err := e.decls.Declare(ctx, queues.Declaration{Name: "jobs", Priority: p}, t0.Add(time.Duration(i+1)*time.Second)); err != nil {
				t.Fatal(err)
			}
		}
		now := t0.Add(5 * time.Second)
		later := e.submit(queue.SubmitRequest{Queue: "jobs"}, now)
		if later.Priority != 1 {
			t.Fatalf("a submit after the change got priority %d, want the new default 1", later.Priority)
		}
		failed, err := e.q.Fail(ctx, queue.FailRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token, Error: "boom"}, now)
		if err != nil || failed.Priority != 2 || !strings.Contains(failed.IndexKey, "/-p2/") {
			t.Fatalf("a retry after the change: priority %d marker %s, %v; want 2 kept", failed.Priority, failed.IndexKey, err)
		}
		if got := e.get("jobs/" + running.ID); got.Priority != 2 || !strings.Contains(got.IndexKey, "/-p2/") {
			t.Fatalf("a pending task after the change: priority %d marker %s; want 2 kept", got.Priority, got.IndexKey)
		}
		// Claim order: the new default's 1 first, then the two of 2.
		due := failed.AvailableAt
		var order []string
		for range 3 {
			order = append(order, e.claimFrom("jobs", due).Task.ID)
		}
		if order[0] != later.ID || !slices.Contains(order[1:], running.ID) || !slices.Contains(order[1:], first.ID) {
			t.Fatalf("claimed %v, want %s first", order, later.ID)
		}
		e.consistent()
	})

	t.Run("racing_claimers_with_retries_take_each_task_once_per_attempt_and_every_priority_in_order", func(t *testing.T) {
		e := newEnv(t, f)
		const n = 20
		prio := map[string]int{}
		for i := range n {
			p := queue.MinPriority + i%queue.MaxPriority
			task := e.submit(queue.SubmitRequest{Priority: p, MaxAttempts: 5, Input: jsonOf(i)}, t0.Add(time.Duration(i)*time.Millisecond))
			prio[task.ID] = p
		}
		// Round 1 fails every task (a retry, 10s backoff), round 2 (all due
		// again) completes them. In each round, every task is claimed
		// exactly once, and a claim of priority p ends after every task of
		// a higher priority was started in that round.
		workers := Workers
		if !f.Real {
			workers = 8
		}
		now := t0.Add(time.Second)
		for round := 1; round <= 2; round++ {
			var mu sync.Mutex
			var errs []error
			started := map[string]int{} // claims of each task this round
			var wg sync.WaitGroup
			gate := make(chan struct{})
			for range workers {
				q := e.reopen()
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-gate
					for {
						cs, err := q.Claim(ctx, queue.ClaimRequest{LeaseFor: time.Minute}, now)
						if err != nil || len(cs) == 0 {
							if err != nil {
								mu.Lock()
								errs = append(errs, err)
								mu.Unlock()
							}
							return
						}
						c := cs[0]
						mu.Lock()
						started[c.Task.ID]++
						p := c.Task.Priority
						if p != prio[c.Task.ID] {
							errs = append(errs, fmt.Errorf("task %s claimed with priority %d, submitted with %d", c.Task.ID, p, prio[c.Task.ID]))
						}
						// No task of a higher priority is pending and due
						// (a retried one waits out its backoff: not due).
						for id, ip := range prio {
							if ip < p && e.pendingDue(id, now) {
								errs = append(errs, fmt.Errorf("round %d: a priority-%d task was claimed while %s of priority %d was pending and due", round, p, id, ip))
							}
						}
						mu.Unlock()
						if round == 1 {
							_, err = q.Fail(ctx, queue.FailRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token, Error: "once more"}, now)
						} else {
							_, err = q.Complete(ctx, queue.CompleteRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token}, now)
						}
						if err != nil {
							mu.Lock()
							errs = append(errs, err)
							mu.Unlock()
						}
					}
				}()
			}
			close(gate)
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				t.Fatal(err)
			}
			for id := range prio {
				if started[id] != 1 {
					t.Fatalf("round %d: task %s was claimed %d times, want once", round, id, started[id])
				}
			}
			now = now.Add(time.Hour) // every retry due
		}
		for id := range prio {
			if got := e.get(id); got.Status != queue.StatusCompleted || got.Attempt != 2 {
				t.Fatalf("task %s ended %s after %d attempts, want completed after 2", id, got.Status, got.Attempt)
			}
		}
		e.consistent()
	})

	t.Run("a_lost_answer_of_a_prioritised_write_leaves_one_marker_in_the_right_folder", func(t *testing.T) {
		t.Parallel()
		for _, c := range []struct {
			what, op, under string
		}{
			{"the submit's marker", "", "/index/ready/-p1/"},
			{"the submit's record", storefault.OpPutIfAbsent, "/tasks/"},
			{"the retry's marker", "", "/index/deadline/-p1/"},
			{"the retry's record", storefault.OpPutIfMatch, "/tasks/"},
		} {
			e, fs := newLossEnv(t, f)
			retry := strings.HasPrefix(c.what, "the retry")
			req := queue.SubmitRequest{ID: queue.NewID(t0), TaskType: "x", Priority: 1}
			if retry {
				req.TTL = check.Dur("3h")
				e.submit(req, t0)
				cl := e.claimOne(t0)
				lose(fs, c.op, "q/default"+c.under)
				// (A marker's lost answer is recognised on a re-read: the
				// call may succeed.)
				_, _ = e.q.Fail(ctx, queue.FailRequest{ID: cl.Task.Ref(), LeaseToken: cl.Lease.Token, Error: "x"}, t0)
				wantHits(t, fs, 1)
				// The caller tries again; it finds the task retried or does it.
				_, err := e.q.Fail(ctx, queue.FailRequest{ID: cl.Task.Ref(), LeaseToken: cl.Lease.Token, Error: "x"}, t0)
				if err != nil && !errors.Is(err, queue.ErrNotRunning) && !errors.Is(err, queue.ErrLeaseMismatch) {
					t.Fatalf("%s: the fail again: %v", c.what, err)
				}
			} else {
				lose(fs, c.op, "q/default"+c.under)
				_, _ = e.q.Submit(ctx, req, t0)
				wantHits(t, fs, 1)
				if _, err := e.q.Submit(ctx, req, t0); err != nil {
					t.Fatalf("%s: the submit again: %v", c.what, err)
				}
			}
			// Whatever the write that was lost, a claim at the task's time
			// takes it once, and a sweep leaves the bucket consistent.
			if _, err := e.q.Sweep(ctx, t0.Add(time.Minute), queue.SweepOptions{}); err != nil {
				t.Fatal(err)
			}
			task := e.get(req.ID)
			if task.Status != queue.StatusPending || task.Priority != 1 || !strings.Contains(task.IndexKey, "/-p1/") {
				t.Fatalf("%s: task %s priority %d marker %q", c.what, task.Status, task.Priority, task.IndexKey)
			}
			var ms []string
			for _, k := range e.markers() {
				if strings.HasSuffix(k, req.ID) {
					ms = append(ms, k)
				}
			}
			if len(ms) != 1 || ms[0] != task.IndexKey {
				t.Fatalf("%s: markers of the task %v, want only %s", c.what, ms, task.IndexKey)
			}
			e.consistent()
			cs := e.claim(queue.ClaimRequest{MaxTasks: 5}, task.AvailableAt)
			if len(cs) != 1 || cs[0].Task.ID != req.ID {
				t.Fatalf("%s: claimed %d tasks, want the task once", c.what, len(cs))
			}
		}
	})
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// claimFrom claims one task of queue name at now.
func (e *env) claimFrom(name string, now time.Time) queue.Claimed {
	e.t.Helper()
	cs := e.claim(queue.ClaimRequest{Queue: name}, now)
	if len(cs) != 1 {
		e.t.Fatalf("claim from %s at %s: %d tasks, want 1", name, now.Format(time.RFC3339), len(cs))
	}
	return cs[0]
}

// pendingDue reports whether a task's stored record (no cache) is
// pending and due at now.
func (e *env) pendingDue(id string, now time.Time) bool {
	obj, err := e.s.Get(ctx, queue.TaskKey(queue.DefaultQueue, id))
	if err != nil {
		return false
	}
	var rec queue.Task
	if err := json.Unmarshal(obj.Body, &rec); err != nil {
		return false
	}
	return rec.Status == queue.StatusPending && !rec.AvailableAt.After(now)
}
