package queue

import (
	"context"
	"errors"
	"time"
)

// errUnchanged aborts an update that has nothing to write.
var errUnchanged = errors.New("queue: unchanged")

// Retry puts a failed or cancelled task back to pending by hand, runnable
// now, with a fresh set of attempts (attempt resets to 0; last_error is
// kept for the record). An expired task cannot be retried, nor can a task
// whose deadline has passed (it would expire at once): both are a
// *StateError. Submit a new task instead. A dead-lettered task whose
// Task Dead-Lettered event the sweep has not published yet is retried at
// once: the retry publishes the event first (Options.Publisher) and its
// write notes it sent (without a Publisher it is a *StateError until the
// sweep has published it). A task with a dedup key first
// takes its key back before its record is written (side_dedup.go: a
// holder that can never run again is ended in place, as a submit would
// end it); when another live task holds it now, the retry is a
// *StateError, so one key never has two live tasks. A child whose parent
// expires while it is retried is expired (reason parent_expired), as a
// child submitted then is: one more GET of its parent.
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
	if cur.ParentID != "" && (cur.Status == StatusFailed || cur.Status == StatusCancelled) {
		parent, _, err := q.load(ctx, cur.Queue, cur.ParentID)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return Task{}, err
		}
		if err == nil && parent.Status == StatusExpired {
			return Task{}, &StateError{ID: id, Op: "retry", Status: cur.Status, Reason: "its parent " + parent.ID + " has expired"}
		}
	}
	var published *Task
	if len(owedEvents(&cur)) > 0 && cur.Status == StatusFailed && !cur.deadlinePassed(now) {
		// A dead letter whose Task Dead-Lettered event is still owed:
		// publish it here (owed.go), and the retry's one write notes it
		// sent, so the retry need not wait for the sweep and the event is
		// neither lost nor skipped.
		if err := q.publishOwed(ctx, &cur, "retry"); err != nil {
			return Task{}, err
		}
		published = &cur
	}
	t, _, err := q.update(ctx, queue, id, cleanInline, func(t *Task) error {
		if t.Status != StatusFailed && t.Status != StatusCancelled {
			return &StateError{ID: id, Op: "retry", Status: t.Status, Reason: "only failed and cancelled tasks can be retried"}
		}
		if t.deadlinePassed(now) {
			return &StateError{ID: id, Op: "retry", Status: t.Status, Reason: "its deadline " + t.ExpiresAt.Format(time.RFC3339) + " has passed"}
		}
		if !noteOwedSent(t, published, now) {
			// It failed again since it was read: that event is owed too.
			return &StateError{ID: id, Op: "retry", Status: t.Status, Reason: "its Task Dead-Lettered event is not published yet; retry again"}
		}
		t.Attempt = 0
		t.CancelledAt = nil
		backToPending(t, now, now, q.shardsOf(ctx, t.Queue, now))
		return nil
	})
	if err == nil {
		q.dropOutbox(ctx, published)
	}
	if err == nil && t.ParentID != "" {
		// The parent may have expired since it was read above, and its
		// cascade may have listed its children before this one's marker
		// existed (or met the marker before this record was pending, and
		// deleted it): as a submit does, look again, and expire the child.
		if parent, _, perr := q.load(ctx, t.Queue, t.ParentID); perr == nil && parent.Status == StatusExpired {
			if exp, xerr := q.markExpired(ctx, t.Ref(), ReasonParentExpired, now); xerr == nil {
				t = exp
			}
		}
	}
	return t, err
}
