package queuetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/internal/check"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/store"
	"github.com/s3q/s3q/shared/store/storefault"
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

// runLostManageQueuesCases are the queues cases of runLostManage (groups.go).
func runLostManageQueuesCases(t *testing.T, f Factory) {
	t.Run("a_queue_update_and_delete_whose_answers_were_lost_are_recognised", func(t *testing.T) {
		e, fs := newLossEnv(t, f)
		e.declare(queues.Declaration{Name: "a"}, t0)
		lose(fs, storefault.OpPutIfMatch, "q/a/queue.json")
		d, created, err := e.decls.Declare(ctx, queues.Declaration{Name: "a", MaxConcurrency: 5}, t0.Add(time.Second))
		if err != nil || created || d.MaxConcurrency != 5 {
			t.Fatalf("update: %+v created=%v %v", d, created, err)
		}
		wantHits(t, fs, 1)
		if got, err := e.reopenDecls().Get(ctx, "a", t0.Add(time.Second)); err != nil || got.MaxConcurrency != 5 {
			t.Fatalf("stored: %+v %v", got, err)
		}
		lose(fs, storefault.OpPutIfMatch, "q/a/queue.json")
		if err := e.decls.Delete(ctx, "a", t0.Add(2*time.Second)); err != nil {
			t.Fatalf("delete: %v", err)
		}
		wantHits(t, fs, 1)
		if _, err := e.reopenDecls().Get(ctx, "a", t0.Add(2*time.Second)); !errors.Is(err, queue.ErrQueueNotFound) {
			t.Fatalf("after the delete: %v", err)
		}
	})
}

// runOpsQueuesCases are the queues cases of runOps (groups.go).
func runOpsQueuesCases(t *testing.T, f Factory) {
	t.Run("a_paused_queue_takes_submits_gives_no_claims_and_still_expires", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		e.submit(queue.SubmitRequest{}, t0)
		d, err := e.decls.Pause(ctx, queue.DefaultQueue, t0)
		if err != nil || !d.Paused || d.PausedAt == nil || !d.PausedAt.Equal(t0) {
			t.Fatalf("pause: %+v, %v", d, err)
		}
		late := e.submit(queue.SubmitRequest{TTL: check.Dur("1m")}, t0.Add(time.Second))
		e.claimNone(t0.Add(2 * time.Second))
		// Another process, past its declaration cache, sees the pause too.
		if cs, err := e.reopen().Claim(ctx, queue.ClaimRequest{MaxTasks: 5}, t0.Add(time.Minute)); err != nil || len(cs) != 0 {
			t.Fatalf("another process claimed %d tasks of a paused queue (%v)", len(cs), err)
		}
		// Changing its settings keeps it paused.
		if d, _, err := e.decls.Declare(ctx, queues.Declaration{Name: queue.DefaultQueue, MaxAttempts: 5}, t0.Add(time.Minute)); err != nil || !d.Paused {
			t.Fatalf("declare over a paused queue: paused=%v, %v", d.Paused, err)
		}
		e.sweep(t0.Add(3*time.Minute), nil)
		wantStatus(t, e.get(late.ID), queue.StatusExpired)
		if again, err := e.decls.Pause(ctx, queue.DefaultQueue, t0.Add(4*time.Minute)); err != nil || !again.PausedAt.Equal(t0) {
			t.Fatalf("pausing a paused queue: %+v, %v; want it unchanged", again, err)
		}
		d, err = e.decls.Resume(ctx, queue.DefaultQueue, t0.Add(5*time.Minute))
		if err != nil || d.Paused || d.PausedAt != nil {
			t.Fatalf("resume: %+v, %v", d, err)
		}
		got := e.claimOne(t0.Add(5 * time.Minute))
		wantStatus(t, got.Task, queue.StatusRunning)
		_, err = e.decls.Pause(ctx, "nope", t0)
		check.Err(t, err, queue.ErrQueueNotFound)
	})

	t.Run("stats_count_by_status_and_find_the_oldest_pending_task", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		first := e.submit(queue.SubmitRequest{}, t0)
		e.submit(queue.SubmitRequest{}, t0.Add(time.Minute))
		e.submit(queue.SubmitRequest{Delay: check.Dur("1h")}, t0.Add(time.Minute))
		cancelled := e.submit(queue.SubmitRequest{}, t0.Add(time.Minute))
		if _, err := e.q.Cancel(ctx, cancelled.Ref(), t0.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		e.submit(queue.SubmitRequest{TTL: check.Dur("0s")}, t0.Add(time.Minute))
		now := t0.Add(10 * time.Minute)
		st, err := e.stats(queue.DefaultQueue, now)
		if err != nil {
			t.Fatal(err)
		}
		c := st.Counts
		if c.Live != 3 || c.Delayed != 1 || c.Cancelled != 1 || c.Expired != 1 || c.Failed != 0 {
			t.Fatalf("counts %+v, want live 3, delayed 1, cancelled 1, expired 1", c)
		}
		if st.OldestPendingAt == nil || !st.OldestPendingAt.Equal(first.AvailableAt) || *st.OldestPendingAgeSeconds != 600 {
			t.Fatalf("oldest pending %v (%v s), want %s, 600 s", st.OldestPendingAt, st.OldestPendingAgeSeconds, first.AvailableAt)
		}
		if st.Recent.WindowSeconds != 3600 || st.Recent.Cancelled+st.Recent.Expired != 2 {
			t.Fatalf("recent %+v, want the cancel and the expiry of the last hour", st.Recent)
		}
		// Claimed, the oldest is running: the next one is the oldest pending.
		e.claimOne(now)
		st, err = e.stats(queue.DefaultQueue, now)
		if err != nil || st.OldestPendingAt == nil || !st.OldestPendingAt.Equal(t0.Add(time.Minute)) {
			t.Fatalf("oldest pending after a claim: %v, %v; want %s", st.OldestPendingAt, err, t0.Add(time.Minute))
		}
		_, err = e.stats("nope", now)
		check.Err(t, err, queue.ErrQueueNotFound)
	})
}

