package queuetest

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sort"
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

// newAttackEnv is an env with the one-slot queue declared.
func newAttackEnv(t testing.TB, f Factory, opts ...func(*queue.Options)) *env {
	e := newEnv(t, f, opts...)
	e.declare(queues.Declaration{Name: attackQueue, MaxConcurrency: 1}, t0)
	return e
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

func wantState(t testing.TB, err error, status queue.Status) {
	t.Helper()
	var se *queue.StateError
	if !errors.As(err, &se) || se.Status != status {
		t.Fatalf("err = %v, want a *queue.StateError in status %s", err, status)
	}
}

const crashLease = time.Minute

// recoverAll is the next process: it claims and completes whatever is
// there, well past every lease and the stale-marker grace, and then
// sweeps, which publishes what the crashed process left owed.
func recoverAll(t *testing.T, e *env, from time.Time) {
	t.Helper()
	q := e.reopen()
	now := from.Add(time.Hour)
	defer func() {
		if _, err := q.Sweep(ctx, now, queue.SweepOptions{}); err != nil {
			t.Fatalf("recovery sweep: %v", err)
		}
	}()
	for i := 0; i < 20; i++ {
		cs, err := q.Claim(ctx, queue.ClaimRequest{MaxTasks: 10}, now)
		if err != nil {
			t.Fatalf("recovery claim: %v", err)
		}
		for _, c := range cs {
			if _, err := q.Complete(ctx, queue.CompleteRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token}, now); err != nil && !errors.Is(err, queue.ErrNotRunning) {
				t.Fatalf("recovery complete: %v", err)
			}
		}
		now = now.Add(time.Hour)
		if len(cs) == 0 && i > 2 {
			return
		}
	}
}

// claimedOver claims the one task of e's store at t0 for a minute through
// a new Queue over s (e's store, wrapped): a worker process whose cache
// holds the claimed record.
func (e *env) claimedOver(s store.Store) (*queue.Queue, queue.Claimed) {
	e.t.Helper()
	worker := e.open(s)
	cs, err := worker.Claim(ctx, queue.ClaimRequest{LeaseFor: time.Minute}, t0)
	if err != nil || len(cs) != 1 {
		e.t.Fatalf("claim: %v %d", err, len(cs))
	}
	return worker, cs[0]
}

// Lost answers: each write of each transition lands and
// its answer is lost, the process lives on. Every case checks what the
// caller sees and what is left in the bucket: one task per id, markers
// and dedup pointers consistent, no key blocked.

// newLossEnv returns an env whose store fails chosen writes on demand.
func newLossEnv(t testing.TB, f Factory, opts ...func(*queue.Options)) (*env, *storefault.Store) {
	e := newEnv(t, f, opts...)
	fs := storefault.New(e.s)
	e.s = fs
	e.q, e.decls = queues.New(fs, e.options())
	return e, fs
}

// lose arms the next write of kind op under prefix to land with its
// answer lost.
func lose(fs *storefault.Store, op, prefix string) {
	fs.FailMatching(op, prefix, storefault.LoseAnswer, 1)
}

// wantHits fails unless the armed fault hit n writes: a case whose fault
// never fired proves nothing.
func wantHits(t testing.TB, fs *storefault.Store, n int) {
	t.Helper()
	if got := fs.Hits(); got != n {
		t.Fatalf("the armed fault hit %d writes, want %d", got, n)
	}
}

// records returns every stored task record by id.
func (e *env) records() map[string]queue.Task {
	e.t.Helper()
	out := map[string]queue.Task{}
	for _, k := range e.inQueues("/tasks/") {
		obj, err := e.s.Get(ctx, k)
		if err != nil {
			e.t.Fatalf("get %s: %v", k, err)
		}
		var task queue.Task
		if err := json.Unmarshal(obj.Body, &task); err != nil {
			e.t.Fatalf("decode %s: %v", k, err)
		}
		out[task.ID] = task
	}
	return out
}

