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