// typeDefaults is a fixed DefaultsSource.
type typeDefaults map[string]queue.TypeDefaults

func (d typeDefaults) TaskTypeDefaults(_ context.Context, taskType string, _ time.Time) (queue.TypeDefaults, bool, error) {
	v, ok := d[taskType]
	return v, ok, nil
}

func runQueues(t *testing.T, f Factory) {
	t.Run("a_queue_with_a_target_has_an_entry_in_the_push_queues_index_while_it_has_one", func(t *testing.T) {
		t.Parallel()
		e := newDeclEnv(t, f, queues.Options{AllowInsecureTargets: true})
		target := &queues.Target{URL: "http://127.0.0.1:1/", Secret: "s"}
		e.declare(queues.Declaration{Name: "pull"}, t0)
		e.declare(queues.Declaration{Name: "push", Target: target}, t0)
		wantKeys(t, "push index", e.keys(queue.PrefixTargets), queue.TargetKey("push"))
		e.declare(queues.Declaration{Name: "pull", Target: target}, t0.Add(time.Second))
		e.declare(queues.Declaration{Name: "push"}, t0.Add(time.Second)) // target removed
		wantKeys(t, "push index", e.keys(queue.PrefixTargets), queue.TargetKey("pull"))
		if err := e.decls.Delete(ctx, "pull", t0.Add(2*time.Second)); err != nil {
			t.Fatal(err)
		}
		wantKeys(t, "push index", e.keys(queue.PrefixTargets))
	})

	t.Run("a_queue_is_declared_read_changed_listed_and_deleted", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		d, created, err := e.decls.Declare(ctx, queues.Declaration{Name: "emails", TTL: check.Dur("1h"), MaxAttempts: 5, Timeout: check.Dur("2m"), MaxConcurrency: 4,
			Target: &queues.Target{URL: "https://example.com/hook", Secret: "/s3q/hook"}}, t0)
		if err != nil || !created || d.Shards != 1 || !d.CreatedAt.Equal(t0) {
			t.Fatalf("declare: %+v %v %v", d, created, err)
		}
		got, err := e.decls.Get(ctx, "emails", t0)
		if err != nil || got.MaxConcurrency != 4 || got.Target == nil || got.Target.Secret != "/s3q/hook" || got.TTL.Std() != time.Hour {
			t.Fatalf("get: %+v %v", got, err)
		}
		d2, created, err := e.decls.Declare(ctx, queues.Declaration{Name: "emails", MaxAttempts: 2}, t0.Add(time.Minute))
		if err != nil || created || d2.TTL != nil || d2.Target != nil || d2.MaxAttempts != 2 || !d2.CreatedAt.Equal(t0) || !d2.UpdatedAt.Equal(t0.Add(time.Minute)) {
			t.Fatalf("replace: %+v %v %v", d2, created, err)
		}
		e.declare(queues.Declaration{Name: "a-first"}, t0)
		list, err := e.decls.List(ctx, queues.ListRequest{Limit: 1})
		if err != nil || len(list.Queues) != 1 || list.Queues[0].Name != "a-first" || list.NextCursor != "a-first" {
			t.Fatalf("list page 1: %+v %v", list, err)
		}
		list, err = e.decls.List(ctx, queues.ListRequest{Limit: 1, Cursor: list.NextCursor})
		if err != nil || len(list.Queues) != 1 || list.Queues[0].Name != "emails" {
			t.Fatalf("list page 2: %+v %v", list, err)
		}
		if err := e.decls.Delete(ctx, "emails", t0); err != nil {
			t.Fatal(err)
		}
		_, err = e.decls.Get(ctx, "emails", t0)
		check.Err(t, err, queue.ErrQueueNotFound)
		check.Err(t, e.decls.Delete(ctx, "emails", t0), queue.ErrQueueNotFound)
		list, err = e.decls.List(ctx, queues.ListRequest{})
		if err != nil || len(list.Queues) != 1 || list.Queues[0].Name != "a-first" {
			t.Fatalf("list after the delete: %+v %v", list, err)
		}
		// Declared again, by hand and by a submit (the key is never
		// deleted: versitygw refuses If-None-Match over a delete marker).
		if d, created, err := e.decls.Declare(ctx, queues.Declaration{Name: "emails", MaxAttempts: 4}, t0.Add(time.Hour)); err != nil || !created || !d.CreatedAt.Equal(t0.Add(time.Hour)) {
			t.Fatalf("declare again: %+v %v %v", d, created, err)
		}
		if err := e.decls.Delete(ctx, "a-first", t0); err != nil {
			t.Fatal(err)
		}
		e.reopen().Submit(ctx, queue.SubmitRequest{TaskType: "t", Queue: "a-first"}, t0)
		if d, err := e.decls.Get(ctx, "a-first", t0); err != nil || !d.AutoDeclared {
			t.Fatalf("auto-declared again: %+v %v", d, err)
		}
	})

	t.Run("a_bad_declaration_names_its_field_and_writes_nothing", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		web := func(url, secret string) *queues.Target { return &queues.Target{URL: url, Secret: secret} }
		for _, c := range []struct {
			d     queues.Declaration
			field string
		}{
			{queues.Declaration{Name: "a/b"}, "queue"},
			{queues.Declaration{Name: ".."}, "queue"},
			{queues.Declaration{Name: "q", TTL: check.Dur("0s")}, "ttl"},
			{queues.Declaration{Name: "q", TTLFrom: "later"}, "ttl_from"},
			{queues.Declaration{Name: "q", MaxAttempts: -1}, "max_attempts"},
			{queues.Declaration{Name: "q", MaxAttempts: 1001}, "max_attempts"},
			{queues.Declaration{Name: "q", Timeout: check.Dur("13h")}, "timeout"},
			{queues.Declaration{Name: "q", Shards: 257}, "shards"},
			{queues.Declaration{Name: "q", Shards: queue.MaxShards + 1}, "shards"},
			{queues.Declaration{Name: "q", MaxConcurrency: -2}, "max_concurrency"},
			{queues.Declaration{Name: "q", MaxConcurrency: 1001}, "max_concurrency"},
			{queues.Declaration{Name: "q", Target: &queues.Target{}}, "target"},
			{queues.Declaration{Name: "q", Target: &queues.Target{Lambda: "f", URL: "https://x.example", Secret: "s"}}, "target.url"},
			{queues.Declaration{Name: "q", Target: &queues.Target{Lambda: "not a function"}}, "target.lambda"},
			{queues.Declaration{Name: "q", Target: &queues.Target{Lambda: "arn:aws:s3:::bucket"}}, "target.lambda"},
			{queues.Declaration{Name: "q", Target: &queues.Target{Lambda: "f", Secret: "/s"}}, "target.secret"},
			{queues.Declaration{Name: "q", Target: web("http://x.example/hook", "/s")}, "target.url"},
			{queues.Declaration{Name: "q", Target: web("ftp://x.example/hook", "/s")}, "target.url"},
			{queues.Declaration{Name: "q", Target: web("/relative", "/s")}, "target.url"},
			{queues.Declaration{Name: "q", Target: web("https://user:pw@x.example/", "/s")}, "target.url"},
			{queues.Declaration{Name: "q", Target: web("https://x.example/hook", "")}, "target.secret"},
			{queues.Declaration{Name: "q", Target: web("https://x.example/hook", "a secret")}, "target.secret"},
		} {
			_, _, err := e.decls.Declare(ctx, c.d, t0)
			check.Field(t, err, c.field)
			check.Err(t, err, queue.ErrInvalidInput)
		}
		if keys := e.allKeys(); len(keys) != 0 {
			t.Fatalf("bad declarations wrote %v", keys)
		}
		// The good targets pass: a name, an ARN with an alias, https.
		for i, tg := range []*queues.Target{
			{Lambda: "thumbs"},
			{Lambda: "arn:aws:lambda:eu-west-1:123456789012:function:thumbs:live"},
			web("https://x.example/hook?a=1", "/s3q/hook-secret"),
		} {
			if _, _, err := e.decls.Declare(ctx, queues.Declaration{Name: "ok" + string(rune('a'+i)), Target: tg}, t0); err != nil {
				t.Errorf("target %+v: %v", tg, err)
			}
		}
		// http only where the deployment allows insecure targets.
		dev := newDeclEnv(t, f, queues.Options{AllowInsecureTargets: true})
		if _, _, err := dev.decls.Declare(ctx, queues.Declaration{Name: "local", Target: web("http://127.0.0.1:9000/", "/s")}, t0); err != nil {
			t.Errorf("http target with insecure targets allowed: %v", err)
		}
	})

	t.Run("a_process_that_never_read_the_declaration_fails_and_reschedules_without_reading_it", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f) // the deployment's shards: 1
		e.declare(queues.Declaration{Name: "wide", Shards: 4}, t0)
		task := e.submit(queue.SubmitRequest{Queue: "wide"}, t0)
		now := t0
		claim := func() queue.Lease {
			t.Helper()
			cs, err := e.reopen().Claim(ctx, queue.ClaimRequest{Queue: "wide", LeaseFor: time.Minute}, now)
			if err != nil || len(cs) != 1 || cs[0].Task.ID != task.ID {
				t.Fatalf("claim at %s: %d tasks, %v", now.Format(time.RFC3339), len(cs), err)
			}
			return cs[0].Lease
		}
		for i, op := range []func(q *queue.Queue, tok string) (queue.Task, error){
			func(q *queue.Queue, tok string) (queue.Task, error) {
				return q.Fail(ctx, queue.FailRequest{ID: task.Ref(), LeaseToken: tok, Error: "again"}, now)
			},
			func(q *queue.Queue, tok string) (queue.Task, error) {
				return q.Reschedule(ctx, queue.RescheduleRequest{ID: task.Ref(), LeaseToken: tok}, now)
			},
		} {
			tok := claim()
			c := store.NewCounting(e.s)
			got, err := op(e.open(c), tok.Token) // another process: nothing cached
			if err != nil || got.Status != queue.StatusPending {
				t.Fatalf("op %d: %s, %v", i, got.Status, err)
			}
			// One GET, of the record: the marker goes to the deployment's
			// shards, which claims of the queue read as well.
			if n := c.Counts(); n.Get != 1 || !strings.HasPrefix(got.IndexKey, "q/wide/index/ready/0/") {
				t.Fatalf("op %d made %v and put its marker at %s; want one GET (the record) and the deployment's shard 0", i, n, got.IndexKey)
			}
			now = got.AvailableAt
		}
		claim()
	})

	t.Run("shards_are_fixed_at_creation", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		e.declare(queues.Declaration{Name: "wide", Shards: 4}, t0)
		_, _, err := e.decls.Declare(ctx, queues.Declaration{Name: "wide", Shards: 2}, t0)
		check.Field(t, err, "shards")
		if d := e.declare(queues.Declaration{Name: "wide", MaxAttempts: 2}, t0); d.Shards != 4 {
			t.Fatalf("shards = %d after an update that gave none, want 4", d.Shards)
		}
		// Its tasks spread over its 4 shards and are all claimed.
		for i := 0; i < 12; i++ {
			e.submit(queue.SubmitRequest{Queue: "wide"}, t0)
		}
		shards := map[string]bool{}
		for _, k := range e.keys("q/wide/index/ready/") {
			shards[k[:len("q/wide/index/ready/0/")]] = true
		}
		if len(shards) < 2 {
			t.Errorf("12 tasks used shards %v, want several of 4", shards)
		}
		got := e.claim(queue.ClaimRequest{Queue: "wide", MaxTasks: 12}, t0)
		if len(got) != 12 {
			t.Fatalf("claimed %d of 12", len(got))
		}
	})

	t.Run("an_undeclared_queue_is_queue_not_found_when_declarations_are_required", func(t *testing.T) {
		t.Parallel()
		e := newDeclEnv(t, f, queues.Options{RequireDeclared: true})
		_, err := e.q.Submit(ctx, queue.SubmitRequest{TaskType: "t", Queue: "ghost"}, t0)
		check.Err(t, err, queue.ErrQueueNotFound)
		_, err = e.q.Claim(ctx, queue.ClaimRequest{Queue: "ghost"}, t0)
		check.Err(t, err, queue.ErrQueueNotFound)
		_, err = e.q.Submit(ctx, queue.SubmitRequest{TaskType: "t"}, t0) // "default" too
		check.Err(t, err, queue.ErrQueueNotFound)
		if keys := e.allKeys(); len(keys) != 0 {
			t.Fatalf("a submit to an undeclared queue wrote %v", keys)
		}
		e.declare(queues.Declaration{Name: "ghost"}, t0)
		task := e.submit(queue.SubmitRequest{Queue: "ghost"}, t0)
		if cs := e.claim(queue.ClaimRequest{Queue: "ghost"}, t0); len(cs) != 1 || cs[0].Task.ID != task.ID {
			t.Fatalf("claim after declaring: %+v", cs)
		}
	})

	t.Run("auto_declare_declares_a_queue_on_its_first_submit_and_not_on_bad_input", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		_, err := e.q.Submit(ctx, queue.SubmitRequest{TaskType: "t", Queue: "fresh", TTL: check.Dur("-1s")}, t0)
		check.Field(t, err, "ttl")
		if keys := e.inQueues("/queue.json"); len(keys) != 0 {
			t.Fatalf("a bad submit declared %v", keys)
		}
		e.submit(queue.SubmitRequest{Queue: "fresh"}, t0)
		d, err := e.decls.Get(ctx, "fresh", t0)
		if err != nil || !d.AutoDeclared || d.Shards != 1 {
			t.Fatalf("auto-declared queue: %+v %v", d, err)
		}
		// A claim of a queue nobody submitted to finds nothing and declares nothing.
		if cs := e.claim(queue.ClaimRequest{Queue: "never"}, t0); len(cs) != 0 {
			t.Fatal("claimed from an empty queue")
		}
		if _, err := e.decls.Get(ctx, "never", t0); err == nil {
			t.Fatal("a claim declared a queue")
		}
	})

	t.Run("max_queues_bounds_declarations_by_hand_and_on_submit", func(t *testing.T) {
		t.Parallel()
		e := newDeclEnv(t, f, queues.Options{MaxQueues: 2})
		e.declare(queues.Declaration{Name: "a"}, t0)
		e.submit(queue.SubmitRequest{Queue: "b"}, t0)
		_, _, err := e.decls.Declare(ctx, queues.Declaration{Name: "c"}, t0)
		check.Err(t, err, queue.ErrTooManyQueues)
		_, err = e.q.Submit(ctx, queue.SubmitRequest{TaskType: "t", Queue: "d"}, t0)
		check.Err(t, err, queue.ErrTooManyQueues)
		e.declare(queues.Declaration{Name: "a", MaxAttempts: 9}, t0) // changing one still works
		if n := len(e.inQueues("/queue.json")); n != 2 {
			t.Fatalf("%d queues, want 2", n)
		}
		if n := len(e.inQueues("/tasks/")); n != 1 {
			t.Fatalf("%d tasks, want only b's", n)
		}
		// A deleted queue makes room.
		if err := e.decls.Delete(ctx, "a", t0); err != nil {
			t.Fatal(err)
		}
		e.declare(queues.Declaration{Name: "c"}, t0)
	})

	t.Run("a_queue_with_live_tasks_is_not_deleted", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		e.declare(queues.Declaration{Name: "busy"}, t0)
		e.submit(queue.SubmitRequest{Queue: "busy", Delay: check.Dur("1h")}, t0)
		check.Err(t, e.decls.Delete(ctx, "busy", t0), queue.ErrQueueNotEmpty)
		task := e.submit(queue.SubmitRequest{Queue: "busy", TTL: check.Dur("1d")}, t0)
		c := e.claim(queue.ClaimRequest{Queue: "busy"}, t0)
		if len(c) != 1 || c[0].Task.ID != task.ID {
			t.Fatalf("claim: %+v", c)
		}
		check.Err(t, e.decls.Delete(ctx, "busy", t0), queue.ErrQueueNotEmpty)
		if _, err := e.q.Complete(ctx, queue.CompleteRequest{ID: task.Ref(), LeaseToken: c[0].Lease.Token}, t0); err != nil {
			t.Fatal(err)
		}
		for _, tk := range e.list(queue.ListRequest{Queue: "busy", Status: queue.StatusPending}) {
			if _, err := e.q.Cancel(ctx, tk.Ref(), t0); err != nil {
				t.Fatal(err)
			}
		}
		if err := e.decls.Delete(ctx, "busy", t0); err != nil {
			t.Fatalf("delete once its tasks are done: %v", err)
		}
	})

	t.Run("defaults_resolve_request_then_task_type_then_queue_then_global", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f, func(o *queue.Options) {
			o.DefaultTTL = 10 * time.Hour
			o.TypeDefaults = typeDefaults{"typed": {MaxAttempts: 7, Timeout: 7 * time.Minute}}
		})
		e.declare(queues.Declaration{Name: "q", TTL: check.Dur("2h"), MaxAttempts: 5, Timeout: check.Dur("3m")}, t0)
		e.declare(queues.Declaration{Name: "firsts", TTL: check.Dur("30m"), TTLFrom: queue.TTLFromFirstAttempt}, t0)
		wantDefaults := func(name string, task queue.Task, ttl time.Duration, attempts int, timeout time.Duration) {
			t.Helper()
			if task.ExpiresAt == nil || task.ExpiresAt.Sub(task.CreatedAt) != ttl || task.MaxAttempts != attempts || task.Timeout.Std() != timeout {
				t.Errorf("%s: expires_at %v, max_attempts %d, timeout %s; want ttl %s, %d, %s",
					name, task.ExpiresAt, task.MaxAttempts, task.Timeout, ttl, attempts, timeout)
			}
		}
		wantDefaults("queue defaults", e.submit(queue.SubmitRequest{TaskType: "plain", Queue: "q"}, t0), 2*time.Hour, 5, 3*time.Minute)
		wantDefaults("task type over queue", e.submit(queue.SubmitRequest{TaskType: "typed", Queue: "q"}, t0), 2*time.Hour, 7, 7*time.Minute)
		wantDefaults("request over all", e.submit(queue.SubmitRequest{TaskType: "typed", Queue: "q", TTL: check.Dur("1m"), MaxAttempts: 2, Timeout: check.Dur("1m")}, t0),
			time.Minute, 2, time.Minute)
		wantDefaults("global without queue defaults", e.submit(queue.SubmitRequest{TaskType: "plain", Queue: "bare"}, t0), 10*time.Hour, 3, queue.DefaultTimeout)
		ff := e.submit(queue.SubmitRequest{TaskType: "plain", Queue: "firsts"}, t0)
		if ff.ExpiresAt != nil || ff.TTLFrom != queue.TTLFromFirstAttempt || ff.TTL == nil || ff.TTL.Std() != 30*time.Minute {
			t.Errorf("queue ttl_from first_attempt: %+v", ff)
		}
	})

	t.Run("a_view_of_one_queue_finds_no_task_of_another_and_changes_nothing", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		task := e.submit(queue.SubmitRequest{Queue: "a"}, t0)
		other := e.q.In("b")
		c := e.claim(queue.ClaimRequest{Queue: "a", LeaseFor: time.Minute}, t0)[0]
		before := e.raw(task.Ref())
		_, err := other.Get(ctx, task.Ref())
		check.Err(t, err, queue.ErrNotFound)
		_, err = allHistory(other, task.Ref())
		check.Err(t, err, queue.ErrNotFound)
		// Nor does a page after its last version (which reads no version).
		if h, err := e.q.In("a").History(ctx, queue.HistoryRequest{ID: task.ID}); err != nil {
			t.Fatal(err)
		} else {
			_, err = other.History(ctx, queue.HistoryRequest{ID: task.Ref(), Cursor: h.Versions[len(h.Versions)-1].VersionID})
			check.Err(t, err, queue.ErrNotFound)
		}
		_, err = other.Heartbeat(ctx, queue.HeartbeatRequest{ID: task.Ref(), LeaseToken: c.Lease.Token}, t0)
		check.Err(t, err, queue.ErrNotFound)
		_, err = other.Complete(ctx, queue.CompleteRequest{ID: task.Ref(), LeaseToken: c.Lease.Token}, t0)
		check.Err(t, err, queue.ErrNotFound)
		_, err = other.Fail(ctx, queue.FailRequest{ID: task.Ref(), LeaseToken: c.Lease.Token, Error: "x"}, t0)
		check.Err(t, err, queue.ErrNotFound)
		_, err = other.Reschedule(ctx, queue.RescheduleRequest{ID: task.Ref(), LeaseToken: c.Lease.Token}, t0)
		check.Err(t, err, queue.ErrNotFound)
		_, err = other.AckCancel(ctx, queue.AckCancelRequest{ID: task.Ref(), LeaseToken: c.Lease.Token}, t0)
		check.Err(t, err, queue.ErrNotFound)
		for _, op := range []func(context.Context, string, time.Time) (queue.Task, error){other.Cancel, other.Retry, other.Expire} {
			_, err := op(ctx, task.ID, t0)
			check.Err(t, err, queue.ErrNotFound)
		}
		if !bytes.Equal(before, e.raw(task.Ref())) {
			t.Fatal("an operation under another queue changed the record")
		}
		_, err = other.Submit(ctx, queue.SubmitRequest{TaskType: "t", Queue: "a"}, t0)
		check.Field(t, err, "queue")
		if res, err := other.List(ctx, queue.ListRequest{}); err != nil || len(res.Tasks) != 0 {
			t.Fatalf("list under b: %+v %v", res, err)
		}
		if got, err := e.q.In("a").Get(ctx, task.ID); err != nil || got.ID != task.ID {
			t.Fatalf("get under a: %v", err)
		}
	})

	t.Run("counts_come_from_the_index_markers", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		d := e.declare(queues.Declaration{Name: "c", MaxConcurrency: 2}, t0)
		e.submit(queue.SubmitRequest{Queue: "c"}, t0)
		e.submit(queue.SubmitRequest{Queue: "c", TTL: check.Dur("1h")}, t0)
		e.submit(queue.SubmitRequest{Queue: "c", Delay: check.Dur("1h")}, t0)
		e.claim(queue.ClaimRequest{Queue: "c"}, t0)
		got, err := e.q.CountQueue(ctx, d.Settings(), t0)
		if err != nil || got.Live != 3 || got.Delayed != 1 || got.Running == nil || *got.Running != 1 {
			t.Fatalf("counts: %+v %v", got, err)
		}
	})

	runConcurrency(t, f)
}

