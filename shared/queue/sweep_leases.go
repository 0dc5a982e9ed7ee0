package queue

import (
	"context"
	"errors"
)

// What happens when a lease expires is in two files: here, for the
// sweep (a running task it meets is parked under its lease expiry in the
// sweep index, and settled when that time comes), and claim.go, for a
// claim that meets a lapsed lease (tryClaim, settleLapsed): either runs
// the task again under a new lease or ends it (expired, cancelled or
// dead-lettered), in one conditional write of the record.

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
		next.IndexKey = indexKeyFor(&next, r.q.shardsOf(ctx, next.Queue, r.now))
		r.transition(ctx, &cur, etag, &next, &r.rep.Repaired)
	default:
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
	backToPending(&next, r.now, r.now, r.q.shardsOf(ctx, next.Queue, r.now))
	r.transition(ctx, cur, etag, &next, &r.rep.Reclaimed)
}
