package queue

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/s3q/s3q/shared/internal/clip"
	"github.com/s3q/s3q/shared/internal/jsonval"
	"github.com/s3q/s3q/shared/store"
)

// SubmitRequest is one task to submit. It is also the JSON body of
// POST /tasks; unknown fields are the API layer's to reject.
type SubmitRequest struct {
	// ID, when set, is the id the task must have instead of a fresh one:
	// a lowercase UUIDv7 the client made (NewID, or DerivedID). It makes
	// the submit idempotent: the record is created only if no task has
	// the id, so a retried submit never makes a second task. A retry
	// whose request matches the one that made the task returns it with
	// Replayed set, whatever its status; one that differs is a
	// *ConflictError naming "id". Without an id a retried submit may
	// make a second task (at least once, as SQS).
	ID string `json:"id"`
	// ReplayAnyRequest replays an existing task with ID whatever request
	// made it: a schedule's fire, whose template may change between a
	// fire and its retry. Not part of the HTTP API.
	ReplayAnyRequest bool `json:"-"`

	// TaskType names the handler. Required: 1-128 of A-Z a-z 0-9 _ . : -.
	TaskType string `json:"task_type"`
	// Queue is the named queue. Defaults to "default".
	Queue string `json:"queue,omitempty"`
	// Input is the task's JSON input, at most 256 KiB.
	Input json.RawMessage `json:"input,omitempty"`

	// TTL is the time to live ("90s", "30m", "1h", "7d"); 0 submits an
	// already-expired task. At most one of TTL, TTLSeconds and ExpiresAt.
	// Defaults to the task type's default, then the global default, then
	// none (never expires).
	TTL *Duration `json:"ttl,omitempty"`
	// TTLSeconds is TTL in seconds.
	TTLSeconds *int64 `json:"ttl_seconds,omitempty"`
	// ExpiresAt is an absolute deadline for starting. An ExpiresAt before
	// ScheduleAt is allowed: the task will expire without running.
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	// TTLFrom is "submission" (default) or "first_attempt".
	TTLFrom TTLFrom `json:"ttl_from,omitempty"`

	// ScheduleAt is the earliest claim time. At most one of ScheduleAt and
	// Delay. Defaults to now.
	ScheduleAt *time.Time `json:"schedule_at,omitempty"`
	// Delay is ScheduleAt relative to now; no maximum.
	Delay *Duration `json:"delay,omitempty"`

	// DedupKey makes the submit idempotent: while a live (pending or
	// running) task in the same queue holds the key, submitting it again
	// returns that task with Deduplicated set.
	DedupKey string `json:"dedup_key,omitempty"`
	// MaxAttempts is how many claims the task gets. 0 means the default (3).
	MaxAttempts int `json:"max_attempts,omitempty"`
	// Timeout is the lease length of a claim that names none. Defaults to 5m.
	Timeout *Duration `json:"timeout,omitempty"`

	// ParentID makes the task a child: unless it gives its own deadline it
	// inherits the parent's expires_at.
	ParentID string `json:"parent_id,omitempty"`
	// OnParentExpired is "run" (default) or "cancel": what happens to this
	// task, if running, when its parent expires.
	OnParentExpired string `json:"on_parent_expired,omitempty"`
}

// SubmitResult is the outcome of one submit.
type SubmitResult struct {
	Task Task `json:"task"`
	// Deduplicated is true when a live task already held the dedup key and
	// was returned instead of a new one.
	Deduplicated bool `json:"deduplicated,omitempty"`
	// Replayed is true when a task with the request's id already existed
	// (made by an earlier attempt of the same submit) and was returned.
	Replayed bool `json:"replayed"`
}

