package queuetest

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/internal/check"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/store"
)

// The attack cases of declared queues: a queue deleted while a process
// still holds its declaration, declared again (with other shards,
// refused, or with its own), and markers written by processes that never
// read the declaration (the deployment's shards): every task is still
// found by claims, counts and the sweep.
func runAttackQueues(t *testing.T, f Factory) {
	for _, required := range []bool{false, true} {
		name := "auto_declare"
		if required {
			name = "declarations_required"
		}
		t.Run("tasks_submitted_after_their_queue_was_deleted_are_found_once_it_is_declared_again_"+name, func(t *testing.T) {
			e := newDeclEnv(t, f, queues.Options{RequireDeclared: required})
			e.declare(queues.Declaration{Name: "s", Shards: 4}, t0)
			late := e.reopen() // reads the declaration, then keeps it
			if _, err := late.Submit(ctx, queue.SubmitRequest{TaskType: "x", Queue: "s"}, t0); err != nil {
				t.Fatal(err)
			}
			c := e.claim(queue.ClaimRequest{Queue: "s", LeaseFor: time.Minute}, t0)
			if len(c) != 1 {
				t.Fatalf("claimed %d, want 1", len(c))
			}
			if err := completeTask(e.q, c[0].Task.Ref(), c[0].Lease.Token, t0); err != nil {
				t.Fatal(err)
			}
			if err := e.decls.Delete(ctx, "s", t0); err != nil {
				t.Fatal(err)
			}
			// The late process submits with the declaration it read (within
			// CacheFor): its markers spread over the queue's 4 shards.
			const n = 12
			for i := 0; i < n; i++ {
				if _, err := late.Submit(ctx, queue.SubmitRequest{TaskType: "x", Queue: "s"}, t0.Add(time.Second)); err != nil {
					t.Fatal(err)
				}
			}
			if _, _, err := e.reopenDecls().Declare(ctx, queues.Declaration{Name: "s", Shards: 2}, t0.Add(time.Minute)); !isField(err, "shards") {
				t.Fatalf("declaring a deleted queue again with other shards: %v, want a refusal naming shards", err)
			}
			d := e.declare(queues.Declaration{Name: "s"}, t0.Add(time.Minute))
			if d.Shards != 4 {
				t.Fatalf("declared again with shards %d, want its own 4", d.Shards)
			}
			// Every marker is found: counts, then claims of a fresh process.
			st, err := queues.NewQueue(e.s, e.options()).Stats(ctx, d.Settings(), t0.Add(time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			if st.Counts.Live != n {
				t.Fatalf("stats count %d live tasks, want %d", st.Counts.Live, n)
			}
			e.claimAllOf("s", n, t0.Add(time.Minute))
		})
	}

	t.Run("markers_written_with_the_deployments_shards_by_processes_that_never_read_the_declaration_are_found", func(t *testing.T) {
		// The deployment has 1 shard, the queue 8 (and the other way
		// round); the fail of a process that never read the declaration
		// puts the retry's marker in the deployment's shards, and readers
		// must look there too.
		for _, c := range []struct{ deployment, queue int }{{1, 8}, {8, 1}} {
			e := newDeclEnv(t, f, queues.Options{Shards: c.deployment})
			e.declare(queues.Declaration{Name: "s", Shards: c.queue}, t0)
			const n = 10
			for i := 0; i < n; i++ {
				e.submit(queue.SubmitRequest{TaskType: "x", Queue: "s", TTL: check.Dur("2h"), MaxAttempts: 10}, t0)
			}
			cs := e.claimAllOf("s", n, t0)
			for _, cl := range cs {
				if err := failTask(e.reopen(), cl.Task.Ref(), cl.Lease.Token, t0.Add(time.Second)); err != nil {
					t.Fatal(err)
				}
			}
			e.claimAllOf("s", n, t0.Add(time.Hour))
			// Their leases lapse; a fresh process's claim puts them back
			// (the deployment's shards again), and the sweep of a fresh
			// process, past their deadline, must find every one.
			for _, cl := range e.claimAllOf("s", n, t0.Add(time.Hour+2*time.Minute)) {
				if err := failTask(e.reopen(), cl.Task.Ref(), cl.Lease.Token, t0.Add(time.Hour+2*time.Minute+time.Second)); err != nil {
					t.Fatal(err)
				}
			}
			e.sweep(t0.Add(3*time.Hour), nil)
			for id, task := range e.records() {
				if task.Status != queue.StatusExpired {
					t.Fatalf("deployment shards %d, queue shards %d: after the sweep past its deadline task %s is %s, want expired", c.deployment, c.queue, id, task.Status)
				}
			}
		}
	})

	t.Run("a_queue_deleted_while_a_claim_holds_its_declaration_gives_no_task_twice", func(t *testing.T) {
		e := newEnv(t, f)
		e.declare(queues.Declaration{Name: "d", MaxConcurrency: 1}, t0)
		claimer := e.reopen()
		if _, err := claimer.Claim(ctx, queue.ClaimRequest{Queue: "d"}, t0); err != nil {
			t.Fatal(err)
		}
		e.submit(queue.SubmitRequest{TaskType: "x", Queue: "d"}, t0)
		if err := e.decls.Delete(ctx, "d", t0); !errors.Is(err, queue.ErrQueueNotEmpty) {
			t.Fatalf("delete of a queue with a pending task: %v, want not empty", err)
		}
		got := e.claim(queue.ClaimRequest{Queue: "d", LeaseFor: time.Minute}, t0)
		if len(got) != 1 {
			t.Fatalf("claimed %d, want 1", len(got))
		}
		if err := e.decls.Delete(ctx, "d", t0); !errors.Is(err, queue.ErrQueueNotEmpty) {
			t.Fatalf("delete of a queue with a running task: %v, want not empty", err)
		}
		if cs, err := claimer.Claim(ctx, queue.ClaimRequest{Queue: "d"}, t0); err != nil || len(cs) != 0 {
			t.Fatalf("a claim with the declaration cached got %d tasks (%v), want none: the one task runs", len(cs), err)
		}
	})
}

// claimAllOf claims from a fresh process at now until n tasks of queue
// name are claimed (under one-minute leases), failing if it gets fewer
// or any twice.
func (e *env) claimAllOf(name string, n int, now time.Time) []queue.Claimed {
	e.t.Helper()
	q := e.reopen()
	var out []queue.Claimed
	seen := map[string]bool{}
	for i := 0; i < 2*n && len(out) < n; i++ {
		cs, err := q.Claim(ctx, queue.ClaimRequest{Queue: name, LeaseFor: time.Minute, MaxTasks: n}, now)
		if err != nil {
			e.t.Fatal(err)
		}
		if len(cs) == 0 {
			break
		}
		for _, c := range cs {
			if seen[c.Task.ID] {
				e.t.Fatalf("task %s claimed twice", c.Task.ID)
			}
			seen[c.Task.ID] = true
		}
		out = append(out, cs...)
	}
	if len(out) != n {
		e.t.Fatalf("claims of %s at %s found %d tasks, want %d", name, now.Format(time.RFC3339), len(out), n)
	}
	return out
}

// isField reports whether err is a *queue.ValidationError naming field.
func isField(err error, field string) bool {
	var ve *queue.ValidationError
	return errors.As(err, &ve) && ve.Field == field
}

// runAttackTargets races the declarations of one push queue: one that
// removes its target (or deletes the queue) against one that sets it,
// the setter running whole between the remover's write and its removal
// of the index entry. Whichever lands last, a queue whose declaration
// has a target is in the push queues' index (a dispatcher finds push
// queues there only).
func runAttackTargets(t *testing.T, f Factory) {
	target := &queues.Target{Lambda: "deliver"}
	for _, remover := range []struct {
		name string
		run  func(r *queues.Registry, now time.Time) error
	}{
		{"a_declaration_without_its_target", func(r *queues.Registry, now time.Time) error {
			_, _, err := r.Declare(ctx, queues.Declaration{Name: "push"}, now)
			return err
		}},
		{"its_delete", func(r *queues.Registry, now time.Time) error { return r.Delete(ctx, "push", now) }},
	} {
		t.Run("a_target_set_while_"+remover.name+"_removes_its_index_entry_stays_in_the_index", func(t *testing.T) {
			e := newEnv(t, f)
			e.declare(queues.Declaration{Name: "push", Target: target}, t0)
			now := t0.Add(time.Minute)
			h := &writeHook{Store: e.s, match: queue.TargetKey("push"), op: "delete", hook: func() {
				if _, _, err := e.reopenDecls().Declare(ctx, queues.Declaration{Name: "push", Target: target}, now.Add(time.Second)); err != nil {
					t.Errorf("declare with a target: %v", err)
				}
			}}
			_, r := queues.New(h, e.options())
			if err := remover.run(r, now); err != nil {
				t.Fatal(err)
			}
			wantFired(t, h)
			e.wantPushQueue(now)
		})
		t.Run("a_target_whose_declaration_lands_after_"+remover.name+"_removed_its_index_entry_stays_in_the_index", func(t *testing.T) {
			// The setter writes its entry, then waits before its
			// declaration's write until the remover has deleted the entry
			// and looked at the declaration again.
			e := newEnv(t, f)
			e.declare(queues.Declaration{Name: "push", Target: target}, t0)
			now := t0.Add(time.Minute)
			atWrite, removed, setterDone := make(chan struct{}), make(chan struct{}), make(chan error, 1)
			setter := &writeHook{Store: e.s, match: queue.QueueKey("push"), op: "put", hook: func() {
				close(atWrite)
				<-removed
			}}
			rh := &writeHook{Store: e.s, match: queue.TargetKey("push"), op: "delete", hook: func() {
				go func() {
					_, r := queues.New(setter, e.options())
					_, _, err := r.Declare(ctx, queues.Declaration{Name: "push", Target: target}, now.Add(time.Second))
					setterDone <- err
				}()
				<-atWrite
			}}
			_, r := queues.New(rh, e.options())
			err := remover.run(r, now)
			close(removed)
			if err != nil {
				t.Fatal(err)
			}
			if err := <-setterDone; err != nil {
				t.Fatalf("declare with a target: %v", err)
			}
			wantFired(t, rh)
			e.wantPushQueue(now)
		})
	}
}

// wantPushQueue fails unless queue "push" has a target and is the one
// entry of the push queues' index.
func (e *env) wantPushQueue(now time.Time) {
	t := e.t
	t.Helper()
	d, err := e.reopenDecls().Get(ctx, "push", now.Add(time.Minute))
	if err != nil || d.Target == nil {
		t.Fatalf("the queue's declaration: %+v, %v: want the target set last", d, err)
	}
	var listed []string
	for te, err := range e.reopenDecls().PushTargets(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		listed = append(listed, te.Queue)
	}
	if len(listed) != 1 || listed[0] != "push" {
		t.Fatalf("push queues' index lists %v, want [push]: a dispatcher never finds the queue", listed)
	}
}

// keyReads is a store that counts the reads of one key.
type keyReads struct {
	store.Store
	key string
	n   atomic.Int64
}

func (k *keyReads) Get(ctx context.Context, key string) (store.Object, error) {
	if key == k.key {
		k.n.Add(1)
	}
	return k.Store.Get(ctx, key)
}

func (k *keyReads) Head(ctx context.Context, key string) (store.Info, error) {
	if key == k.key {
		k.n.Add(1)
	}
	return k.Store.Head(ctx, key)
}

// runAttackCachedLookups: the lease operations and a retry of a process
// that never read a queue's declaration do not read it (they write
// markers with the shards they know: LookupCached).
func runAttackCachedLookups(t *testing.T, f Factory) {
	t.Run("lease_operations_and_a_retry_never_read_the_queues_declaration", func(t *testing.T) {
		e := newEnv(t, f)
		e.declare(queues.Declaration{Name: "c", Shards: 4, MaxConcurrency: 5}, t0)
		for i := 0; i < 4; i++ {
			e.submit(queue.SubmitRequest{TaskType: "x", Queue: "c", MaxAttempts: 1, TTL: check.Dur("1h")}, t0)
		}
		cs := e.claim(queue.ClaimRequest{Queue: "c", LeaseFor: 10 * time.Minute, MaxTasks: 4}, t0)
		if len(cs) != 4 {
			t.Fatalf("claimed %d, want 4", len(cs))
		}
		kr := &keyReads{Store: e.s, key: queue.QueueKey("c")}
		q := e.open(kr)
		now := t0.Add(time.Second)
		if _, err := q.Reschedule(ctx, queue.RescheduleRequest{ID: cs[0].Task.Ref(), LeaseToken: cs[0].Lease.Token}, now); err != nil {
			t.Fatal(err)
		}
		if err := failTask(q, cs[1].Task.Ref(), cs[1].Lease.Token, now); err != nil {
			t.Fatal(err)
		}
		if err := completeTask(q, cs[2].Task.Ref(), cs[2].Lease.Token, now); err != nil {
			t.Fatal(err)
		}
		if _, err := e.reopen().Sweep(ctx, now, queue.SweepOptions{}); err != nil { // publishes the dead letter
			t.Fatal(err)
		}
		if _, err := q.Retry(ctx, cs[1].Task.Ref(), now); err != nil {
			t.Fatal(err)
		}
		if n := kr.n.Load(); n != 0 {
			t.Fatalf("a process that never read queue c's declaration read it %d times in lease operations and a retry", n)
		}
		for _, c := range cs[:2] {
			wantStatus(t, e.get(c.Task.Ref()), queue.StatusPending)
		}
	})
}
