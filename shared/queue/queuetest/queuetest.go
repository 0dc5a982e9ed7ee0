// Package queuetest is the conformance suite of the queue core: the same
// cases run against every store (the in-memory store, the in-process
// gofakes3 server and versitygw), so behaviour is proven on real
// S3-compatible servers and stays fast in unit runs.
//
// Cases are named as sentences. Time is always a parameter: tests pass a
// fixed microsecond-aligned UTC time and move it forward instead of
// sleeping.
//
// The stores are the top-level tests (TestConformanceMem,
// TestConformanceGoFakeS3, TestConformanceVersityGW) and the groups of
// Run their subtests, so one group runs on every store with, for example,
// go test ./shared/queue/queuetest/ -run 'TestConformance/bulk_race'.
package queuetest

import (
	"context"
	"encoding/json"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/store"
)

// Factory makes a fresh, empty store for one test.
type Factory struct {
	Name string
	// New returns an empty store (for a server: a fresh key prefix).
	New func(t testing.TB) store.Store
	// Real is true for S3-compatible servers; the concurrency cases run
	// with more goroutines there.
	Real bool
}

// Run runs every case against f.
func Run(t *testing.T, f Factory) {
	t.Run("submit", func(t *testing.T) { runSubmit(t, f); runSubmitWithID(t, f) })
	t.Run("claim", func(t *testing.T) { runClaim(t, f); runScan(t, f); runPriority(t, f); runTrace(t, f) })
	t.Run("priority_attack", func(t *testing.T) { runPriorityAttack(t, f) })
	t.Run("lease", func(t *testing.T) { runLease(t, f); runRetryWait(t, f); runReplay(t, f) })
	t.Run("cancel_retry_expire", func(t *testing.T) { runCancel(t, f); runCancelRules(t, f); runOwed(t, f); runPresent(t, f) })
	t.Run("list_history", func(t *testing.T) { runList(t, f); runListCost(t, f) })
	t.Run("race", func(t *testing.T) { runRace(t, f) })
	t.Run("crash", func(t *testing.T) { runCrash(t, f) })
	t.Run("sweep", func(t *testing.T) { runSweep(t, f); runSweepQueues(t, f) })
	t.Run("lost_answer", func(t *testing.T) { runLost(t, f) })
	t.Run("side_records", func(t *testing.T) { runSides(t, f) })
	t.Run("queues", func(t *testing.T) { runQueues(t, f) })
	t.Run("ops", func(t *testing.T) { runOps(t, f) })
	t.Run("bulk_race", func(t *testing.T) { runBulkRace(t, f) })
	t.Run("round_trips", func(t *testing.T) { runFast(t, f) })
	t.Run("attack", func(t *testing.T) { runAttack(t, f) })
	t.Run("waits", func(t *testing.T) { runWaits(t, f) })
	t.Run("rate_limit", func(t *testing.T) { runRateLimit(t, f) })
	t.Run("rate_limit_attack", func(t *testing.T) { runRateLimitAttack(t, f) })
}

// t0 is the fixed start of every case's clock.
var t0 = time.Date(2026, 1, 28, 9, 0, 0, 0, time.UTC)

var ctx = context.Background()

// env is one case's queue, and the registry of its declared queues,
// over a fresh store.
type env struct {
	t     testing.TB
	s     store.Store
	q     *queue.Queue
	decls *queues.Registry
	op    queue.Options  // the core's options of every process of the case
	dop   queues.Options // and its declarations'
}

func newEnv(t testing.TB, f Factory, opts ...func(*queue.Options)) *env {
	t.Helper()
	return newDeclEnv(t, f, queues.Options{}, opts...)
}

// newDeclEnv is newEnv with the declarations' options d.
func newDeclEnv(t testing.TB, f Factory, d queues.Options, opts ...func(*queue.Options)) *env {
	t.Helper()
	var o queue.Options
	// Deterministic backoff: 10s for the first retry, doubling.
	o.Backoff = func(attempt int) time.Duration { return 10 * time.Second << (attempt - 1) }
	for _, fn := range opts {
		fn(&o)
	}
	e := &env{t: t, s: f.New(t), op: o, dop: d}
	e.q, e.decls = queues.New(e.s, e.options())
	return e
}

