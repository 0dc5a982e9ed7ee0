package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/s3q/s3q/shared/store"
)

// errUnchanged aborts an update that has nothing to write.
var errUnchanged = errors.New("queue: unchanged")

// Retry puts a failed or cancelled task back to pending by hand, runnable
// now, with a fresh set of attempts (attempt resets to 0; last_error is
// kept for the record). An expired task cannot be retried, nor can a task
// whose deadline has passed (it would expire at once): both are a
// *StateError. Submit a new task instead. A task with a dedup key first
// takes its key back (a holder that can never run again is ended in place,
// as a submit would end it); when another live task holds it now, the retry is a
// *StateError, so one key never has two live tasks.
func (q *Queue) Retry(ctx context.Context, id string, now time.Time) (Task, error) {
	now = norm(now)
	queue, id, err := q.locate(id)
	if err != nil {
		return Task{}, err
	}
	cur, _, err := q.load(ctx, queue, id)
	if err != nil {
		return Task{}, err
	}
	if cur.owesDeadLetterEvent() {
		// Reviving it now would drop the Task Dead-Lettered event the next
		// sweep owes for it.
		return Task{}, &StateError{ID: id, Op: "retry", Status: cur.Status, Reason: "its Task Dead-Lettered event is not published yet; retry after the next sweep (within a minute)"}
	}
	if cur.ParentID != "" && (cur.Status == StatusFailed || cur.Status == StatusCancelled) {
		parent, _, err := q.load(ctx, cur.Queue, cur.ParentID)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return Task{}, err
		}
		if err == nil && parent.Status == StatusExpired {
			return Task{}, &StateError{ID: id, Op: "retry", Status: cur.Status, Reason: "its parent " + parent.ID + " has expired"}
		}
	}
	if cur.DedupKey != "" && (cur.Status == StatusFailed || cur.Status == StatusCancelled) && !cur.deadlinePassed(now) {
		if err := q.retakeDedup(ctx, &cur, now); err != nil {
			return Task{}, err
		}
	}
	t, _, err := q.update(ctx, queue, id, func(t *Task) error {
		if t.Status != StatusFailed && t.Status != StatusCancelled {
			return &StateError{ID: id, Op: "retry", Status: t.Status, Reason: "only failed and cancelled tasks can be retried"}
		}
		if t.deadlinePassed(now) {
			return &StateError{ID: id, Op: "retry", Status: t.Status, Reason: "its deadline " + t.ExpiresAt.Format(time.RFC3339) + " has passed"}
		}
		t.Attempt = 0
		t.CancelledAt = nil
		backToPending(t, now, now, q.shardsOf(ctx, t.Queue, now))
		return nil
	})
	return t, err
}

// retakeDedup makes t's dedup pointer name t again, marked reviving,
// before a retry brings t back; it refuses when another live task holds
// the key. A pointer write whose answer was lost is recognised.
func (q *Queue) retakeDedup(ctx context.Context, t *Task, now time.Time) error {
	key := DedupKey(t.Queue, t.DedupKey)
	body, _ := json.Marshal(dedupPointer{TaskID: t.ID, CreatedAt: now, Reviving: true})
	for i := 0; i < maxCASAttempts; i++ {
		obj, err := q.store.Get(ctx, key)
		if errors.Is(err, store.ErrNotFound) {
			if _, err := store.CreateOwn(ctx, q.store, key, body, nil); err == nil {
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
			holder, _, err := q.dedupHolder(ctx, t, p.TaskID, now)
			switch {
			case errors.Is(err, store.ErrPrecondition):
				continue // it changed meanwhile: look again
			case err == nil && !holder.Status.Terminal():
				return &StateError{ID: t.ID, Op: "retry", Status: t.Status, Reason: fmt.Sprintf("its dedup key is held by live task %s", holder.ID)}
			case errors.Is(err, ErrNotFound) && q.freshPointer(p, now) && !errors.Is(err, errPurged):
				return errDedupTaken(t, p.TaskID)
			case err != nil && !errors.Is(err, ErrNotFound):
				return err
			}
		}
		if _, err := store.SwapOwn(ctx, q.store, key, body, obj.ETag, nil); err == nil {
			return nil
		} else if !errors.Is(err, store.ErrPrecondition) {
			return fmt.Errorf("retake dedup key: %w", err)
		}
	}
	return errDedupBusy(t)
}
