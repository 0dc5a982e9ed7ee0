package queuetest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/internal/check"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/store"
	"github.com/s3q/s3q/shared/store/storefault"
)

// The attack fault cases: every transition that writes many side records
// at once (a submit with a dedup key, a parent and a ttl; a claim under
// max_concurrency; complete, fail, cancel, expire, retry and purge of
// such tasks) is failed at its k-th write, for every k, in each of three
// ways: the process dies before the write reaches S3, dies after S3
// applied it, or lives on with the answer lost (and, as a careless client
// would, calls again). After each: nothing runs twice while a lease is
// valid, no queue runs more than its max_concurrency, and a fresh process
// that claims, completes and sweeps finds every task, finishes it, leaves
// no hint behind, frees every slot and dedup key, and owes no event.

// attackQueue is the queue the fault cases' tasks live in: one slot.
const attackQueue = "aq"

// attackState is what a fault case's setup made.
type attackState struct {
	id, token, parent string
}

// attackTx is one transition to fail part-way through.
type attackTx struct {
	name  string
	setup func(e *env) attackState
	run   func(q *queue.Queue, st attackState, now time.Time) error
}

const attackLease = time.Minute

// attackSubmit is the submit of the fault cases' tasks: a dedup key, a
// ttl, in the one-slot queue.
func attackSubmit(parent string) queue.SubmitRequest {
	return queue.SubmitRequest{TaskType: "x", Queue: attackQueue, DedupKey: "k", TTL: check.Dur("2h"), ParentID: parent}
}

// bareID is the id of a task reference.
func bareID(ref string) string {
	_, id, _ := queue.ParseRef(ref, attackQueue)
	return id
}

// completeTask and failTask are the lease operations the cases call (one
// place to adapt when their signatures change).
func completeTask(q *queue.Queue, id, token string, now time.Time) error {
	_, err := q.Complete(ctx, queue.CompleteRequest{ID: id, LeaseToken: token, Output: []byte(`1`)}, now)
	return err
}

func failTask(q *queue.Queue, id, token string, now time.Time) error {
	_, err := q.Fail(ctx, queue.FailRequest{ID: id, LeaseToken: token, Error: "x"}, now)
	return err
}

