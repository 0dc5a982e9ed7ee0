package queue

import (
	"context"
	"errors"
)

// leaseItem deals with a parked task whose lease expiry has come.
func (r *sweepRun) leaseItem(ctx context.Context, e sweepEntry) {
	cur, etag, err := r.q.load(ctx, e.queue, e.id)
	if errors.Is(err, ErrNotFound) {
		r.stale(ctx, e.key, e.at)
		return
	}
	if err != nil {
		r.fail(err)
		return
	}
	if cur.IndexKey != e.key {
		r.stale(ctx, e.key, e.at)
		return
	}
	next := cur.clone()
	switch {
	case cur.Status == StatusRunning:
		r.running(ctx, &cur, etag)
	case cur.Status == StatusPending:
		// Cannot happen through the core; give it the marker it needs.
		next.IndexKey = indexKeyFor(&next, r.q.shardsOf(next.Queue))
		r.transition(ctx, &cur, etag, &next, &r.rep.Repaired)
	default:
		next.IndexKey = ""
		r.transition(ctx, &cur, etag, &next, &r.rep.Repaired)
	}
}
