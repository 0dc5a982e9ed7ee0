package queue

import (
	"context"
	"time"
)

// Cancel cancels a task. A pending task, or a running one whose lease has
// lapsed, becomes cancelled at once and leaves the index. A running task gets cancel_requested: its worker sees
// it within seconds (the Go worker reads the task every 2s, and every
// heartbeat says it) and acknowledges with AckCancel (or finishes
// anyway). Cancelling a task already cancelled, or already asked to
// cancel, returns it unchanged; cancelling any other terminal task, or a
// pending one past its deadline (every read shows it expired), is a
// *StateError.
func (q *Queue) Cancel(ctx context.Context, id string, now time.Time) (Task, error) {
	return q.cancelChosen(ctx, id, now, nil)
}

// cancelChosen is Cancel; chosen, when not nil, says why the record as it
// is now must be left alone (a bulk cancel's filter it no longer
// matches), or "".
func (q *Queue) cancelChosen(ctx context.Context, id string, now time.Time, chosen func(*Task) string) (Task, error) {
	now = norm(now)
	queue, id, err := q.locate(id)
	if err != nil {
		return Task{}, err
	}
	var unchanged *Task
	t, _, err := q.update(ctx, queue, id, cleanInline, func(t *Task) error {
		if chosen != nil {
			if reason := chosen(t); reason != "" {
				return &StateError{ID: id, Op: "cancel", Status: t.Status, Reason: reason}
			}
		}
		switch {
		case t.Status == StatusPending && t.deadlinePassed(now):
			// Every read shows it expired (AsOf): it stays so, and its
			// Task Expired event stays owed to the sweep.
			return &StateError{ID: id, Op: "cancel", Status: StatusExpired, Reason: "its deadline " + t.ExpiresAt.Format(time.RFC3339) + " has passed"}
		case t.Status == StatusPending, t.Status == StatusRunning && !t.leaseValid(now):
			// Pending, or running under a lease nobody holds any more.
			cancel(t, now)
		case t.Status == StatusRunning && !t.CancelRequested:
			t.CancelRequested = true
			t.UpdatedAt = now
		case t.Status == StatusRunning || t.Status == StatusCancelled:
			unchanged = ptr(t.clone())
			return errUnchanged
		default:
			return &StateError{ID: id, Op: "cancel", Status: t.Status}
		}
		return nil
	})
	if err == errUnchanged {
		return *unchanged, nil
	}
	return t, err
}

func cancel(t *Task, now time.Time) {
	t.Status = StatusCancelled
	t.CancelledAt = ptr(now)
	t.UpdatedAt = now
	clearLease(t)
	t.IndexKey = ""
}