func attackTxs() []attackTx {
	parented := func(e *env) attackState {
		p := e.submit(queue.SubmitRequest{TaskType: "parent", Queue: attackQueue, TTL: check.Dur("3h")}, t0)
		return attackState{parent: p.Ref()}
	}
	pending := func(e *env) attackState {
		st := parented(e)
		st.id = e.submit(attackSubmit(bareID(st.parent)), t0).Ref()
		return st
	}
	running := func(max int, ttl string) func(e *env) attackState {
		return func(e *env) attackState {
			st := attackState{id: e.submit(queue.SubmitRequest{
				TaskType: "x", Queue: attackQueue, DedupKey: "k", TTL: check.Dur(ttl), MaxAttempts: max}, t0).Ref()}
			cs := e.claim(queue.ClaimRequest{Queue: attackQueue, LeaseFor: attackLease}, t0)
			if len(cs) != 1 || cs[0].Task.Ref() != st.id {
				e.t.Fatalf("setup claimed %d tasks, want %s", len(cs), st.id)
			}
			st.token = cs[0].Lease.Token
			return st
		}
	}
	return []attackTx{
		{name: "submit_with_dedup_parent_and_ttl", setup: parented,
			run: func(q *queue.Queue, st attackState, now time.Time) error {
				_, err := q.Submit(ctx, attackSubmit(bareID(st.parent)), now)
				return err
			}},
		{name: "claim_under_max_concurrency", setup: pending,
			run: func(q *queue.Queue, _ attackState, now time.Time) error {
				_, err := q.Claim(ctx, queue.ClaimRequest{Queue: attackQueue, LeaseFor: attackLease}, now)
				return err
			}},
		{name: "complete", setup: running(3, "2h"),
			run: func(q *queue.Queue, st attackState, now time.Time) error {
				return completeTask(q, st.id, st.token, now)
			}},
		{name: "fail_with_retry", setup: running(3, "2h"),
			run: func(q *queue.Queue, st attackState, now time.Time) error {
				return failTask(q, st.id, st.token, now)
			}},
		{name: "fail_to_dead_letter", setup: running(1, "2h"),
			run: func(q *queue.Queue, st attackState, now time.Time) error {
				return failTask(q, st.id, st.token, now)
			}},
		{name: "cancel_of_a_parent", setup: pending,
			run: func(q *queue.Queue, st attackState, now time.Time) error {
				_, err := q.Cancel(ctx, st.parent, now)
				return err
			}},
		{name: "cancel_of_a_running_child", setup: running(3, "2h"),
			run: func(q *queue.Queue, st attackState, now time.Time) error {
				_, err := q.Cancel(ctx, st.id, now)
				return err
			}},
		{name: "sweep_of_a_lapsed_lease_past_its_deadline", setup: func(e *env) attackState {
			st := running(3, "30s")(e)
			return st
		},
			run: func(q *queue.Queue, _ attackState, now time.Time) error {
				_, err := q.Sweep(ctx, now.Add(2*attackLease), queue.SweepOptions{})
				return err
			}},
		{name: "expire_via_sweep", setup: pending,
			run: func(q *queue.Queue, _ attackState, now time.Time) error {
				_, err := q.Sweep(ctx, now.Add(150*time.Minute), queue.SweepOptions{})
				return err
			}},
		{name: "retry_of_a_dedup_holder", setup: deadHolder,
			run: func(q *queue.Queue, st attackState, now time.Time) error {
				_, err := q.Retry(ctx, st.id, now)
				return err
			}},
		{name: "purge_of_a_dedup_holder", setup: deadHolder,
			run: func(q *queue.Queue, _ attackState, now time.Time) error {
				_, err := q.Purge(ctx, queue.BulkRequest{Queue: attackQueue, Status: queue.StatusFailed}, now)
				return err
			}},
		{name: "purge_of_a_pending_child", setup: pending,
			run: func(q *queue.Queue, _ attackState, now time.Time) error {
				_, err := q.Purge(ctx, queue.BulkRequest{Queue: attackQueue, Status: queue.StatusPending, TaskType: "x"}, now)
				return err
			}},
	}
}

var attackModes = []struct {
	name string
	mode storefault.FaultMode
}{
	{"dies_before", storefault.FailBefore}, {"dies_after", storefault.FailAfter}, {"loses_the_answer_of", storefault.LoseAnswer},
}

func runAttackFault(t *testing.T, f Factory) {
	background := func(o *queue.Options) { o.BackgroundCleanup = true }
	for _, tx := range attackTxs() {
		for _, bg := range []bool{false, true} {
			var opts []func(*queue.Options)
			suffix := ""
			if bg {
				// The lease operations' cleanups run after they return.
				if !strings.HasPrefix(tx.name, "complete") && !strings.HasPrefix(tx.name, "fail") {
					continue
				}
				opts, suffix = append(opts, background), "_under_background_cleanup"
			}
			writes := attackWrites(t, f, tx, opts...)
			for _, m := range attackModes {
				for n := 1; n <= writes; n++ {
					name := fmt.Sprintf("a_%s%s_that_%s_write_%d_of_%d_loses_nothing_and_doubles_nothing", tx.name, suffix, m.name, n, writes)
					t.Run(name, func(t *testing.T) { attackFaultOnce(t, f, tx, n, m.mode, opts...) })
				}
			}
		}
	}
}

// newAttackEnv is an env with the one-slot queue declared.
func newAttackEnv(t testing.TB, f Factory, opts ...func(*queue.Options)) *env {
	e := newEnv(t, f, opts...)
	e.declare(queues.Declaration{Name: attackQueue, MaxConcurrency: 1}, t0)
	return e
}

