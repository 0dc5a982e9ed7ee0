package queue

import (
	"context"
	"errors"
)

// deadlineItem deals with one overdue marker of deadline/.
func (r *sweepRun) deadlineItem(ctx context.Context, m marker) {
	cur, etag, err := r.q.load(ctx, m.queue, m.id)
	if errors.Is(err, ErrNotFound) {
		r.stale(ctx, m.key, m.time())
		return
	}
	if err != nil {
		r.fail(err)
		return
	}
	if cur.IndexKey != m.key {
		r.stale(ctx, m.key, m.time())
		return
	}
	next := cur.clone()
	switch {
	case cur.Status == StatusPending:
		if !cur.deadlinePassed(r.now) {
			return
		}
		expire(&next, ReasonTTL, r.now)
		r.transition(ctx, &cur, etag, &next, &r.rep.Expired)
	case cur.Status == StatusRunning:
		r.running(ctx, &cur, etag)
	default:
		// Terminal, and still naming its marker: a crash after the write.
		next.IndexKey = ""
		r.transition(ctx, &cur, etag, &next, &r.rep.Repaired)
	}
}

// running deals with a running task the sweep met: parked under its lease
// expiry while the lease is valid (heartbeats move it later), reclaimed
// once the lease has lapsed.
func (r *sweepRun) running(ctx context.Context, cur *Task, etag string) {
	next := cur.clone()
	if cur.leaseValid(r.now) {
		next.IndexKey = leaseKeyFor(cur.Queue, cur.ID, *cur.LeaseExpiresAt)
		if next.IndexKey == cur.IndexKey {
			return
		}
		r.transition(ctx, cur, etag, &next, &r.rep.Parked)
		return
	}
	if settleLapsed(&next, r.now) {
		n := &r.rep.Expired
		switch next.Status {
		case StatusCancelled:
			n = &r.rep.Cancelled
		case StatusFailed:
			n = &r.rep.DeadLettered
		}
		r.transition(ctx, cur, etag, &next, n)
		return
	}
	backToPending(&next, r.now, r.now, r.q.shardsOf(next.Queue))
	r.transition(ctx, cur, etag, &next, &r.rep.Reclaimed)
}