// reopen returns a new Queue over the same store: a fresh process.
func (e *env) reopen() *queue.Queue { return e.open(e.s) }

// reopenDecls returns the registry of a fresh process over the same
// store, with nothing cached.
func (e *env) reopenDecls() *queues.Registry {
	_, r := queues.New(e.s, e.options())
	return r
}

// open returns a fresh process's Queue over s (a wrapper of the env's
// store: counting, faulty, gated), its declarations read through s too.
func (e *env) open(s store.Store) *queue.Queue { return queues.NewQueue(s, e.options()) }

// options are the options of every process of the case: the
// declarations' with the core's.
func (e *env) options() queues.Options {
	o := e.dop
	o.Core = e.op
	return o
}

// stats reads a queue's declaration and its stats, as GET
// /queues/{queue}/stats does.
func (e *env) stats(name string, now time.Time) (queue.QueueStats, error) {
	d, err := e.decls.Get(ctx, name, now)
	if err != nil {
		return queue.QueueStats{}, err
	}
	return e.q.Stats(ctx, d.Settings(), now)
}

func (e *env) submit(req queue.SubmitRequest, now time.Time) queue.Task {
	e.t.Helper()
	if req.TaskType == "" {
		req.TaskType = "email.send"
	}
	res, err := e.q.Submit(ctx, req, now)
	if err != nil {
		e.t.Fatalf("submit: %v", err)
	}
	return res.Task
}

func (e *env) claim(req queue.ClaimRequest, now time.Time) []queue.Claimed {
	e.t.Helper()
	cs, err := e.q.Claim(ctx, req, now)
	if err != nil {
		e.t.Fatalf("claim: %v", err)
	}
	return cs
}

func (e *env) claimOne(now time.Time) queue.Claimed {
	e.t.Helper()
	cs := e.claim(queue.ClaimRequest{}, now)
	if len(cs) != 1 {
		e.t.Fatalf("claim at %s: got %d tasks, want 1", now.Format(time.RFC3339), len(cs))
	}
	return cs[0]
}

func (e *env) claimNone(now time.Time) {
	e.t.Helper()
	if cs := e.claim(queue.ClaimRequest{}, now); len(cs) != 0 {
		e.t.Fatalf("claim at %s: got task %s (%s), want none", now.Format(time.RFC3339), cs[0].Task.ID, cs[0].Task.Status)
	}
}

func (e *env) get(id string) queue.Task {
	e.t.Helper()
	task, err := e.q.Get(ctx, e.ref(id))
	if err != nil {
		e.t.Fatalf("get %s: %v", id, err)
	}
	return task
}

// recordKey returns the key of the record a task reference names (a
// bare id is in the default queue).
func (e *env) recordKey(ref string) string {
	e.t.Helper()
	name, id, err := queue.ParseRef(e.ref(ref), queue.DefaultQueue)
	if err != nil {
		e.t.Fatal(err)
	}
	return queue.TaskKey(name, id)
}

// ref returns a task reference as given, or, for a bare id, the reference
// of the one task of that id in any queue (a test's convenience: ids are
// unique per queue only), or the id itself when there is none.
func (e *env) ref(ref string) string {
	if strings.Contains(ref, "/") || queue.ValidateID(ref) != nil {
		return ref
	}
	found, err := FindTask(ctx, e.s, ref)
	if err != nil {
		e.t.Fatal(err)
	}
	if found == "" {
		return ref
	}
	return found
}