// Submit validates req, creates the task and returns it. The queue must be
// declared (ErrQueueNotFound) where declarations are required; elsewhere
// (auto_declare) the first submit that makes a task declares it
// (Declarations, LookupCreate: ErrTooManyQueues past the queue limit; a
// refused submit declares nothing). Writes, in
// order: the dedup pointer (if any), the queue's declaration
// (auto_declare, once), the hints the task needs (for a child, its
// parent's flag and its children/ marker; the outbox entry of a task
// expired on arrival), for a deadline its queue's wake-up (once per
// process, queue and minute), the index marker, the record (create-only).
// A crash between them leaves at most a
// stale hint or an orphaned dedup pointer, both repaired later; the task
// exists once Submit returns. A bad field returns a *ValidationError and
// writes nothing.
//
// Every write whose answer is lost is recognised on a re-read (a dedup
// pointer naming this task's id is its own). A submit that took a dedup
// pointer and cannot create its record releases the pointer, so the key
// is not held by a task that never existed. With req.ID, a task that
// already has the id is returned with Replayed set (or a *ConflictError
// when another request made it), never made twice.
//
// A child of an expired parent is expired on arrival (reason
// parent_expired). A child whose parent expires while it is being
// submitted is expired right after (one more GET of the parent), so the
// sweep's cascade can never miss it.
func (q *Queue) Submit(ctx context.Context, req SubmitRequest, now time.Time) (SubmitResult, error) {
	now = norm(now)
	t, err := q.build(ctx, req, now)
	if err != nil {
		return SubmitResult{}, err
	}
	if req.ID != "" && !req.ReplayAnyRequest {
		req.Queue = t.Queue // as resolved: absent means the view's queue
		t.RequestHash = requestHash(req)
	}
	if t.DedupKey != "" {
		existing, dup, err := q.holdDedup(ctx, &t, now)
		if req.ID != "" && (dup || errors.Is(err, ErrConflict)) {
			// A retry of a submit whose task exists, and whose key has
			// moved on since: the task is the answer, not the holder.
			if res, ok, rerr := q.replay(ctx, &t, req, false); ok || rerr != nil {
				return res, rerr
			}
		}
		if err != nil {
			return SubmitResult{}, err
		}
		if dup {
			return SubmitResult{Task: existing, Deduplicated: true}, nil
		}
	}
	// auto_declare: the first submit to a queue that makes a task
	// declares it; a refused one does not (see autoDeclare).
	if res, ok, err := q.autoDeclare(ctx, &t, req, now); ok || err != nil {
		if err != nil {
			q.abandon(ctx, &t)
		}
		return res, err
	}
	if err := q.create(ctx, &t); err != nil {
		if req.ID != "" && errors.Is(err, store.ErrPrecondition) {
			res, ok, rerr := q.replay(ctx, &t, req, true)
			if ok && rerr == nil {
				return res, nil
			}
			if rerr != nil {
				err = rerr
			} else {
				// The id is taken by a task this view cannot see: one of
				// another queue. It is not this request's.
				err = &ConflictError{Field: "id", Message: fmt.Sprintf("task %s exists and was submitted with a different request", t.ID)}
			}
		} else if errors.Is(err, store.ErrPrecondition) {
			// A fresh id taken by a record this submit did not write
			// (writtenBy): nothing a caller did wrong, and no bug of
			// ours to report as a 500. Retrying makes a new id.
			err = fmt.Errorf("create task %s: its id was taken by another writer: %w", t.ID, ErrConflict)
		}
		q.abandon(ctx, &t)
		return SubmitResult{}, err
	}
	if t.ParentID != "" && t.Status == StatusPending {
		// The parent may have expired since build read it, and its
		// cascade may have listed its children before this one's marker
		// existed. Best effort: the window is that of one request.
		if parent, _, err := q.load(ctx, t.Queue, t.ParentID); err == nil && parent.Status == StatusExpired {
			if exp, err := q.MarkExpired(ctx, t.Ref(), ReasonParentExpired, now); err == nil {
				t = exp
			}
		}
	}
	return SubmitResult{Task: t}, nil
}

// autoDeclare declares t's queue under auto_declare, just before t's
// record is created, so that no refused submit leaves a declaration
// behind: a bad field, a parent or a dedup key that refuses it all come
// before. A submit with an id to a queue not yet declared first looks
// for a task with that id (one GET, once per new queue): a replay or a
// conflict answers without declaring anything; ok is then true. Where
// declarations are required the queue is declared already (build read
// its declaration, now cached): this costs no request.
func (q *Queue) autoDeclare(ctx context.Context, t *Task, req SubmitRequest, now time.Time) (res SubmitResult, ok bool, err error) {
	d, err := q.decls.Settings(ctx, t.Queue, LookupRead, now) // cached once declared
	if err != nil || d.Declared {
		return SubmitResult{}, false, err
	}
	if req.ID != "" {
		if res, ok, err := q.replay(ctx, t, req, false); ok || err != nil {
			return res, true, err
		}
	}
	_, err = q.decls.Settings(ctx, t.Queue, LookupCreate, now)
	return SubmitResult{}, false, err
}