// consistent checks the invariants a lost answer must not break: every
// marker is named by its record and every record's marker exists; every
// dedup pointer is free or names a task that holds its key (no key is
// blocked by a task that does not exist); at most one live task holds a
// key.
func (e *env) consistent() {
	e.t.Helper()
	recs := e.records()
	for id, task := range recs {
		if task.PurgedAt != nil {
			delete(recs, id) // a purge's tombstone: the task is gone
		}
	}
	named := map[string]string{}
	for id, task := range recs {
		if task.IndexKey != "" {
			named[task.IndexKey] = id
		}
	}
	markers := map[string]bool{}
	for _, k := range e.markers() {
		markers[k] = true
		if _, ok := named[k]; !ok {
			e.t.Errorf("marker %s is named by no record", k)
		}
	}
	for k, id := range named {
		if !markers[k] {
			e.t.Errorf("task %s names marker %s, which is missing", id, k)
		}
	}
	live := map[string]string{}
	for id, task := range recs {
		if task.DedupKey == "" || task.Status.Terminal() {
			continue
		}
		k := queue.DedupKey(task.Queue, task.DedupKey)
		if other, ok := live[k]; ok {
			e.t.Errorf("dedup key %q is held by two live tasks, %s and %s", task.DedupKey, other, id)
		}
		live[k] = id
	}
	for _, k := range e.inQueues("/dedup/") {
		named := e.taskIDIn(k)
		if named == "" {
			continue // released
		}
		task, ok := recs[named]
		if !ok {
			e.t.Errorf("dedup pointer %s names task %s, which does not exist", k, named)
			continue
		}
		if queue.DedupKey(task.Queue, task.DedupKey) != k {
			e.t.Errorf("dedup pointer %s names task %s, which does not hold its key", k, named)
		}
		if id, ok := live[k]; ok && id != named {
			e.t.Errorf("dedup pointer %s names %s while live task %s holds the key", k, named, id)
		}
	}
}

func wantTasks(t testing.TB, e *env, n int) {
	t.Helper()
	if got := len(e.inQueues("/tasks/")); got != n {
		t.Fatalf("%d task records, want %d", got, n)
	}
}

// wantNothingOf fails unless no key and no stored body names task id,
// the purged task (a dedup pointer naming it counts), but for the
// tombstone a crash after a purge's commit may leave: read as gone,
// without the task's data, tagged for the lifecycle rule.
func (e *env) wantNothingOf(id string) {
	e.t.Helper()
	for _, k := range e.allKeys() {
		obj, err := e.s.Get(ctx, k)
		if err != nil {
			e.t.Fatal(err)
		}
		if !strings.Contains(k, id) && !strings.Contains(string(obj.Body), id) {
			continue
		}
		if k == e.recordKey(id) {
			var tomb map[string]any
			if err := json.Unmarshal(obj.Body, &tomb); err == nil && tomb["purged_at"] != nil && tomb["input"] == nil {
				continue
			}
		}
		e.t.Errorf("%s of the purged task %s is left: %s", k, id, obj.Body)
	}
}

func ids(ts []queue.Task) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.ID
	}
	return out
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

func (e *env) declare(d queues.Declaration, now time.Time) queues.Declaration {
	e.t.Helper()
	out, _, err := e.decls.Declare(ctx, d, now)
	if err != nil {
		e.t.Fatalf("declare %s: %v", d.Name, err)
	}
	return out
}

func (e *env) list(req queue.ListRequest) []queue.Task {
	e.t.Helper()
	res, err := e.q.List(ctx, req)
	if err != nil {
		e.t.Fatalf("list: %v", err)
	}
	return res.Tasks
}

// Workers is the number of concurrent claimers in the race cases.
const Workers = 16

func ptrTo[T any](v T) *T { return &v }

// listed is a store that notes the prefix of each LIST.
type listed struct {
	store.Store
	mu       sync.Mutex
	prefixes []string
}

func (l *listed) List(ctx context.Context, prefix, startAfter string, limit int) (store.Page, error) {
	l.mu.Lock()
	l.prefixes = append(l.prefixes, prefix)
	l.mu.Unlock()
	return l.Store.List(ctx, prefix, startAfter, limit)
}

// smallPages is a store whose LIST pages hold at most n keys, as a
// bigger backlog would fill them.
type smallPages struct {
	store.Store
	n int
}

func (s smallPages) List(ctx context.Context, prefix, startAfter string, limit int) (store.Page, error) {
	if limit <= 0 || limit > s.n {
		limit = s.n
	}
	return s.Store.List(ctx, prefix, startAfter, limit)
}

// wantHolders fails unless the tasks that hold a slot of the named
// queue are ids, slot by slot (a free slot holds none).
func (e *env) wantHolders(name string, ids ...string) {
	e.t.Helper()
	var held []string
	for _, k := range e.keys("q/" + name + "/slots/") {
		if id := e.taskIDIn(k); id != "" {
			held = append(held, id)
		}
	}
	if !slices.Equal(held, ids) {
		e.t.Fatalf("slots of %s held by %v, want %v", name, held, ids)
	}
}

func wantKeys(t testing.TB, what string, got []string, want ...string) {
	t.Helper()
	sort.Strings(want)
	got = append([]string(nil), got...)
	sort.Strings(got)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("%s = %v, want %v", what, got, want)
	}
}
