package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/s3q/s3q/shared/internal/clip"
	"github.com/s3q/s3q/shared/store"
)

// dedupSide is the dedup pointer of a task submitted with a dedup key:
// q/{queue}/dedup/{sha256(key)}, naming the task that holds the key. The
// key is held while that task can still run; once it is finished (or can
// never run again) a submit with the key takes the pointer over by
// compare-and-swap.
//
// Its writes come first. A submit takes the pointer (take) before
// anything else, even the queue's declaration, as its answer may be the
// task that holds the key instead of a new one; so a create's before
// writes nothing. Before the write that revives a finished task (a
// retry), the pointer is taken back (retake), marked reviving, or the
// revival is refused while another live task holds the key. After a
// record goes (a purge, or a submit whose record was never written:
// release), a pointer that still names it is set free by compare-and-swap.
// A pointer is never deleted (a key is never created again after a
// delete) and never freed while its task lives: it names the task, and
// the task's status says whether the key is held.
//
// A pointer naming the writer's own task id is its own (a write whose
// answer was lost); one naming a task that does not exist is taken over
// once it is StaleMarkerGrace old (a submit that crashed between its
// writes).
type dedupSide struct {
	q *Queue // the root view: its store, records and commit
}

// before takes the key back for a task that revives (retake).
func (d *dedupSide) before(ctx context.Context, cur, next *Task) error {
	if !cur.exists() || next.DedupKey == "" || !cur.Status.Terminal() || next.Status.Terminal() {
		return nil
	}
	return d.retake(ctx, cur, next.UpdatedAt)
}