// attackWrites runs tx once without a fault and counts its writes.
func attackWrites(t *testing.T, f Factory, tx attackTx, opts ...func(*queue.Options)) int {
	t.Helper()
	e := newAttackEnv(t, f, opts...)
	st := tx.setup(e)
	counting := store.NewCounting(e.s)
	q := e.open(counting)
	if err := tx.run(q, st, t0.Add(time.Second)); err != nil {
		t.Fatalf("%s without a fault: %v", tx.name, err)
	}
	q.Flush()
	c := counting.Counts()
	if c.Put+c.Delete == 0 {
		t.Fatalf("%s makes no write", tx.name)
	}
	return int(c.Put + c.Delete)
}

func attackFaultOnce(t *testing.T, f Factory, tx attackTx, n int, mode storefault.FaultMode, opts ...func(*queue.Options)) {
	e := newAttackEnv(t, f, opts...)
	st := tx.setup(e)
	faulty := storefault.New(e.s)
	q := e.open(faulty)
	at := t0.Add(time.Second)
	faulty.Fail(n, mode)
	err := tx.run(q, st, at)
	q.Flush() // background cleanups meet the fault too
	if !faulty.Fired() {
		t.Fatalf("write %d never happened (err %v)", n, err)
	}
	faulty.Disarm()
	if mode == storefault.LoseAnswer && err != nil {
		// The process lives and its caller calls again.
		if err := tx.run(q, st, at); err != nil && !isRefusal(err) {
			t.Fatalf("%s called again after its answer was lost: %v", tx.name, err)
		}
		q.Flush()
	}
	xs := 0
	for _, task := range e.records() {
		if task.TaskType == "x" {
			xs++
		}
	}
	if xs > 1 {
		t.Fatalf("%d tasks of type x after one transition, want at most 1: one was made twice", xs)
	}
	e.noDoubleRun(at)
	e.submitMeetsNoGhost(at)
	attackRecover(t, e, at)
}

// submitMeetsNoGhost submits with the fault cases' dedup key at now from
// a fresh process, as a client would right after the fault: it may be
// refused as a conflict to retry (the key is being taken), but a task it
// answers with exists, lives and holds the key.
func (e *env) submitMeetsNoGhost(now time.Time) {
	e.t.Helper()
	res, err := e.reopen().Submit(ctx, attackSubmit(""), now)
	if errors.Is(err, queue.ErrConflict) {
		return
	}
	if err != nil {
		e.t.Fatalf("submit with the key after the fault: %v", err)
	}
	got, err := e.reopen().Get(ctx, res.Task.Ref())
	if err != nil {
		e.t.Fatalf("submit with the key after the fault answered task %s (deduplicated %v), which cannot be read: %v", res.Task.ID, res.Deduplicated, err)
	}
	if got.Status.Terminal() || got.DedupKey != "k" {
		e.t.Fatalf("submit with the key after the fault answered task %s, which is %s with key %q", got.ID, got.Status, got.DedupKey)
	}
}

// isRefusal reports whether err is a refusal a repeated call may meet
// (its first call landed): not a store failure.
func isRefusal(err error) bool {
	var se *queue.StateError
	return errors.As(err, &se) || errors.Is(err, queue.ErrNotRunning) || errors.Is(err, queue.ErrNotFound) ||
		errors.Is(err, queue.ErrLeaseMismatch) || errors.Is(err, queue.ErrConflict)
}

// noDoubleRun claims from a fresh process at now and fails if it gets a
// task whose lease is still valid, or if the one-slot queue would then
// run two tasks.
func (e *env) noDoubleRun(now time.Time) {
	e.t.Helper()
	held := map[string]bool{}
	for id, task := range e.records() {
		if task.Status == queue.StatusRunning && task.LeaseExpiresAt != nil && now.Before(*task.LeaseExpiresAt) {
			held[id] = true
		}
	}
	cs, err := e.reopen().Claim(ctx, queue.ClaimRequest{Queue: attackQueue, LeaseFor: attackLease}, now)
	if err != nil {
		e.t.Fatalf("claim after the fault: %v", err)
	}
	for _, c := range cs {
		if held[c.Task.ID] {
			e.t.Fatalf("task %s claimed while its lease was valid", c.Task.ID)
		}
	}
	if len(held)+len(cs) > 1 {
		e.t.Fatalf("%d tasks of a queue of max_concurrency 1 run at once", len(held)+len(cs))
	}
}

