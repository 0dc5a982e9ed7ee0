// Package queue is the s3q task queue core: the task model and every state
// transition, over a store.Store. Each transition is one conditional write
// of the task record (q/{queue}/tasks/{r}/{id}.json, keys.go); index markers around it are hints
// that make "what is due now" cheap to find, written before the record
// names them and deleted after it stops naming them.
//
// Every time-dependent call takes now explicitly; the core never reads the
// clock. now is truncated to microseconds and converted to UTC.
//
// What a queue's declaration says (its defaults, shards, max_concurrency,
// whether it is paused) the core reads through one method,
// Declarations.Settings (declarations.go); package queues owns the
// declarations themselves and builds a Queue with them (queues.Open).
//
// The contract, operation by operation, is on the methods of Queue. Errors
// are the sentinels and types in errors.go, wrapped; a failed call changes
// nothing (a stale marker is the most it can leave behind, and the next
// scan repairs it).
package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/s3q/s3q/shared/internal/clip"
	"github.com/s3q/s3q/shared/store"
)

// Defaults applied to a submit that names none.
const (
	DefaultQueue       = "default"
	DefaultMaxAttempts = 3
	DefaultTimeout     = 5 * time.Minute
)

// TypeDefaults are per-task-type defaults (config/task_types.json in the
// bucket, loaded by a DefaultsSource). Zero fields do not apply.
type TypeDefaults struct {
	TTL         *time.Duration
	TTLFrom     TTLFrom
	MaxAttempts int
	Timeout     time.Duration
}

// DefaultsSource supplies per-task-type defaults. Lookup returns false when
// the type has none.
type DefaultsSource interface {
	TaskTypeDefaults(ctx context.Context, taskType string, now time.Time) (TypeDefaults, bool, error)
}

// Options tune a Queue. The zero value is ready to use. What a queue's
// declaration says (its defaults, shards, max_concurrency, whether it is
// paused), and whether queues must be declared, is not here: the core
// reads it through Declarations (package queues, with its own options).
type Options struct {
	// DefaultTTL applies to submits that give no ttl and whose task type
	// has no default. Defaults to none (tasks never expire).
	DefaultTTL time.Duration

	// TypeDefaults supplies per-task-type defaults. Defaults to none.
	TypeDefaults DefaultsSource

	// Backoff returns the delay before retry number attempt (1 for the
	// first retry). Defaults to ExponentialBackoff(2s, 1h) with jitter.
	Backoff func(attempt int) time.Duration

	// ListCacheFor is how long one LIST of an index prefix serves later
	// claims by this Queue before it is listed again. A task submitted
	// through another process becomes visible to this one within this
	// time; this Queue's own writes are visible at once. Defaults to 1s;
	// a negative value lists on every claim.
	ListCacheFor time.Duration

	// StaleMarkerGrace is how far behind now a marker's time must be before
	// a scan deletes it as stale (its record does not name it). A writer
	// puts a marker a moment before its record names it; the grace keeps
	// scans from deleting such a marker in that moment. Defaults to 2m.
	StaleMarkerGrace time.Duration

	// MaxScanPages bounds the LIST pages one claim reads per index prefix
	// when the pages before hold nothing it can take (running tasks,
	// other task types, deadlines not yet available). Defaults to 20.
	MaxScanPages int

	// NewID makes task ids. Defaults to NewID (UUIDv7 from now).
	NewID func(now time.Time) string

	// BackgroundCleanup deletes the hints a transition leaves behind (the
	// index marker of a task that completes, fails or is rescheduled, its
	// status/ and children/ markers, its concurrency slot) after the
	// transition returns, in the background, instead of before: a
	// complete is then one round trip to S3, not two. Flush waits for
	// them. A process that stops first (a Lambda container frozen after
	// its answer, then never thawed) leaves them behind as stale hints,
	// which scans delete when they meet them, as after a crash. Defaults
	// to false: every hint is settled before the call returns.
	BackgroundCleanup bool
}

// Queue is the task queue over one store. It is safe for concurrent use,
// and one Queue per process is the intended use: it keeps a small cache of
// index listings and of tasks known to be leased, which saves requests.
// In returns a view of it limited to the tasks of one queue.
type Queue struct {
	*state
	// scope, when set, is the only queue whose tasks this view acts on.
	scope string
}

