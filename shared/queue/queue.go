// Package queue is the s3q task queue core: the task model and every state
// transition, over a store.Store. Each transition is one conditional write
// of the task record (q/{queue}/tasks/{r}/{id}.json, keys.go), its
// commit: the side records beside it (side.go: the dedup pointer, the
// claim-index marker and its wake-up, the outbox entry, the child's
// hints, the status entry, the concurrency slot) are hints that make a
// question cheap to answer ("what is due now", "what follow-up work is
// owed"), each written before the record needs it and removed after the
// record stops needing it.
//
// Every time-dependent call takes now explicitly; the core never reads the
// clock. now is truncated to microseconds and converted to UTC.
//
// A call that says more than which task it acts on takes (ctx, a request
// struct, now): Submit, Claim, List and the lease operations Heartbeat,
// Complete, Fail, Reschedule and AckCancel, whose HeartbeatRequest,
// CompleteRequest, ... each name the task (ID) and the lease (LeaseToken)
// beside what they ask. Fields left zero take the default their doc
// names, a request reads the same at every call site, and a field added
// later breaks no caller. A call that names only a task (Get, Cancel,
// Retry, Expire) takes its reference, as a map lookup takes its key.
//
// What a queue's declaration says (its defaults, shards, max_concurrency,
// whether it is paused) the core reads through one method,
// Declarations.Settings (declarations.go); package queues owns the
// declarations themselves and builds a Queue with them: queues.Open is
// the one entry point (it checks the bucket's layout, CheckLayout, and
// takes one options value, queues.Options, whose Core is Options).
//
// The contract, operation by operation, is on the methods of Queue. Errors
// are the sentinels and types in errors.go, wrapped; a failed call changes
// nothing (a stale side record is the most it can leave behind, and the
// next reader that meets it repairs it).
package queue

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/s3q/s3q/shared/deploy"
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

	// ListCacheFor is how long one listing of a claim index serves later
	// claims by this Queue before it is listed again (one LIST of the
	// queue's index/ folder lists both indexes while they are sparse). A task submitted
	// through another process becomes visible to this one within this
	// time; this Queue's own writes are visible at once. Defaults to 1s;
	// a negative value lists on every claim.
	ListCacheFor time.Duration

	// StaleMarkerGrace is how far behind now a marker's time must be before
	// a scan deletes it as stale (its record does not name it). A writer
	// puts a marker a moment before its record names it; the grace keeps
	// scans from deleting such a marker in that moment. Defaults to 2m.
	StaleMarkerGrace time.Duration

	// MaxScanPages bounds the LIST pages one claim reads per claim index
	// (index/deadline/, index/ready/) when the pages before hold nothing
	// it can take (running tasks, other task types, deadlines not yet
	// available). Each index has its own budget, so a backlog in
	// deadline/ never uses up the pages of ready/. Defaults to 20.
	MaxScanPages int

	// Publisher publishes the Task Dead-Lettered or Task Expired event a
	// task still owes when a retry or a purge would otherwise have to wait
	// for the sweep to publish it (owed.go): the call publishes it first
	// and its write notes it sent. Defaults to none: such a retry or purge
	// is refused until the sweep has published the event.
	Publisher EventPublisher

	// NewID makes task ids. Defaults to NewID (UUIDv7 from now).
	NewID func(now time.Time) string

	// BackgroundCleanup removes the side records a lease operation
	// (complete, fail, reschedule, cancel-acknowledge) leaves unneeded
	// (side.go: the index marker of a task that completes, fails or is
	// rescheduled, its status entry, its concurrency slot; not a child's
	// children/ marker, whose key a retry writes again) after the
	// operation returns, in the background, instead of
	// before: a complete is then one round trip to S3, not two. Flush waits for
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

// state is what the views of one Queue share: its store and options, the
// claim index's listings and skips (scan.go), the record cache
// (recs.go), and its side records with what each remembers (side.go).
type state struct {
	store store.Store
	opts  Options
	// decls is where the queues' declarations are read from.
	decls Declarations

	// sides are the records written beside each task record (side.go);
	// each keeps its own cache under its own lock.
	sides sides

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
	// lastLoss is when a claim of this Queue last lost a race.
	lastLoss time.Time
	// recs caches the last version of live records (recs.go); recBytes
	// is about what they hold.
	recs     map[string]cachedRec
	recBytes int
	// cleanups counts the background cleanups in flight (Flush).
	cleanups sync.WaitGroup
	// rates remembers each queue's rate state (ratelimit.go).
	rates rateLimits
	// arrivals holds, per queue, the channel closed when this Queue next
	// writes a claimable marker of it (Arrivals).
	arrivals map[string]chan struct{}
}

// New returns a Queue over s that reads the queues' declarations from
// decls. It panics when decls is nil: a Queue without declarations would
// skip them silently. queues.Open, which also checks the bucket's layout
// (CheckLayout) and takes these options as queues.Options.Core, builds a
// Queue with its declarations; that is the usual way to make one.
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
	q := &Queue{state: &state{
		store: s, opts: opts, decls: decls,
		bufs: make(map[string]*scanBuf), skip: make(map[string]time.Time), types: make(map[string]string),
		listing: make(map[string]chan struct{}),
		recs:    make(map[string]cachedRec), arrivals: make(map[string]chan struct{}),
	}}
	q.sides = newSides(q)
	return q
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

