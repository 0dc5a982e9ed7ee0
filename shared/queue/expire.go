package queue

import (
	"context"
	"time"
)

// Expire marks a pending task expired by hand (reason "manual"), as
// POST /tasks/{id}/expire does. Only a pending task can expire: a running
// task is never interrupted by its deadline, so expiring one is a
// *StateError, as is expiring a terminal task or a pending one past its
// deadline (every read shows it expired, reason ttl, already).
func (q *Queue) Expire(ctx context.Context, id string, now time.Time) (Task, error) {
	return q.markExpired(ctx, id, ReasonManual, now)
}

// markExpired marks a pending task expired with expired_at = now and drops
// its index marker. reason is ReasonTTL (the sweep, for a task whose
// expires_at <= now), ReasonParentExpired or ReasonManual. With ReasonTTL
// a task whose deadline has not passed at now is a *StateError.
func (q *Queue) markExpired(ctx context.Context, id, reason string, now time.Time) (Task, error) {
	now = norm(now)
	queue, id, err := q.locate(id)
	if err != nil {
		return Task{}, err
	}
	t, _, err := q.update(ctx, queue, id, cleanInline, func(t *Task) error {
		if t.Status != StatusPending {
			return &StateError{ID: id, Op: "expire", Status: t.Status, Reason: "only a pending task expires"}
		}
		if reason == ReasonManual && t.deadlinePassed(now) {
			// It reads expired already (AsOf, reason ttl): the sweep writes it so.
			return &StateError{ID: id, Op: "expire", Status: StatusExpired, Reason: "its deadline " + t.ExpiresAt.Format(time.RFC3339) + " has passed"}
		}
		if reason == ReasonTTL && !t.deadlinePassed(now) {
			return &StateError{ID: id, Op: "expire", Status: t.Status, Reason: "its deadline has not passed"}
		}
		expire(t, reason, now)
		return nil
	})
	return t, err
}

// expireLoaded expires a task already read (pending, or running with an
// expired lease) in one conditional write.
func (q *Queue) expireLoaded(ctx context.Context, cur Task, etag, reason string, now time.Time) (Task, error) {
	next := cur.clone()
	expire(&next, reason, now)
	_, err := q.commit(ctx, &cur, etag, &next, cleanInline)
	return next, err
}

func expire(t *Task, reason string, now time.Time) {
	t.Status = StatusExpired
	t.ExpiredAt = ptr(now)
	t.ExpiryReason = reason
	t.ExpiryEventSentAt = nil // owed: the sweep publishes it (outbox)
	t.UpdatedAt = now
	clearLease(t)
	t.IndexKey = ""
}
