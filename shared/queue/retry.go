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
// *StateError. Submit a new task instead.
func (q *Queue) Retry(ctx context.Context, id string, now time.Time) (Task, error) {
	now = norm(now)
	if err := ValidateID(id); err != nil {
		return Task{}, err
	}
	t, _, err := q.update(ctx, id, func(t *Task) error {
		if t.Status != StatusFailed && t.Status != StatusCancelled {
			return &StateError{ID: id, Op: "retry", Status: t.Status, Reason: "only failed and cancelled tasks can be retried"}
		}
		if t.deadlinePassed(now) {
			return &StateError{ID: id, Op: "retry", Status: t.Status, Reason: "its deadline " + t.ExpiresAt.Format(time.RFC3339) + " has passed"}
		}
		t.Attempt = 0
		t.CancelledAt = nil
		backToPending(t, now, now, q.opts.Shards)
		return nil
	})
	return t, err
}
