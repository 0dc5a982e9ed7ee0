package queue

import (
	"context"
	"time"
)

// RescheduleRequest asks to run a running task again later.
type RescheduleRequest struct {
	// ID is the task's reference, {queue}/{id} (Task.Ref); a bare id
	// only on the queue's view (In). A bare id elsewhere is refused
	// naming queue: it never means DefaultQueue.
	ID string
	// LeaseToken is the token of the lease the claim handed out.
	LeaseToken string
	// Delay until the task is available again. Defaults to 0 (now).
	Delay Duration
	// ExtendExpiration moves the task's expires_at later by this much: the
	// only way a deadline ever moves. Ignored for a task without one.
	// Defaults to 0 (the deadline stays).
	ExtendExpiration Duration
}

// rescheduleAsked is what a reschedule asks, as its replay compares it
// (leaseRequest): the spelling its hash has always had.
type rescheduleAsked struct {
	Delay            Duration `json:"delay,omitempty"`
	ExtendExpiration Duration `json:"extend_expiration,omitempty"`
}

// Reschedule puts a running task back to pending, available at now +
// Delay, and gives back the attempt its claim used (a reschedule is not a
// failure). With ExtendExpiration its deadline moves that much later.
func (q *Queue) Reschedule(ctx context.Context, req RescheduleRequest, now time.Time) (Task, error) {
	now = norm(now)
	if req.Delay < 0 {
		return Task{}, invalid("delay", "must not be negative")
	}
	if req.ExtendExpiration < 0 {
		return Task{}, invalid("extend_expiration", "must not be negative")
	}
	avail := now.Add(req.Delay.Std())
	if err := validTime("delay", avail); err != nil {
		return Task{}, err
	}
	return q.leaseOp(ctx, req.ID, req.LeaseToken, leaseRequest{op: opReschedule, body: rescheduleAsked{req.Delay, req.ExtendExpiration}}, now, func(t *Task) error {
		if t.ExpiresAt != nil && req.ExtendExpiration > 0 {
			exp := norm(t.ExpiresAt.Add(req.ExtendExpiration.Std()))
			if err := validTime("extend_expiration", exp); err != nil {
				return err
			}
			t.ExpiresAt = &exp
		}
		if t.CancelRequested {
			cancel(t, now) // a cancel request wins over running it again
			return nil
		}
		if t.Attempt > 0 {
			t.Attempt--
		}
		backToPending(t, avail, now, q.shardsOf(ctx, t.Queue, now))
		return nil
	})
}