// replay returns the task that already has t's id, made by an earlier
// attempt of the same submit, with Replayed set; ok is false when there
// is none. A task made by a different request is a *ConflictError naming
// "id". wroteMarker says this attempt wrote t's index marker, which is
// deleted (best effort) when the task does not name it.
func (q *Queue) replay(ctx context.Context, t *Task, req SubmitRequest, wroteMarker bool) (res SubmitResult, ok bool, err error) {
	existing, _, err := q.load(ctx, t.Queue, t.ID)
	if errors.Is(err, ErrNotFound) {
		return SubmitResult{}, false, nil
	}
	if err != nil {
		return SubmitResult{}, false, err
	}
	if wroteMarker && t.IndexKey != "" && t.IndexKey != existing.IndexKey {
		_ = q.store.Delete(ctx, t.IndexKey)
	}
	// A client's request replays only the task its own request made: one
	// made without an id's request (a fire's, whose id anyone can
	// compute) is not shown to it.
	if !req.ReplayAnyRequest && existing.RequestHash != t.RequestHash ||
		// A fire's id is derived from public facts (schedule, time): a
		// task a client made with it, or one of another queue, is not the
		// fire's.
		req.ReplayAnyRequest && (existing.RequestHash != "" || existing.Queue != t.Queue) {
		return SubmitResult{}, false, &ConflictError{Field: "id", Message: fmt.Sprintf("task %s exists and was submitted with a different request", t.ID)}
	}
	return SubmitResult{Task: existing, Replayed: true}, true, nil
}

