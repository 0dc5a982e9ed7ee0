package queue

import (
	"context"
	"time"
)

// NextDue returns the earliest time a pending task of the queue falls due
// as its markers say (available_at; for a task whose lease this Queue saw
// held, the lease's end), and false when the queue has none. A time at or
// before now means something is due now. It reads this Queue's listings
// of the queue's claim indexes (index/deadline/ and index/ready/, every
// shard), listing them again only when a listing is older than
// Options.ListCacheFor, so right after a claim it costs nothing, and
// otherwise one LIST of their parent while they are sparse (as a claim
// does, see prefetch), or one LIST of each when deadline/ fills a page.
//
// The answer is a hint, as markers are: the dispatcher uses it to decide
// whether to stay with a queue whose next task is due soon (package
// dispatch). Only the first page of each index is read.
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
	// The listing a claim reuses: the first page of a busy queue may not
	// reach its last shards, whose due times are then found by the claims.
	roots := indexRoots(queue)
	pages := make([]int, len(roots))
	q.prefetch(ctx, queue, pages, now)
	for i, root := range roots {
		at, ok, err := q.firstDue(ctx, root, pages[i] > 0, now)
		if err != nil {
			return time.Time{}, false, err
		}
		if ok && (!found || at.Before(next)) {
			next, found = at, true
		}
	}
	return next, found, nil
}

// firstDue returns the earliest due time among the markers of one index
// root's listing, listing the root when the cached listing is stale and
// was not listed for this look (listed).
func (q *Queue) firstDue(ctx context.Context, prefix string, listed bool, now time.Time) (time.Time, bool, error) {
	q.mu.Lock()
	b := q.bufs[prefix]
	fresh := b != nil && b.valid && (listed || b.fresh(now, q.opts.ListCacheFor))
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
