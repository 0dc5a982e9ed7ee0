package queue

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/s3q/s3q/shared/internal/jsonval"
	"github.com/s3q/s3q/shared/store"
	"github.com/s3q/s3q/shared/wire"
)

// SubmitRequest is one task to submit: the JSON body of a submit, as
// the HTTP API decodes it and a client sends it (one declaration serves
// both: wire.SubmitRequest, whose doc comments give each field's rules
// and defaults). Unknown fields are the API layer's to reject.
type SubmitRequest = wire.SubmitRequest

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
// (auto_declare, once; before the dedup pointer, which is never deleted,
// so that a submit refused past the queue limit leaves nothing under the
// queue's name), then the task's create, a commit from the zero
// Task (side.go): the side records it needs (for a deadline its queue's
// wake-up, once per process, queue and minute, and the index marker; the
// outbox entry and status entry of a task expired on arrival; for a
// child, its parent's flag and its children/ marker), then the record
// (create-only). A crash between them leaves at most a stale hint or an
// orphaned dedup pointer, both repaired later; the task exists once
// Submit returns. A bad field returns a *ValidationError and
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
	return q.submit(ctx, req, false, now)
}

// SubmitFire submits the task of one fire of a schedule (shared/schedule)
// as Submit does, req.ID being the fire's id (derived from the schedule,
// its secret and the fire time). A task that already has the id is the
// fire's, and is returned with Replayed set, whatever request made it:
// the schedule's template may have changed between a fire and its retry.
// One that a client's request made, or one of another queue, is a
// *ConflictError naming "id". The task keeps no request hash.
func (q *Queue) SubmitFire(ctx context.Context, req SubmitRequest, now time.Time) (SubmitResult, error) {
	return q.submit(ctx, req, true, now)
}

// submit is Submit, or SubmitFire when fire is set.
func (q *Queue) submit(ctx context.Context, req SubmitRequest, fire bool, now time.Time) (SubmitResult, error) {
	now = norm(now)
	s, err := q.parseSubmit(req, fire, now)
	if err != nil {
		return SubmitResult{}, err
	}
	t, err := q.build(ctx, &s, now)
	if err != nil {
		return SubmitResult{}, err
	}
	if t.DedupKey != "" {
		// A new queue is declared first: a dedup pointer is never
		// deleted, and one taken for a submit refused past the queue
		// limit would leave a folder under any name a caller sends.
		if res, ok, err := q.autoDeclare(ctx, &t, &s, now); ok || err != nil {
			return res, err
		}
		existing, dup, err := q.sides.dedup.take(ctx, &t, now)
		if req.ID != "" && (dup || errors.Is(err, ErrConflict)) {
			// A retry of a submit whose task exists, and whose key has
			// moved on since: the task is the answer, not the holder.
			if res, ok, rerr := q.replay(ctx, &t, &s, false); ok || rerr != nil {
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
	if res, ok, err := q.autoDeclare(ctx, &t, &s, now); ok || err != nil {
		if err != nil {
			q.abandon(ctx, &t)
		}
		return res, err
	}
	if _, err := q.commit(ctx, &Task{}, "", &t, cleanInline); err != nil {
		if req.ID != "" && errors.Is(err, store.ErrPrecondition) {
			res, ok, rerr := q.replay(ctx, &t, &s, true)
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
			if exp, err := q.markExpired(ctx, t.Ref(), ReasonParentExpired, now); err == nil {
				t = exp
			}
		}
	}
	return SubmitResult{Task: t}, nil
}

// autoDeclare declares t's queue under auto_declare, just before t's
// record is created, so that no refused submit leaves a declaration
// behind: a bad field or a parent that refuses it come before, and so
// does a dedup key that refuses it where the queue is declared already (a
// dedup-keyed submit to a new queue declares it before it takes the key:
// a live task holding the key means the queue was declared). A submit with an id to a queue not yet declared first looks
// for a task with that id (one GET, once per new queue): a replay or a
// conflict answers without declaring anything; ok is then true. Where
// declarations are required the queue is declared already (build read
// its declaration, now cached): this costs no request.
func (q *Queue) autoDeclare(ctx context.Context, t *Task, s *submission, now time.Time) (res SubmitResult, ok bool, err error) {
	d, err := q.decls.Settings(ctx, t.Queue, LookupRead, now) // cached once declared
	if err != nil || d.Declared {
		return SubmitResult{}, false, err
	}
	if s.req.ID != "" {
		if res, ok, err := q.replay(ctx, t, s, false); ok || err != nil {
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
func (q *Queue) replay(ctx context.Context, t *Task, s *submission, wroteMarker bool) (res SubmitResult, ok bool, err error) {
	existing, _, err := q.load(ctx, t.Queue, t.ID)
	if errors.Is(err, ErrNotFound) {
		return SubmitResult{}, false, nil
	}
	if err != nil {
		return SubmitResult{}, false, err
	}
	if wroteMarker && t.IndexKey != existing.IndexKey {
		q.sides.marker.remove(ctx, t.IndexKey)
	}
	// A client's request replays only the task its own request made: one
	// made without an id's request (a fire's, whose id anyone can
	// compute) is not shown to it.
	if !s.fire && existing.RequestHash != t.RequestHash ||
		// A fire's id is derived from public facts (schedule, time): a
		// task a client made with it, or one of another queue, is not the
		// fire's.
		s.fire && (existing.RequestHash != "" || existing.Queue != t.Queue) {
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
	req.ID = ""
	req.Traceparent, req.Tracestate = "", "" // a retry may come from another span
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

// abandon undoes what a failed submit of t wrote before its record, when
// it can tell the record was not written: the index marker goes, and the
// dedup pointer, unless task t.ID exists and holds the key, is set free
// (side_dedup.go, release), so the key is not refused for
// StaleMarkerGrace on behalf of a task that never existed. Best effort:
// when the record cannot be read, both stay, for the scans and the grace.
// The submit's other side records stay as stale hints: the key of a
// child's marker or status entry is the task's own, and a record of that
// id written later (a retry of the submit) names it again.
func (q *Queue) abandon(ctx context.Context, t *Task) {
	rec, _, err := q.load(ctx, t.Queue, t.ID)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return
	}
	if err != nil {
		q.sides.marker.remove(ctx, t.IndexKey)
	}
	if t.DedupKey == "" || err == nil && rec.Queue == t.Queue && rec.DedupKey == t.DedupKey {
		return // no key, or the task exists and holds it
	}
	_ = q.sides.dedup.release(ctx, t)
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