// state is what the views of one Queue share.
type state struct {
	store store.Store
	opts  Options
	// decls is where the queues' declarations are read from.
	decls Declarations

	mu    sync.Mutex
	bufs  map[string]*scanBuf  // index prefix -> last listing
	skip  map[string]time.Time // marker key -> skip until
	types map[string]string    // task id -> task type (immutable)
	// notes holds, per index root, the LISTs of it in flight, each noting
	// this Queue's writes to it meanwhile (scan.go).
	notes map[string][]*listNotes
	// listing holds, per index prefix, the channel a LIST in flight
	// closes when it is done.
	listing map[string]chan struct{}
	// wakes are the wake-up keys this Queue has written (see wake).
	wakes map[string]bool
	// parents are the tasks this Queue has flagged as parents.
	parents map[string]bool
	// slots caches, per slot key, until when it is known to be held.
	slots map[string]time.Time
	// slotLists caches the last LIST of each queue's slots.
	slotLists map[string]slotListing
	// lastLoss is when a claim of this Queue last lost a race.
	lastLoss time.Time
	// recs caches the last version of live records (recs.go); recBytes
	// is about what they hold.
	recs     map[string]cachedRec
	recBytes int
	// cleanups counts the background cleanups in flight (Flush).
	cleanups sync.WaitGroup
	// arrivals holds, per queue, the channel closed when this Queue next
	// writes a claimable marker of it (Arrivals).
	arrivals map[string]chan struct{}
}

// New returns a Queue over s that reads the queues' declarations from
// decls. It panics when decls is nil: a Queue without declarations would
// skip them silently. queues.Open builds a Queue with its declarations;
// that is the usual way to make one.
func New(s store.Store, decls Declarations, opts Options) *Queue {
	if decls == nil {
		panic("queue: New needs the queues' Declarations (queues.Open builds both)")
	}
	if opts.Backoff == nil {
		opts.Backoff = ExponentialBackoff(2*time.Second, time.Hour)
	}
	if opts.ListCacheFor == 0 {
		opts.ListCacheFor = time.Second
	}
	if opts.StaleMarkerGrace <= 0 {
		opts.StaleMarkerGrace = 2 * time.Minute
	}
	if opts.MaxScanPages <= 0 {
		opts.MaxScanPages = 20
	}
	if opts.NewID == nil {
		opts.NewID = NewID
	}
	return &Queue{state: &state{
		store: s, opts: opts, decls: decls,
		bufs: make(map[string]*scanBuf), skip: make(map[string]time.Time), types: make(map[string]string),
		listing: make(map[string]chan struct{}),
		wakes:   make(map[string]bool), parents: make(map[string]bool),
		slots: make(map[string]time.Time), slotLists: make(map[string]slotListing),
		recs: make(map[string]cachedRec), arrivals: make(map[string]chan struct{}),
	}}
}

// In returns a view of q that acts only on the tasks of the named queue:
// every operation by task id (Get, History, the lease
// operations, Cancel, Retry, Expire, ...) answers ErrNotFound for a task
// of another queue, as if it did not exist, and writes nothing. The view
// shares q's caches; the name must be valid (ValidateQueueName).
func (q *Queue) In(name string) *Queue { return &Queue{state: q.state, scope: name} }

// scoped applies a view's scope (In) to the queue a request names: empty
// becomes the scope, another name is a *ValidationError of field.
func (q *Queue) scoped(field, name string) (string, error) {
	if q.scope == "" || name == q.scope {
		return name, nil
	}
	if name == "" {
		return q.scope, nil
	}
	return "", invalid(field, "is %q, but the request is addressed to queue %q", clip.Input(name), q.scope)
}

// Store returns the store the queue works on.
func (q *Queue) Store() store.Store { return q.store }

// ExponentialBackoff returns a backoff of base·2^(attempt-1), capped at
// max, with equal jitter: a uniformly random value in [d/2, d).
func ExponentialBackoff(base, max time.Duration) func(attempt int) time.Duration {
	return func(attempt int) time.Duration {
		if attempt < 1 {
			attempt = 1
		}
		d := base
		for i := 1; i < attempt && d < max; i++ {
			d *= 2
		}
		if d > max {
			d = max
		}
		half := d / 2
		return half + time.Duration(rand.Int64N(int64(half)+1))
	}
}

// norm is the one place now is normalised: UTC, microseconds.
func norm(now time.Time) time.Time { return now.UTC().Truncate(time.Microsecond) }