// attackRecover is the next process: well past every lease, deadline
// and grace, it claims and completes what is there and sweeps, and then
// every task must be finished, every hint gone, every slot and dedup key
// free and no event owed.
func attackRecover(t testing.TB, e *env, from time.Time) {
	t.Helper()
	q := e.reopen()
	now := from.Add(time.Hour)
	for i := 0; i < 8; i++ {
		if _, err := q.Sweep(ctx, now, queue.SweepOptions{}); err != nil {
			t.Fatalf("recovery sweep: %v", err)
		}
		// The parent is left to expire: its cascade settles its
		// children's hints.
		cs, err := q.Claim(ctx, queue.ClaimRequest{Queue: attackQueue, TaskTypes: []string{"x"}, MaxTasks: 10}, now)
		if err != nil {
			t.Fatalf("recovery claim: %v", err)
		}
		for _, c := range cs {
			if err := completeTask(q, c.Task.Ref(), c.Lease.Token, now); err != nil && !errors.Is(err, queue.ErrNotRunning) {
				t.Fatalf("recovery complete: %v", err)
			}
		}
		q.Flush()
		now = now.Add(time.Hour)
	}
	if _, err := q.Sweep(ctx, now, queue.SweepOptions{}); err != nil {
		t.Fatalf("recovery sweep: %v", err)
	}
	for id, got := range e.records() {
		if got.PurgedAt != nil {
			continue // a tombstone is left to the bucket's lifecycle rule
		}
		if !got.Status.Terminal() {
			t.Fatalf("after recovery task %s is %s, want it finished (nothing lost)", id, got.Status)
		}
		if (got.Status == queue.StatusExpired && got.ExpiryEventSentAt == nil) ||
			(got.Status == queue.StatusFailed && got.DeadLetterEventSentAt == nil) {
			t.Fatalf("after recovery task %s is %s with its event still owed", id, got.Status)
		}
	}
	if m := e.markers(); len(m) != 0 {
		t.Fatalf("markers left after recovery: %v", m)
	}
	if h := e.liveHints(); len(h) != 0 {
		t.Fatalf("hints left after recovery: %v", h)
	}
	// The dedup key is free: a new submit makes a new task, and it runs.
	res, err := q.Submit(ctx, attackSubmit(""), now)
	if err != nil {
		t.Fatalf("submit after recovery: %v", err)
	}
	if res.Deduplicated || res.Task.Status != queue.StatusPending {
		t.Fatalf("submit after recovery: deduplicated %v to %s (%s), want a new pending task", res.Deduplicated, res.Task.ID, res.Task.Status)
	}
	cs, err := q.Claim(ctx, queue.ClaimRequest{Queue: attackQueue, LeaseFor: attackLease}, now)
	if err != nil || len(cs) != 1 || cs[0].Task.ID != res.Task.ID {
		t.Fatalf("claim after recovery: %d tasks (%v), want %s: its slot is not free", len(cs), err, res.Task.ID)
	}
	if err := completeTask(q, cs[0].Task.Ref(), cs[0].Lease.Token, now); err != nil {
		t.Fatal(err)
	}
	q.Flush()
	e.wantHolders(attackQueue)
	e.consistent()
}

// liveHints is hints less the flags of parents whose records are still
// there, not purged (a flag says a parent has or had children: it goes
// with its cascade or its purge).
func (e *env) liveHints() []string {
	recs := e.records()
	var out []string
	for _, k := range e.hints() {
		if id, ok := strings.CutSuffix(k[strings.LastIndexByte(k, '/')+1:], ".flag"); ok {
			if p, ok := recs[id]; ok && p.PurgedAt == nil {
				continue
			}
		}
		out = append(out, k)
	}
	return out
}
