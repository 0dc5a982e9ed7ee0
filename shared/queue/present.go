package queue

import "time"

// AsOf returns t as a read at now tells it: a pending task whose
// expires_at has passed is shown expired (expired_at its expires_at,
// expiry_reason ttl) whether or not the write that expires it has
// happened yet. That write is made by the first claim, dispatch, wait or
// sweep to meet the task, the sweep within seconds of expires_at while
// work is near due (docs/guarantees.md); until then the record says
// pending, and no claim ever starts it (a claim checks the deadline
// itself). Any other task is returned as it is.
//
// It is a presentation, not a transition: it writes nothing, and the
// Task Expired event stays owed until the sweep publishes it.
func (t Task) AsOf(now time.Time) Task {
	if t.Status != StatusPending || !t.deadlinePassed(now) {
		return t
	}
	p := t.clone()
	p.Status = StatusExpired
	p.ExpiredAt = ptr(*t.ExpiresAt)
	p.ExpiryReason = ReasonTTL
	return p
}