// TerminalTag is the object tag of a task record in a terminal status
// (completed, failed, cancelled, expired, archived), and of its status
// marker: the stack's lifecycle rule (on q/, by this tag: a lifecycle
// filter cannot wildcard the queue) deletes them after its retention
// period. A retried task loses it on its next write.
const TerminalTag = "s3q-terminal=true"

// taskPutOptions are the options of a write of task record t: a terminal
// record carries TerminalTag (infra: TerminalTagKey), by which the
// bucket's lifecycle rule deletes it after the retention period.
func taskPutOptions(t *Task) []store.PutOption {
	if t.Status.Terminal() {
		return []store.PutOption{store.WithTags(TerminalTag)}
	}
	return nil
}

// maxCASAttempts bounds a read-modify-write loop that keeps losing races.
const maxCASAttempts = 8

// load reads and decodes the record of task id in queue.
func (q *Queue) load(ctx context.Context, queue, id string) (Task, string, error) {
	if q.scope != "" && queue != q.scope {
		return Task{}, "", fmt.Errorf("task %s in queue %s: %w", id, q.scope, ErrNotFound)
	}
	obj, err := q.store.Get(ctx, TaskKey(queue, id))
	if errors.Is(err, store.ErrNotFound) {
		return Task{}, "", fmt.Errorf("task %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return Task{}, "", fmt.Errorf("get task %s: %w", id, err)
	}
	var t Task
	if err := decodeTask(obj.Body, &t); err != nil {
		return Task{}, "", fmt.Errorf("decode task %s: %w", id, err)
	}
	if t.Queue != queue || t.ID != id {
		return Task{}, "", fmt.Errorf("task %s: record at %s names %s: %w", id, TaskKey(queue, id), t.Ref(), ErrNotFound)
	}
	q.remember(&t, obj.ETag)
	if t.PurgedAt != nil {
		return Task{}, "", fmt.Errorf("task %s: %w", id, errPurged)
	}
	return t, obj.ETag, nil
}

func decodeTask(b []byte, t *Task) error { return json.Unmarshal(b, t) }

func encode(t *Task) ([]byte, error) {
	b, err := json.Marshal(t)
	if err != nil {
		return nil, fmt.Errorf("encode task %s: %w", t.ID, err)
	}
	return b, nil
}

// commit replaces cur (read with etag) by next in one conditional write,
// with the marker protocol around it: a marker next names and cur does not
// is written first; a marker cur names and next does not is deleted after.
// A lost race returns store.ErrPrecondition with the record unchanged; a
// marker written for it is left as a stale hint (never deleted here: a
// winner may name the same key).
//
// The same protocol keeps two more hints: an outbox entry is written
// before a transition that owes follow-up work (followUpDue: an event, a
// cascade, artifact deletion), and a child's children/ marker exists while
// the child is not terminal (written before it revives, deleted after it
// finishes), and a task in a rare status (failed, expired, cancelled) has
// its status/ marker (written before it enters the status, deleted after
// it leaves it).
func (q *Queue) commit(ctx context.Context, cur *Task, etag string, next *Task) (string, error) {
	body, err := encode(next)
	if err != nil {
		return "", err
	}
	if next.IndexKey != "" && next.IndexKey != cur.IndexKey {
		if err := q.putMarker(ctx, next.IndexKey, next.UpdatedAt); err != nil {
			return "", err
		}
	}
	if followUpDue(cur, next) {
		if err := q.putHint(ctx, outboxKey(next)); err != nil {
			return "", err
		}
	}
	if next.ParentID != "" && cur.Status.Terminal() && !next.Status.Terminal() {
		if err := q.putChildHints(ctx, next.Queue, next.ParentID, next.ID); err != nil {
			return "", err
		}
	}
	if k := statusKey(next); k != "" && next.Status != cur.Status {
		if err := q.putHint(ctx, k, taskPutOptions(next)...); err != nil {
			return "", err
		}
	}
	// A lost answer is recognised on a re-read (a lease token or an update
	// time makes every body of ours unique).
	newETag, err := store.SwapOwn(ctx, q.store, TaskKey(next.Queue, next.ID), body, etag, nil, taskPutOptions(next)...)
	if err != nil {
		q.forget(next.Queue, next.ID)
		return "", fmt.Errorf("write task %s: %w", next.ID, err)
	}
	q.remember(next, newETag)
	if next.IndexKey != cur.IndexKey {
		q.announce(next)
	}
	// What the record no longer names goes, best effort: a hint left
	// behind is stale and the next scan that meets it deletes it.
	var cleanup []func(context.Context)
	if cur.IndexKey != "" && cur.IndexKey != next.IndexKey {
		key := cur.IndexKey
		cleanup = append(cleanup, func(ctx context.Context) { _ = q.store.Delete(ctx, key) })
	}
	if next.ParentID != "" && !cur.Status.Terminal() && next.Status.Terminal() {
		key := childKey(next.Queue, next.ParentID, next.ID)
		cleanup = append(cleanup, func(ctx context.Context) { _ = q.store.Delete(ctx, key) })
	}
	if k := statusKey(cur); k != "" && next.Status != cur.Status {
		cleanup = append(cleanup, func(ctx context.Context) { _ = q.store.Delete(ctx, k) })
	}
	if cur.SlotKey != "" && (cur.SlotKey != next.SlotKey || cur.SlotETag != next.SlotETag) {
		held := *cur // taken over later if not freed (slots.go)
		cleanup = append(cleanup, func(ctx context.Context) { q.freeSlotOf(ctx, &held) })
	}
	q.clean(ctx, cleanup)
	return newETag, nil
}

// backgroundKey marks the context of a lease operation, whose cleanups
// Options.BackgroundCleanup moves off the caller's path. (The sweep's and
// the other transitions' stay in line: nobody waits on them.)
type backgroundKey struct{}

// inBackground returns ctx marked for background cleanups when the Queue
// runs them (Options.BackgroundCleanup).
func (q *Queue) inBackground(ctx context.Context) context.Context {
	if !q.opts.BackgroundCleanup {
		return ctx
	}
	return context.WithValue(ctx, backgroundKey{}, true)
}

// clean runs the cleanups of a transition: one after another before it
// returns, or, for a lease operation under Options.BackgroundCleanup, all
// at once after.
func (q *Queue) clean(ctx context.Context, fns []func(context.Context)) {
	if bg, _ := ctx.Value(backgroundKey{}).(bool); !bg {
		for _, fn := range fns {
			fn(ctx)
		}
		return
	}
	ctx = context.WithoutCancel(ctx)
	for _, fn := range fns {
		q.cleanups.Add(1)
		go func() {
			defer q.cleanups.Done()
			fn(ctx)
		}()
	}
}

// Arrivals returns a channel that is closed when this Queue next writes a
// claimable index marker of the named queue (a submit, a fail with
// retries left, a reschedule, a retry): a long-poll of a claim waits on it
// between its claims, so that work submitted through the same process
// starts at once. Work submitted elsewhere is not signalled: only a claim
// finds it. An empty name is the view's queue, else "default".
func (q *Queue) Arrivals(name string) <-chan struct{} {
	if name == "" {
		name = q.scope
	}
	if name == "" {
		name = DefaultQueue
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	ch, ok := q.arrivals[name]
	if !ok {
		if len(q.arrivals) >= maxSkip {
			for k, c := range q.arrivals {
				close(c) // its waiters claim again: harmless
				delete(q.arrivals, k)
			}
		}
		ch = make(chan struct{})
		q.arrivals[name] = ch
	}
	return ch
}

// announce makes a task this Queue has just written, pending under a
// claimable marker, a candidate of its next claim at once: the marker
// joins the cached listing (no LIST needed), and the Arrivals waiters of
// its queue wake. It runs after the record is written, not when its
// marker is: a claim that met the marker before its record existed would
// leave it alone for a while (youngMarkerSkip).
func (q *Queue) announce(t *Task) {
	if t.Status != StatusPending || indexRootOf(t.IndexKey) == "" {
		return
	}
	q.mu.Lock()
	delete(q.skip, t.IndexKey)
	q.mu.Unlock()
	q.noteMarker(t.IndexKey)
	q.arrived(t.Queue)
}

// arrived wakes the Arrivals waiters of a queue.
func (q *Queue) arrived(name string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if ch, ok := q.arrivals[name]; ok {
		close(ch)
		delete(q.arrivals, name)
	}
}

// Flush waits for the background cleanups of the transitions that have
// returned (Options.BackgroundCleanup): after it, their hints are gone.
func (q *Queue) Flush() { q.cleanups.Wait() }

// putChildHints writes the hints of a live child: its parent's flag (once
// per Queue and parent) and its own marker under the parent.
func (q *Queue) putChildHints(ctx context.Context, queue, parentID, childID string) error {
	flag := parentFlagKey(queue, parentID)
	q.mu.Lock()
	flagged := q.parents[flag]
	q.mu.Unlock()
	if !flagged {
		if err := q.putHint(ctx, flag); err != nil {
			return err
		}
		q.mu.Lock()
		if len(q.parents) >= maxSkip {
			clear(q.parents)
		}
		q.parents[flag] = true
		q.mu.Unlock()
	}
	return q.putHint(ctx, childKey(queue, parentID, childID))
}

// putHint writes an empty hint object that is not an index marker (an
// outbox entry, a child's marker). A write whose answer was lost is
// recognised on a re-read.
//
// opts tag it: a status marker carries its terminal record's TerminalTag,
// so that the bucket's lifecycle rule deletes both together.
func (q *Queue) putHint(ctx context.Context, key string, opts ...store.PutOption) error {
	if _, err := store.PutOwn(ctx, q.store, key, nil, opts...); err != nil {
		return fmt.Errorf("write %s: %w", key, err)
	}
	return nil
}

// putMarker writes an index marker at now; a deadline/ marker's queue
// gets its wake-up first (see wake). A write whose answer was lost is
// recognised on a re-read.
func (q *Queue) putMarker(ctx context.Context, key string, now time.Time) error {
	if m, ok := parseMarker(key); ok && !m.expires.IsZero() {
		if err := q.wake(ctx, m.queue, m.expires, now); err != nil {
			return err
		}
	}
	if _, err := store.PutOwn(ctx, q.store, key, nil); err != nil {
		return fmt.Errorf("write marker %s: %w", key, err)
	}
	return nil
}

// wake writes the wake-up that makes the sweep read queue's deadline
// index from the minute holding at (sweep/wake/{minute}_{queue}), before
// a marker due at at is written: so the sweep reads only the heads of
// queues that may hold something due, however many queue names exist.
// One PUT per process, queue and minute: a Queue remembers what it wrote.
//
// The sweep deletes a wake-up only once its minute is StaleMarkerGrace
// behind its now and the head it reads holds nothing due (see
// sweep_queues.go). A remembered wake-up is trusted only while its minute
// is at most a minute behind now, so a marker written on its strength is
// always seen by the sweep that deletes it (clocks a minute apart aside).
func (q *Queue) wake(ctx context.Context, queue string, at, now time.Time) error {
	key := wakeKey(queue, at)
	q.mu.Lock()
	done := q.wakes[key]
	q.mu.Unlock()
	if done && !at.Truncate(time.Minute).Before(now.Add(-time.Minute)) {
		return nil
	}
	if err := q.putHint(ctx, key); err != nil {
		return err
	}
	q.mu.Lock()
	if len(q.wakes) >= maxSkip {
		clear(q.wakes)
	}
	q.wakes[key] = true
	q.mu.Unlock()
	return nil
}

// update is the read-modify-write loop of a transition on one task: it
// loads the record, lets fn change a copy (or refuse with an error, which
// is returned with nothing written), and commits; on a lost race it reads
// again. It returns the committed record and its ETag.
//
// Its first try starts from this Queue's cached version of the record,
// when it has one (recs.go): then the common case is one conditional
// write. fn refusing the cached version, or the write finding the record
// changed, reads the record and tries again, so fn's refusals are always
// of a fresh read.
func (q *Queue) update(ctx context.Context, queue, id string, fn func(t *Task) error) (Task, string, error) {
	for i := 0; i < maxCASAttempts; i++ {
		cur, etag, fromCache := Task{}, "", false
		if i == 0 {
			cur, etag, fromCache = q.cached(queue, id)
		}
		if !fromCache {
			var err error
			if cur, etag, err = q.load(ctx, queue, id); err != nil {
				return Task{}, "", err
			}
		}
		next := cur.clone()
		if err := fn(&next); err != nil {
			if fromCache {
				q.forget(queue, id)
				continue
			}
			return Task{}, "", err
		}
		newETag, err := q.commit(ctx, &cur, etag, &next)
		if errors.Is(err, store.ErrPrecondition) {
			q.forget(queue, id)
			continue
		}
		if err != nil {
			return Task{}, "", err
		}
		return next, newETag, nil
	}
	return Task{}, "", fmt.Errorf("update task %s: %w", id, ErrConflict)
}

// Get returns the task ref names: a bare id in a view of one queue (In),
// or a reference {queue}/{id} (see locate).
func (q *Queue) Get(ctx context.Context, ref string) (Task, error) {
	queue, id, err := q.locate(ref)
	if err != nil {
		return Task{}, err
	}
	t, _, err := q.load(ctx, queue, id)
	return t, err
}