// requestHash identifies a submit request for replay: a SHA-256 of its
// JSON, with the defaults and spellings that do not change its meaning
// (an absent queue, a time's zone) normalised, and its input compared by
// value: key order, white space and the spelling of numbers inside it do
// not matter (jsonval.Canonical).
func requestHash(req SubmitRequest) string {
	req.ID, req.ReplayAnyRequest = "", false
	if req.Queue == "" {
		req.Queue = DefaultQueue
	}
	if len(req.Input) > 0 {
		if c, err := jsonval.Canonical(req.Input); err == nil {
			req.Input = c
		}
	}
	for _, tp := range []**time.Time{&req.ExpiresAt, &req.ScheduleAt} {
		if *tp != nil {
			*tp = ptr(norm(**tp))
		}
	}
	b, _ := json.Marshal(req)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// create writes a new task's hints and marker, then its record. A record
// that holds another body already returns store.ErrPrecondition.
func (q *Queue) create(ctx context.Context, t *Task) error {
	body, err := encode(t)
	if err != nil {
		return err
	}
	if t.ParentID != "" && !t.Status.Terminal() {
		if err := q.putChildHints(ctx, t.Queue, t.ParentID, t.ID); err != nil {
			return err
		}
	}
	if followUpDue(&Task{}, t) {
		if err := q.putHint(ctx, outboxKey(t)); err != nil {
			return err
		}
	}
	if t.IndexKey != "" {
		if err := q.putMarker(ctx, t.IndexKey, t.UpdatedAt); err != nil {
			return err
		}
	}
	if k := statusKey(t); k != "" { // expired on arrival
		if err := q.putHint(ctx, k, taskPutOptions(t)...); err != nil {
			return err
		}
	}
	// A fresh UUIDv7 only exists already if an earlier attempt of this
	// very write landed: CreateOwn recognises it by what identifies its
	// writer (writtenBy), and retries a create whose answer was lost and
	// that did not land.
	exact := true // the stored record is this body, byte for byte
	mine := func(stored []byte) bool {
		ok := writtenBy(t)(stored)
		if ok && !bytes.Equal(stored, body) {
			exact = false // changed since by a claimer, a canceller, the sweep
		}
		return ok
	}
	etag, err := store.CreateOwn(ctx, q.store, TaskKey(t.Queue, t.ID), body, mine, taskPutOptions(t)...)
	if err != nil {
		return fmt.Errorf("create task %s: %w", t.ID, err)
	}
	if exact {
		q.remember(t, etag) // its claim by this process needs no GET
	}
	q.announce(t)
	return nil
}

// writtenBy returns a test of a stored task record: whether this submit
// of t wrote it. A create whose answer was lost is recognised by what
// identifies its writer, never by the record's bytes: between the lost
// answer and the re-read a claimer, a canceller or the sweep may have
// changed the record, but never its id, queue, created_at (this submit's
// clock, to the microsecond) or request hash.
func writtenBy(t *Task) func(stored []byte) bool {
	return func(stored []byte) bool {
		var rec Task
		return json.Unmarshal(stored, &rec) == nil && rec.ID == t.ID && rec.Queue == t.Queue &&
			rec.CreatedAt.Equal(t.CreatedAt) && rec.RequestHash == t.RequestHash
	}
}

// dedupPointer is the body of dedup/{queue}/{sha256(key)}. An empty
// TaskID marks a released pointer: the key is free.
type dedupPointer struct {
	TaskID    string    `json:"task_id"`
	CreatedAt time.Time `json:"created_at"`
	// Reviving marks a pointer retaken by Retry for a finished task it is
	// about to bring back: until StaleMarkerGrace has passed, a submit
	// must not take the key over on the ground that its task is finished.
	Reviving bool `json:"reviving,omitempty"`
}

// freshPointer reports whether dedup pointer p was written less than
// StaleMarkerGrace before now: its writer may still be at work.
func (q *Queue) freshPointer(p dedupPointer, now time.Time) bool {
	return now.Sub(p.CreatedAt) < q.opts.StaleMarkerGrace
}

// errDedupTaken is the conflict of t's dedup key while task id, not yet
// written, takes it.
func errDedupTaken(t *Task, id string) error {
	return fmt.Errorf("dedup key %q is being taken by task %s: %w", clip.Input(t.DedupKey), id, ErrConflict)
}

// errDedupBusy is the conflict of t's dedup key when it kept changing
// under every compare-and-swap.
func errDedupBusy(t *Task) error {
	return fmt.Errorf("dedup key %q: %w", clip.Input(t.DedupKey), ErrConflict)
}

// namesTask returns a test of a stored pointer: whether it names id.
func namesTask(id string) func(stored []byte) bool {
	return func(stored []byte) bool {
		var p dedupPointer
		return json.Unmarshal(stored, &p) == nil && p.TaskID == id
	}
}

// endsNow reports whether a dedup key's holder t can never run again at
// now, and sets *next to t as a claim would leave it: a pending task past
// its expires_at expired, a running one whose lease lapsed settled
// (expired, cancelled or failed; see settleLapsed).
func endsNow(t, next *Task, now time.Time) bool {
	*next = t.clone()
	switch {
	case t.Status == StatusPending && t.deadlinePassed(now):
		expire(next, ReasonTTL, now)
		return true
	case t.Status == StatusRunning && !t.leaseValid(now):
		return settleLapsed(next, now)
	}
	return false
}

// holdDedup takes the dedup key for t, or returns the live task that holds
// it. The pointer is create-only; a pointer whose task is terminal, or
// missing for longer than StaleMarkerGrace (a submit that crashed), is
// taken over by compare-and-swap, and so is one whose task can never run
// again (endsNow): that task is ended in place first (the write a claim
// would make, with its event). A pointer that
// names t's own id is t's own: an earlier attempt of this very submit
// whose answer was lost.
func (q *Queue) holdDedup(ctx context.Context, t *Task, now time.Time) (Task, bool, error) {
	key := DedupKey(t.Queue, t.DedupKey)
	body, _ := json.Marshal(dedupPointer{TaskID: t.ID, CreatedAt: now})
	mine := namesTask(t.ID)
	var writeErr error // the last create that failed for another reason than an existing key
	for i := 0; i < maxCASAttempts; i++ {
		_, err := q.store.PutIfAbsent(ctx, key, body)
		if err == nil {
			return Task{}, false, nil
		}
		if !errors.Is(err, store.ErrPrecondition) {
			writeErr = fmt.Errorf("write dedup key: %w", err)
		}
		// Whatever the error, the pointer tells: it may be ours (the
		// answer was lost), another's, or absent (not written).
		obj, err := q.store.Get(ctx, key)
		if errors.Is(err, store.ErrNotFound) {
			if writeErr != nil && i+1 >= store.OwnAttempts {
				return Task{}, false, writeErr
			}
			continue // not written, or deleted meanwhile: create it again
		}
		if err != nil {
			if writeErr != nil {
				return Task{}, false, writeErr
			}
			return Task{}, false, fmt.Errorf("read dedup key: %w", err)
		}
		if mine(obj.Body) {
			return Task{}, false, nil // ours: an earlier attempt of this very submit
		}
		var p dedupPointer
		if err := json.Unmarshal(obj.Body, &p); err != nil || validID(p.TaskID) != nil {
			p = dedupPointer{} // unreadable or released: take it over
		}
		if p.TaskID != "" {
			holder, ended, err := q.dedupHolder(ctx, t, p.TaskID, now)
			switch {
			case errors.Is(err, store.ErrPrecondition):
				continue // it changed meanwhile: look again
			case ended:
				// It could never run: ended in place, the key is free.
			case err == nil && !holder.Status.Terminal():
				return holder, true, nil
			case err == nil && p.Reviving && q.freshPointer(p, now):
				return Task{}, false, fmt.Errorf("dedup key %q: task %s is being retried: %w", clip.Input(t.DedupKey), p.TaskID, ErrConflict)
			case err == nil:
				// terminal: the key is free again
			case errors.Is(err, ErrNotFound):
				if q.freshPointer(p, now) && !errors.Is(err, errPurged) {
					// Another submit holds the key and has not written its
					// task yet, or crashed a moment ago.
					return Task{}, false, errDedupTaken(t, p.TaskID)
				}
			default:
				return Task{}, false, err
			}
		}
		if _, err := store.SwapOwn(ctx, q.store, key, body, obj.ETag, mine); err == nil {
			return Task{}, false, nil
		} else if !errors.Is(err, store.ErrPrecondition) {
			return Task{}, false, fmt.Errorf("take over dedup key: %w", err)
		}
	}
	return Task{}, false, errDedupBusy(t)
}

// dedupHolder loads the task a dedup pointer names, as the holder of t's
// key: ErrNotFound when it does not exist or does not hold that key (the
// pointer of a submit of that id with another request, refused, then
// crashed before releasing it). A holder that can never run is ended in
// place and returned ended, terminal: the key is free. A
// lost race ending it returns store.ErrPrecondition: look again.
func (q *Queue) dedupHolder(ctx context.Context, t *Task, id string, now time.Time) (holder Task, ended bool, err error) {
	holder, hetag, err := q.load(ctx, t.Queue, id)
	if err != nil {
		return Task{}, false, err
	}
	if holder.Queue != t.Queue || holder.DedupKey != t.DedupKey {
		return Task{}, false, fmt.Errorf("task %s does not hold dedup key %q: %w", id, clip.Input(t.DedupKey), ErrNotFound)
	}
	var end Task
	if !endsNow(&holder, &end, now) {
		return holder, false, nil
	}
	if _, err := q.commit(ctx, &holder, hetag, &end); err != nil {
		return Task{}, false, err
	}
	return end, true, nil
}

// abandon undoes what a failed submit of t wrote before its record, when
// it can tell the record was not written: the index marker goes, and the
// dedup pointer, unless task t.ID exists and holds the key, is set free
// by compare-and-swap if it still names t, so the key is not refused for
// StaleMarkerGrace on behalf of a task that never existed. Best effort:
// when the record cannot be read, both stay, for the scans and the grace.
func (q *Queue) abandon(ctx context.Context, t *Task) {
	rec, _, err := q.load(ctx, t.Queue, t.ID)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return
	}
	if err != nil && t.IndexKey != "" {
		_ = q.store.Delete(ctx, t.IndexKey)
	}
	if t.DedupKey == "" || err == nil && rec.Queue == t.Queue && rec.DedupKey == t.DedupKey {
		return // no key, or the task exists and holds it
	}
	key := DedupKey(t.Queue, t.DedupKey)
	obj, err := q.store.Get(ctx, key)
	if err != nil || !namesTask(t.ID)(obj.Body) {
		return
	}
	body, _ := json.Marshal(dedupPointer{})
	_, _ = store.SwapOwn(ctx, q.store, key, body, obj.ETag, nil)
}

// BatchResult is the outcome of one item of a batch submit: a result or an
// error, never both.
type BatchResult struct {
	Result SubmitResult
	Err    error
}

// SubmitBatch submits each request independently (up to MaxBatch), a few
// at a time, and returns one result per request in order. One bad item
// does not stop the others.
func (q *Queue) SubmitBatch(ctx context.Context, reqs []SubmitRequest, now time.Time) ([]BatchResult, error) {
	if len(reqs) > MaxBatch {
		return nil, &ValidationError{Field: "tasks", Message: fmt.Sprintf("has %d tasks, over the limit of %d", len(reqs), MaxBatch), Err: ErrTooLarge}
	}
	out := make([]BatchResult, len(reqs))
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i := range reqs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			out[i].Result, out[i].Err = q.Submit(ctx, reqs[i], now)
		}()
	}
	wg.Wait()
	return out, nil
}