// runReplayQueuesCases are the queues cases of runReplay (groups.go).
func runReplayQueuesCases(t *testing.T, f Factory) {

	t.Run("a_refused_submit_does_not_auto_declare_its_queue", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f) // auto_declare: RequireDeclared is off
		id := queue.NewID(t0)
		if _, err := e.q.In("a").Submit(ctx, queue.SubmitRequest{ID: id, TaskType: "x"}, t0); err != nil {
			t.Fatal(err)
		}
		// (An id another request made in queue a is no refusal in queue
		// fresh: ids are per queue.)
		if res, err := e.q.In("a").Submit(ctx, queue.SubmitRequest{ID: id, TaskType: "y"}, t0); err == nil {
			t.Fatalf("another request with a taken id was accepted: %+v", res)
		}
		refused := []queue.SubmitRequest{
			{TaskType: "x", Queue: "fresh", Input: json.RawMessage(`{`)}, // a bad field
			{TaskType: "x", Queue: "fresh", ParentID: queue.NewID(t0)},   // no such parent
		}
		for _, req := range refused {
			if _, err := e.q.Submit(ctx, req, t0.Add(time.Second)); err == nil {
				t.Fatalf("%+v was accepted", req)
			}
		}
		if _, err := e.decls.Get(ctx, "fresh", t0.Add(time.Second)); !errors.Is(err, queue.ErrQueueNotFound) {
			t.Fatalf("queue fresh after refused submits: %v, want not declared", err)
		}
		if _, err := e.q.Submit(ctx, queue.SubmitRequest{TaskType: "x", Queue: "fresh"}, t0.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		if _, err := e.decls.Get(ctx, "fresh", t0.Add(time.Second)); err != nil {
			t.Fatalf("queue fresh after an accepted submit: %v", err)
		}
	})
}