// FindTask returns the reference ("queue/id") of the one task of id in any
// queue of s, or "" when there is none: a test's convenience, as ids are
// unique per queue only. It lists the queues' folders and HEADs the task
// record in each.
func FindTask(ctx context.Context, s store.Store, id string) (string, error) {
	for dir, err := range store.AllDirs(ctx, s, queue.QueuesPrefix) {
		if err != nil {
			return "", err
		}
		name := strings.TrimSuffix(strings.TrimPrefix(dir, queue.QueuesPrefix), "/")
		if _, err := s.Head(ctx, queue.TaskKey(name, id)); err == nil {
			return queue.Ref(name, id), nil
		}
	}
	return "", nil
}

// raw returns the stored bytes of a task record.
func (e *env) raw(id string) []byte {
	e.t.Helper()
	obj, err := e.s.Get(ctx, e.recordKey(id))
	if err != nil {
		e.t.Fatalf("get raw %s: %v", id, err)
	}
	return obj.Body
}

// keys lists every key under prefix.
func (e *env) keys(prefix string) []string {
	e.t.Helper()
	var out []string
	for it, err := range store.All(ctx, e.s, prefix) {
		if err != nil {
			e.t.Fatalf("list %s: %v", prefix, err)
		}
		out = append(out, it.Key)
	}
	sort.Strings(out)
	return out
}

// markers returns every index marker: ready/, deadline/ and the parked
// leases of the sweep index (sweep/{time}_lease_{id}).
func (e *env) markers() []string {
	var out []string
	for _, p := range []string{"/index/ready/", "/index/deadline/"} {
		out = append(out, e.inQueues(p)...)
	}
	for _, k := range e.keys("sweep/") {
		if strings.Contains(k, "_lease_") {
			out = append(out, k)
		}
	}
	return out
}

// hints returns the hints that wait for work: outbox and artifact entries
// of the sweep index and children/ markers (not wake-ups, which wakeups
// returns, nor parked leases, which markers returns).
func (e *env) hints() []string {
	var out []string
	for _, k := range e.keys("sweep/") {
		if strings.Contains(k, "_event_") || strings.Contains(k, "_artifacts_") {
			out = append(out, k)
		}
	}
	return append(out, e.inQueues("/children/")...)
}

// inQueues returns the keys of every queue's folder whose folder below
// the queue is dir ("/index/ready/", "/children/", ...), queue by queue.
func (e *env) inQueues(dir string) []string {
	var out []string
	for _, k := range e.keys("q/") {
		rest := strings.TrimPrefix(k, "q/")
		if i := strings.IndexByte(rest, '/'); i >= 0 && strings.HasPrefix(rest[i:], dir) {
			out = append(out, k)
		}
	}
	return out
}

// wakeups returns the wake-ups of the deadline index (sweep/wake/).
func (e *env) wakeups() []string { return e.keys("sweep/wake/") }

// allKeys returns every key in the store.
func (e *env) allKeys() []string { return e.keys("") }

func wantStatus(t testing.TB, task queue.Task, want queue.Status) {
	t.Helper()
	if task.Status != want {
		t.Fatalf("task %s status = %s, want %s", task.ID, task.Status, want)
	}
}

func wantTime(t testing.TB, name string, got *time.Time, want time.Time) {
	t.Helper()
	if got == nil {
		t.Fatalf("%s = nil, want %s", name, want.Format(time.RFC3339Nano))
	}
	if !got.Equal(want) {
		t.Fatalf("%s = %s, want %s", name, got.Format(time.RFC3339Nano), want.Format(time.RFC3339Nano))
	}
}

func at(t time.Time) *time.Time { return &t }

func jsonOf(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// allHistory returns every version of a task's record, oldest first: the
// pages of Queue.History, 1,000 at a time, reversed.
func allHistory(q *queue.Queue, ref string) ([]queue.HistoryEntry, error) {
	var out []queue.HistoryEntry
	req := queue.HistoryRequest{ID: ref, Limit: 1000}
	for {
		res, err := q.History(ctx, req)
		if err != nil {
			return nil, err
		}
		out = append(out, res.Versions...)
		if res.NextCursor == "" || res.NextCursor == req.Cursor {
			slices.Reverse(out)
			return out, nil
		}
		req.Cursor = res.NextCursor
	}
}
