package queue

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// queueWork is one queue's part of a sweep: the wake-ups that made it due
// and what the read of its deadline heads found.
type queueWork struct {
	name  string
	wakes []wakeEntry // due wake-ups (and old registry entries) of this queue
	due   []marker    // markers whose deadline is at or before now
	next  time.Time   // the first future deadline seen; zero if none
	read  bool        // its heads were read (the sweep had time)
	clean bool        // every shard's head was read to its first future key or its end, without error
}

// dueQueues returns the queues whose deadline heads this sweep reads:
// those with a wake-up at or before now (the
// head of sweep/wake/, oldest first, at most maxHeadPages pages, of which
// the sweep index's LIST may have shown all or the first), and
// SweepOptions.Queues. It is the one place that enumerates queues; its
// cost grows with the queues that may hold something due, not with the
// queues that exist.
func (r *sweepRun) dueQueues(ctx context.Context, head sweepHead) ([]*queueWork, error) {
	var out []*queueWork
	byName := map[string]*queueWork{}
	add := func(name string, w *wakeEntry) {
		q := byName[name]
		if q == nil {
			q = &queueWork{name: name}
			byName[name] = q
			out = append(out, q)
		}
		if w != nil {
			q.wakes = append(q.wakes, *w)
		}
	}
	for i := range head.wakes {
		add(head.wakes[i].queue, &head.wakes[i])
	}
	after := head.wakeFrom
	var err error
	for pages := 0; !head.wakeDone; pages++ {
		if r.out(ctx) || pages == maxHeadPages && r.incomplete() {
			break
		}
		page, lerr := r.q.store.List(ctx, prefixWake, after, 0)
		if lerr != nil {
			err = fmt.Errorf("list %s: %w", prefixWake, lerr)
			break
		}
		future := false
		for _, it := range page.Items {
			w, ok := parseWakeKey(it.Key)
			if !ok {
				continue
			}
			if w.at.After(r.now) {
				r.ahead(w.at)
				future = true
				break
			}
			add(w.queue, &w)
		}
		if future || !page.Truncated || len(page.Items) == 0 {
			break
		}
		after = page.Items[len(page.Items)-1].Key
	}
	for _, name := range r.opts.Queues {
		add(name, nil)
	}
	return out, err
}

// sweepQueues reads the deadline heads of the due queues, Concurrency at
// a time and within the sweep's time, deals with their due markers, and
// then deletes the wake-ups of the queues whose heads held nothing due.
// The queues it has no time for stay due (Incomplete); the next sweep
// reads them.
func (r *sweepRun) sweepQueues(ctx context.Context, head sweepHead) {
	work, err := r.dueQueues(ctx, head)
	if err != nil {
		r.fail(err)
	}
	r.rep.QueuesDue = len(work)
	jobs := make([]func(context.Context), 0, len(work))
	for _, w := range work {
		jobs = append(jobs, func(ctx context.Context) { r.readQueue(ctx, w) })
	}
	r.parallel(ctx, jobs)

	jobs = jobs[:0]
	var retire []func(context.Context)
	for _, w := range work {
		if !w.read {
			continue
		}
		r.rep.Queues++
		for _, m := range w.due {
			jobs = append(jobs, func(ctx context.Context) { r.deadlineItem(ctx, m) })
		}
		if w.clean && len(w.due) == 0 {
			retire = append(retire, func(ctx context.Context) { r.retire(ctx, w) })
		}
	}
	r.parallel(ctx, jobs)
	r.parallel(ctx, retire)
}

// readQueue reads the deadline head of one queue, every shard in one
// LIST while they are sparse.
func (r *sweepRun) readQueue(ctx context.Context, w *queueWork) {
	w.clean = true
	d, err := r.q.decls.Settings(ctx, w.name, LookupRead, r.now)
	if err != nil && !errors.Is(err, ErrQueueNotFound) {
		r.fail(err)
		w.clean = false
	}
	shards := d.ReadShards
	if err != nil {
		shards = MaxShards // undeclared: read every shard a marker may be in
	}
	due, next, done, err := r.readDeadlineHead(ctx, deadlineRoot(w.name), shards)
	w.due = append(w.due, due...)
	if err != nil {
		r.fail(err)
	}
	if err != nil || !done {
		w.clean = false
	}
	w.next = next
	r.ahead(next)
	w.read = true
}

// retire deletes the wake-ups of a queue whose heads held nothing due,
// once their minute is StaleMarkerGrace behind now (a writer that relied
// on one may be about to write its marker; see Queue.wake). A queue with
// a later deadline gets that deadline's wake-up first, so an old registry
// entry, or a wake-up a crash lost, is replaced rather than dropped.
func (r *sweepRun) retire(ctx context.Context, w *queueWork) {
	var old []string
	for _, e := range w.wakes {
		if e.at.Before(r.now.Add(-r.q.opts.StaleMarkerGrace)) {
			old = append(old, e.key)
		}
	}
	if len(old) == 0 {
		return
	}
	if !w.next.IsZero() {
		if err := putHint(ctx, r.q.store, wakeKey(w.name, w.next)); err != nil {
			r.fail(err)
			return
		}
	}
	for _, key := range old {
		if err := r.q.store.Delete(ctx, key); err != nil {
			r.fail(fmt.Errorf("delete %s: %w", key, err))
			return
		}
	}
	r.add(&r.rep.WakeupsDeleted, len(old))
}

// readDeadlineHead lists a queue's deadline index (root, every shard)
// from its start and returns the markers whose deadline is at or before
// now, the first later deadline (zero if none), and whether it read up to
// that deadline in every shard or the end of the index. A shard sorts by
// deadline, so once a shard shows a later deadline the listing skips the
// rest of it (StartAfter past its folder). On the way it counts the
// deadlines due within NearWindow that the pages read show.
func (r *sweepRun) readDeadlineHead(ctx context.Context, root string, shards int) (due []marker, next time.Time, done bool, err error) {
	near := 0
	after := ""
	horizon := r.now.Add(r.opts.NearWindow)
	defer func() { r.add(&r.rep.NearExpiration, near) }()
	past := map[string]bool{}   // shards that showed a later deadline
	closed := map[string]bool{} // shards that showed one past the horizon
	for pages := 0; ; pages++ {
		if r.out(ctx) || pages == maxHeadPages && r.incomplete() { // also before the first page: a late sweep lists nothing more
			return due, next, false, nil
		}
		page, err := r.q.store.List(ctx, root, after, 0)
		if err != nil {
			return due, next, false, fmt.Errorf("list %s: %w", root, err)
		}
		for _, it := range page.Items {
			dir := shardDirOf(it.Key)
			m, ok := parseMarker(it.Key)
			if !ok || closed[dir] {
				continue
			}
			if !m.expires.After(r.now) {
				due = append(due, m)
				continue
			}
			past[dir] = true
			if next.IsZero() || m.expires.Before(next) {
				next = m.expires
			}
			if m.expires.After(horizon) {
				closed[dir] = true
				continue
			}
			near++
		}
		if !page.Truncated || len(page.Items) == 0 {
			return due, next, true, nil
		}
		after = page.Items[len(page.Items)-1].Key
		if dir := shardDirOf(after); past[dir] {
			if lastShard(dir, shards) && isDefaultRoot(indexRootOf(dir)) {
				return due, next, true, nil // (the priority folders sort before the default's shards)
			}
			after = afterDir(dir)
		}
	}
}