// after releases the pointer of a record that goes (a purge: next is the
// zero Task) or that was never the key's holder. Its cleanup fails when
// the pointer may still name cur.
func (d *dedupSide) after(cur, next *Task) cleanup {
	if cur.DedupKey == "" || next.exists() && next.Queue == cur.Queue && next.DedupKey == cur.DedupKey {
		return nil
	}
	return func(ctx context.Context) error { return d.release(ctx, cur) }
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
func (d *dedupSide) freshPointer(p dedupPointer, now time.Time) bool {
	return now.Sub(p.CreatedAt) < d.q.opts.StaleMarkerGrace
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

// take takes the dedup key for t, or returns the live task that holds
// it. The pointer is create-only; a pointer whose task is terminal, or
// missing for longer than StaleMarkerGrace (a submit that crashed), is
// taken over by compare-and-swap, and so is one whose task can never run
// again (endsNow): that task is ended in place first (the write a claim
// would make, with its event). A pointer that
// names t's own id is t's own: an earlier attempt of this very submit
// whose answer was lost.
func (d *dedupSide) take(ctx context.Context, t *Task, now time.Time) (Task, bool, error) {
	key := DedupKey(t.Queue, t.DedupKey)
	body, _ := json.Marshal(dedupPointer{TaskID: t.ID, CreatedAt: now})
	mine := namesTask(t.ID)
	var writeErr error // the last create that failed for another reason than an existing key
	swapFails := 0     // takeover writes that failed with a retryable error
	for i := 0; i < maxCASAttempts; i++ {
		_, err := d.q.store.PutIfAbsent(ctx, key, body)
		if err == nil {
			return Task{}, false, nil
		}
		if !errors.Is(err, store.ErrPrecondition) {
			writeErr = fmt.Errorf("write dedup key: %w", err)
		}
		// Whatever the error, the pointer tells: it may be ours (the
		// answer was lost), another's, or absent (not written).
		obj, err := d.q.store.Get(ctx, key)
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
			holder, ended, err := d.holder(ctx, t, p.TaskID, now)
			switch {
			case errors.Is(err, store.ErrPrecondition):
				continue // it changed meanwhile: look again
			case ended:
				// It could never run: ended in place, the key is free.
			case err == nil && !holder.Status.Terminal():
				return holder, true, nil
			case err == nil && p.Reviving && d.freshPointer(p, now):
				return Task{}, false, fmt.Errorf("dedup key %q: task %s is being retried: %w", clip.Input(t.DedupKey), p.TaskID, ErrConflict)
			case err == nil:
				// terminal: the key is free again
			case errors.Is(err, ErrNotFound):
				if d.freshPointer(p, now) && !errors.Is(err, errPurged) {
					// Another submit holds the key and has not written its
					// task yet, or crashed a moment ago.
					return Task{}, false, errDedupTaken(t, p.TaskID)
				}
			default:
				return Task{}, false, err
			}
		}
		_, err = store.SwapOwn(ctx, d.q.store, key, body, obj.ETag, mine)
		switch {
		case err == nil:
			return Task{}, false, nil
		case errors.Is(err, store.ErrPrecondition):
			// Taken or released meanwhile: look again.
		case errors.Is(err, store.ErrRetryable):
			// Not ours (SwapOwn read it back): not written, or another
			// writer's. Look again and write again, as the create does,
			// at most store.OwnAttempts failed writes in all.
			writeErr = fmt.Errorf("take over dedup key: %w", err)
			if swapFails++; swapFails >= store.OwnAttempts {
				return Task{}, false, writeErr
			}
		default:
			return Task{}, false, fmt.Errorf("take over dedup key: %w", err)
		}
	}
	if writeErr != nil {
		return Task{}, false, writeErr
	}
	return Task{}, false, errDedupBusy(t)
}

// holder loads the task a dedup pointer names, as the holder of t's
// key: ErrNotFound when it does not exist or does not hold that key (the
// pointer of a submit of that id with another request, refused, then
// crashed before releasing it). A holder that can never run is ended in
// place and returned ended, terminal: the key is free. A
// lost race ending it returns store.ErrPrecondition: look again.
func (d *dedupSide) holder(ctx context.Context, t *Task, id string, now time.Time) (holder Task, ended bool, err error) {
	holder, hetag, err := d.q.load(ctx, t.Queue, id)
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
	if _, err := d.q.commit(ctx, &holder, hetag, &end, cleanInline); err != nil {
		return Task{}, false, err
	}
	return end, true, nil
}

// retake makes t's dedup pointer name t again, marked reviving, before
// a retry brings t back; it refuses when another live task holds the
// key. A pointer write whose answer was lost is recognised.
func (d *dedupSide) retake(ctx context.Context, t *Task, now time.Time) error {
	key := DedupKey(t.Queue, t.DedupKey)
	body, _ := json.Marshal(dedupPointer{TaskID: t.ID, CreatedAt: now, Reviving: true})
	for i := 0; i < maxCASAttempts; i++ {
		obj, err := d.q.store.Get(ctx, key)
		if errors.Is(err, store.ErrNotFound) {
			if _, err := store.CreateOwn(ctx, d.q.store, key, body, nil); err == nil {
				return nil
			} else if !errors.Is(err, store.ErrPrecondition) {
				return fmt.Errorf("write dedup key: %w", err)
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("read dedup key: %w", err)
		}
		var p dedupPointer
		_ = json.Unmarshal(obj.Body, &p)
		if p.TaskID != t.ID && validID(p.TaskID) == nil {
			// A holder that could never run comes back ended, terminal:
			// the key is free.
			holder, _, err := d.holder(ctx, t, p.TaskID, now)
			switch {
			case errors.Is(err, store.ErrPrecondition):
				continue // it changed meanwhile: look again
			case err == nil && !holder.Status.Terminal():
				return &StateError{ID: t.ID, Op: "retry", Status: t.Status, Reason: fmt.Sprintf("its dedup key is held by live task %s", holder.ID)}
			case err == nil && p.Reviving && d.freshPointer(p, now):
				// Another retry is bringing its holder back: the key is
				// its, as for a submit (take).
				return &StateError{ID: t.ID, Op: "retry", Status: t.Status, Reason: fmt.Sprintf("its dedup key is being taken by task %s, which is being retried", holder.ID)}
			case errors.Is(err, ErrNotFound) && d.freshPointer(p, now) && !errors.Is(err, errPurged):
				return errDedupTaken(t, p.TaskID)
			case err != nil && !errors.Is(err, ErrNotFound):
				return err
			}
		}
		if _, err := store.SwapOwn(ctx, d.q.store, key, body, obj.ETag, nil); err == nil {
			return nil
		} else if !errors.Is(err, store.ErrPrecondition) {
			return fmt.Errorf("retake dedup key: %w", err)
		}
	}
	return errDedupBusy(t)
}

// release sets t's dedup pointer free by compare-and-swap while it names
// t, so the key is free at once for the next submit. A pointer taken
// over meanwhile is left to its new holder. It fails when the pointer may
// still name t: a pointer naming a purged task frees its key at once, but
// one naming a missing task holds it for StaleMarkerGrace (it may be a
// submit between its writes), so a purge keeps its tombstone then.
func (d *dedupSide) release(ctx context.Context, t *Task) error {
	key := DedupKey(t.Queue, t.DedupKey)
	obj, err := d.q.store.Get(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read dedup key: %w", err)
	}
	if !namesTask(t.ID)(obj.Body) {
		return nil
	}
	body, _ := json.Marshal(dedupPointer{})
	if _, err = store.SwapOwn(ctx, d.q.store, key, body, obj.ETag, nil); err != nil && !errors.Is(err, store.ErrPrecondition) {
		return fmt.Errorf("release dedup key: %w", err) // a precondition: taken over meanwhile
	}
	return nil
}
