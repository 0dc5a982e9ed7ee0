package queuetest

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/internal/check"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/store"
)

// The attack race cases: two transitions of one task, or of tasks
// sharing a side record, interleaved at the worst point: the second runs
// whole in the middle of the first, between its side records' writes and
// its record's compare-and-swap (or just before its first write). The
// interleaving is forced by a store that runs a hook before a chosen
// write, so each case is deterministic; the same pairs also race freely.

// writeHook runs hook once, before the first write whose key contains
// match (and, when op is set, of that kind: "put" for any put, "delete").
type writeHook struct {
	store.Store
	match, op string

	mu   sync.Mutex
	hook func()
}

func (h *writeHook) fire(op, key string) {
	if !strings.Contains(key, h.match) || (h.op != "" && h.op != op) {
		return
	}
	h.mu.Lock()
	fn := h.hook
	h.hook = nil
	h.mu.Unlock()
	if fn != nil {
		fn()
	}
}

// fired reports whether the hook ran.
func (h *writeHook) fired() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.hook == nil
}

func (h *writeHook) PutIfAbsent(ctx context.Context, key string, body []byte, opts ...store.PutOption) (string, error) {
	h.fire("put", key)
	return h.Store.PutIfAbsent(ctx, key, body, opts...)
}

func (h *writeHook) PutIfMatch(ctx context.Context, key string, body []byte, etag string, opts ...store.PutOption) (string, error) {
	h.fire("put", key)
	return h.Store.PutIfMatch(ctx, key, body, etag, opts...)
}

func (h *writeHook) Put(ctx context.Context, key string, body []byte, opts ...store.PutOption) (string, error) {
	h.fire("put", key)
	return h.Store.Put(ctx, key, body, opts...)
}

func (h *writeHook) Delete(ctx context.Context, key string) error {
	h.fire("delete", key)
	return h.Store.Delete(ctx, key)
}

// interleave returns a fresh process whose first write matching match
// (of kind op, "" for any) first runs fn, and the hook's store.
func (e *env) interleave(match, op string, fn func()) (*queue.Queue, *writeHook) {
	h := &writeHook{Store: e.s, match: match, op: op, hook: fn}
	return e.open(h), h
}

func wantFired(t testing.TB, h *writeHook) {
	t.Helper()
	if !h.fired() {
		t.Fatalf("no write matched %q: the interleaving did not happen", h.match)
	}
}

func runAttackRace(t *testing.T, f Factory) {
	// A child retried while its parent expires: the retry read the
	// parent before the sweep expired it, and the sweep's cascade listed
	// the parent's children before the child's marker existed.
	for _, at := range []struct{ name, match, op string }{
		{"before_its_first_write", "/", ""},
		{"between_its_hints_and_its_record", "/tasks/", "put"},
	} {
		t.Run("a_child_retried_while_its_parent_expires_"+at.name+"_does_not_outlive_it", func(t *testing.T) {
			e := newEnv(t, f)
			parent := e.submit(queue.SubmitRequest{TaskType: "parent", TTL: check.Dur("1h")}, t0)
			child := e.submit(queue.SubmitRequest{ParentID: parent.ID, TTL: check.Dur("5h"), MaxAttempts: 1}, t0)
			c := e.claim(queue.ClaimRequest{TaskTypes: []string{child.TaskType}}, t0)[0]
			if c.Task.ID != child.ID {
				t.Fatalf("claimed %s, want the child %s", c.Task.ID, child.ID)
			}
			if err := failTask(e.q, child.Ref(), c.Lease.Token, t0); err != nil {
				t.Fatal(err)
			}
			e.sweep(t0, nil)
			now := t0.Add(61 * time.Minute)
			q, h := e.interleave(at.match, at.op, func() { e.sweep(now, nil) })
			_, err := q.Retry(ctx, child.Ref(), now)
			wantFired(t, h)
			if got := e.get(parent.ID); got.Status != queue.StatusExpired {
				t.Fatalf("parent is %s, want expired", got.Status)
			}
			got := e.get(child.ID)
			if err == nil && got.Status != queue.StatusExpired {
				t.Fatalf("the retried child of an expired parent is %s, want expired (parent_expired)", got.Status)
			}
			if err != nil && got.Status != queue.StatusFailed {
				t.Fatalf("a refused retry (%v) left the child %s", err, got.Status)
			}
			e.claimNone(now)
			e.sweep(now.Add(time.Hour), nil)
			e.consistent()
			if h := e.liveHints(); len(h) != 0 {
				t.Fatalf("hints left: %v", h)
			}
		})
	}

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

	// Complete and the sweep of a lapsed lease past the task's deadline
	// race freely: one of them decides, and it is recorded once.
	t.Run("a_complete_racing_the_sweep_of_its_lapsed_lease_is_decided_once", func(t *testing.T) {
		for i := 0; i < 5; i++ {
			e := newAttackEnv(t, f)
			task := e.submit(queue.SubmitRequest{Queue: attackQueue, TTL: check.Dur("30s")}, t0)
			c := e.claim(queue.ClaimRequest{Queue: attackQueue, LeaseFor: attackLease}, t0)[0]
			q1, q2 := e.reopen(), e.reopen()
			errs := race(
				func() error { return completeTask(q1, task.Ref(), c.Lease.Token, t0.Add(50*time.Second)) },
				func() error { _, err := q2.Sweep(ctx, t0.Add(2*attackLease), queue.SweepOptions{}); return err },
			)
			if errs[1] != nil {
				t.Fatalf("sweep: %v", errs[1])
			}
			got := e.get(task.ID)
			switch {
			case errs[0] == nil && got.Status != queue.StatusCompleted:
				t.Fatalf("the complete succeeded but the task is %s", got.Status)
			case errs[0] != nil && got.Status != queue.StatusExpired:
				t.Fatalf("the complete failed (%v) but the task is %s, want expired", errs[0], got.Status)
			}
			attackRecover(t, e, t0.Add(2*attackLease))
		}
	})
}

// deadHolder is a failed task holding dedup key "k" of the one-slot
// queue, its Task Dead-Lettered event published: it may be retried or
// purged.
func deadHolder(e *env) attackState {
	e.t.Helper()
	id := e.submit(queue.SubmitRequest{TaskType: "x", Queue: attackQueue, DedupKey: "k", TTL: check.Dur("2h"), MaxAttempts: 1}, t0).Ref()
	c := e.claim(queue.ClaimRequest{Queue: attackQueue, LeaseFor: attackLease}, t0)[0]
	if err := failTask(e.q, id, c.Lease.Token, t0); err != nil {
		e.t.Fatal(err)
	}
	e.sweep(t0, nil)
	return attackState{id: id}
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
