package queue

import (
	"context"
	"time"
)

// NextDue returns the earliest time a pending task of the queue falls due
// as its markers say (available_at; for a task whose lease this Queue saw
// held, the lease's end), and false when the queue has none. A time at or
// before now means something is due now. It reads this Queue's listings
// of the queue's ready/ and deadline/ prefixes (every shard), listing a
// prefix again only when its listing is older than Options.ListCacheFor,
// so right after a claim it costs nothing.
//
// The answer is a hint, as markers are: the dispatcher uses it to decide
// whether to stay with a queue whose next task is due soon (package
// dispatch). Only the first page of each prefix is read.
func (q *Queue) NextDue(ctx context.Context, queue string, now time.Time) (time.Time, bool, error) {
	now = norm(now)
	if err := ValidateQueueName(queue); err != nil {
		return time.Time{}, false, err
	}
	if _, err := q.decls.Settings(ctx, queue, LookupRead, now); err != nil {
		return time.Time{}, false, err
	}
	var (
		next  time.Time
		found bool
	)
	// Each claim index from its root, every shard at once (the listing a
	// claim reuses): the first page of a busy queue may not reach its
	// last shards, whose due times are then found by the claims.
	for _, prefix := range []string{deadlineRoot(queue), readyRoot(queue)} {
		at, ok, err := q.firstDue(ctx, prefix, now)
		if err != nil {
			return time.Time{}, false, err
		}
		if ok && (!found || at.Before(next)) {
			next, found = at, true
		}
	}
	return next, found, nil
}

// firstDue returns the earliest due time among the markers of one prefix's
// listing, listing it when the cached one is stale.
func (q *Queue) firstDue(ctx context.Context, prefix string, now time.Time) (time.Time, bool, error) {
	q.mu.Lock()
	b := q.bufs[prefix]
	fresh := b.fresh(now, q.opts.ListCacheFor)
	q.mu.Unlock()
	if !fresh {
		nb, notes, err := q.list(ctx, prefix, "", now)
		if err != nil {
			return time.Time{}, false, err
		}
		q.mu.Lock()
		q.keepLocked(prefix, nb, notes)
		b = nb
		q.mu.Unlock()
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	var (
		next  time.Time
		found bool
	)
	for _, m := range b.entries {
		at := m.available
		if until, ok := q.skip[m.key]; ok && until.After(at) {
			at = until // leased: due again when the lease ends
		}
		if !found || at.Before(next) {
			next, found = at, true
		}
	}
	return next, found, nil
}
