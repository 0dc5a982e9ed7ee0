package queuetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/internal/check"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/store"
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

// reopenClaimOne claims one task at now in a fresh process.
func (e *env) reopenClaimOne(now time.Time) queue.Claimed {
	e.t.Helper()
	cs, err := e.reopen().Claim(ctx, queue.ClaimRequest{}, now)
	if err != nil || len(cs) != 1 {
		e.t.Fatalf("claim at %s: %d tasks, %v", now, len(cs), err)
	}
	return cs[0]
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