// taskPutOptions are the options of a write of task record t: a terminal
// record (completed, failed, cancelled, expired, archived) carries
// deploy.TerminalTag, by which the bucket's lifecycle rule (on q/, by this
// tag: a lifecycle filter cannot wildcard the queue) deletes it after the
// retention period. A retried task loses it on its next write.
func taskPutOptions(t *Task) []store.PutOption {
	if t.Status.Terminal() {
		return []store.PutOption{store.WithTags(deploy.TerminalTag)}
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
// with the side records around it (side.go): each side record next needs
// and cur does not have is written first, in the order of sides.all;
// once the record's write has landed, each one cur has and next does not
// need is removed (best effort: one left behind is a stale hint, which
// the next reader that meets it repairs), when at says (a side record
// whose key the task may write again, in line always). A create is a
// commit from the zero Task with etag "": the record is written only if
// absent.
//
// A lost race returns store.ErrPrecondition with the record unchanged; a
// side record written for it is left as a stale hint (never removed
// here: a winner may name the same key). A side record's time is
// next.UpdatedAt, the transition's now.
func (q *Queue) commit(ctx context.Context, cur *Task, etag string, next *Task, at cleanAt) (string, error) {
	body, err := encode(next)
	if err != nil {
		return "", err
	}
	for _, s := range q.sides.all {
		if err := s.before(ctx, cur, next); err != nil {
			return "", err
		}
	}
	newETag, err := q.writeRecord(ctx, cur, etag, next, body)
	if err != nil {
		return "", err
	}
	var cleanups, inline []cleanup
	for _, s := range q.sides.all {
		if fn := s.after(cur, next); fn != nil {
			if reusesKey(s) {
				inline = append(inline, fn)
			} else {
				cleanups = append(cleanups, fn)
			}
		}
	}
	q.clean(ctx, cleanInline, inline)
	q.clean(ctx, at, cleanups)
	return newETag, nil
}

// reusesKey reports whether a later transition of the same task writes
// side record s's key again (a child's marker, when the child is
// retried): its cleanup runs in line even under Options.BackgroundCleanup,
// since a delete delayed past that write (a Lambda container frozen with
// the cleanup in flight, and thawed later) would remove the hint the
// revived task needs.
func reusesKey(s sideRecord) bool {
	_, child := s.(*childSide)
	return child
}

// writeRecord writes next, the successor of cur read with etag: by
// compare-and-swap, or, when cur is the zero Task, create-only. A write
// whose answer was lost is recognised on a re-read, and the record this
// Queue now knows is remembered (recs.go).
func (q *Queue) writeRecord(ctx context.Context, cur *Task, etag string, next *Task, body []byte) (string, error) {
	key := TaskKey(next.Queue, next.ID)
	if !cur.exists() {
		// A fresh UUIDv7 only exists already if an earlier attempt of
		// this very write landed: CreateOwn recognises it by what
		// identifies its writer (writtenBy), and retries a create whose
		// answer was lost and that did not land.
		exact := true // the stored record is this body, byte for byte
		mine := func(stored []byte) bool {
			ok := writtenBy(next)(stored)
			if ok && !bytes.Equal(stored, body) {
				exact = false // changed since by a claimer, a canceller, the sweep
			}
			return ok
		}
		newETag, err := store.CreateOwn(ctx, q.store, key, body, mine, taskPutOptions(next)...)
		if err != nil {
			return "", fmt.Errorf("create task %s: %w", next.ID, err)
		}
		if exact {
			q.remember(next, newETag) // its claim by this process needs no GET
		}
		return newETag, nil
	}
	// A lease token or an update time makes every body of ours unique.
	newETag, err := store.SwapOwn(ctx, q.store, key, body, etag, nil, taskPutOptions(next)...)
	if err != nil {
		q.forget(next.Queue, next.ID)
		return "", fmt.Errorf("write task %s: %w", next.ID, err)
	}
	q.remember(next, newETag)
	return newETag, nil
}

// cleanAt says when a transition runs the cleanups of its side records:
// each caller of update and commit names it.
type cleanAt int

const (
	// cleanInline runs them one after another before the transition
	// returns: every transition's but a lease operation's (the sweep's
	// and the others': nobody waits on them).
	cleanInline cleanAt = iota
	// cleanAfter runs them all at once, in the background, after it
	// returns (Flush waits for them): a lease operation's under
	// Options.BackgroundCleanup (leaseCleanup).
	cleanAfter
)

// leaseCleanup is when a lease operation of this Queue runs its cleanups.
func (q *Queue) leaseCleanup() cleanAt {
	if q.opts.BackgroundCleanup {
		return cleanAfter
	}
	return cleanInline
}

// clean runs the cleanups of a transition: one after another before it
// returns (cleanInline), or all at once after (cleanAfter).
func (q *Queue) clean(ctx context.Context, at cleanAt, fns []cleanup) {
	if at != cleanAfter {
		for _, fn := range fns {
			_ = fn(ctx)
		}
		return
	}
	ctx = context.WithoutCancel(ctx)
	for _, fn := range fns {
		q.cleanups.Add(1)
		go func() {
			defer q.cleanups.Done()
			_ = fn(ctx)
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
func (q *Queue) update(ctx context.Context, queue, id string, at cleanAt, fn func(t *Task) error) (Task, string, error) {
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
		newETag, err := q.commit(ctx, &cur, etag, &next, at)
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
