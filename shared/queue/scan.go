package queue

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"time"
)

// scanBuf is the last listing of one claim index (its root: every
// shard), made by a LIST of the root or, for both roots at once, of
// their parent (prefetch), kept so that one LIST serves many claims (LIST
// pages amortised). Entries are hints: every one is checked against its record
// before anything acts.
type scanBuf struct {
	entries   []marker
	listedAt  time.Time
	truncated bool   // more keys follow the page
	lastKey   string // the page's last key, where the next page starts
	after     string // the key the page was listed after ("": the index's head)
	// headFull says the index's head page, the last listed from its
	// start, was full (more keys followed it): kept through the pages
	// listed after it (prefetch).
	headFull bool
	// ended holds the shards (their folders) of ready/ in which a key not
	// yet due was seen: ready/ sorts by available_at within a shard, so
	// nothing later in that shard is due, and the next page starts past it.
	ended map[string]bool
	valid bool
	// dropped says this Queue dropped the index's listing (invalidate)
	// while this one's LIST was in flight: it serves the look that made
	// it and no later one.
	dropped bool
}

// fresh reports whether b may serve a look at now without a LIST: it is
// younger than cacheFor (negative: never) and was not dropped while it
// was listed.
func (b *scanBuf) fresh(now time.Time, cacheFor time.Duration) bool {
	return b != nil && b.valid && !b.dropped && cacheFor >= 0 && !now.Before(b.listedAt) && now.Sub(b.listedAt) < cacheFor
}

// add makes m a candidate of b when b covers its key (a listing cut short
// before the key reaches it on its next page).
func (b *scanBuf) add(m marker) {
	if b.truncated && m.key > b.lastKey {
		return
	}
	i := sort.Search(len(b.entries), func(i int) bool { return b.entries[i].key >= m.key })
	if i < len(b.entries) && b.entries[i].key == m.key {
		return
	}
	b.entries = append(b.entries, marker{})
	copy(b.entries[i+1:], b.entries[i:])
	b.entries[i] = m
}

// listNotes collects this Queue's writes to an index root while one LIST
// of it is in flight (list): its answer may lack them, as it may have
// been made before them, and the listing kept from it must not (a submit
// made while a dispatcher of this Queue lists the queue would go unseen
// by the dispatch its own wake starts until the listing is ListCacheFor
// old, though this Queue's own writes are to be seen at once).
type listNotes struct {
	markers []marker // noted (noteMarker): they join the listing
	dropped bool     // the listing was dropped (invalidate): so is this one, after its look
}

// maxSkip bounds the skip cache; it is cleared when it grows past this.
const maxSkip = 100_000

// spread is how many of the earliest due candidates a claim picks among at
// random, so that claimers in different processes rarely race for the
// same task while order stays close to earliest-first.
const spread = 8

// invalidate drops the listing of the claim index a marker key belongs
// to, so this Queue's own writes are seen by its next claim at once.
func (q *Queue) invalidate(key string) {
	root := indexRootOf(key)
	if root == "" {
		return
	}
	q.mu.Lock()
	for _, n := range q.notes[root] {
		n.dropped = true
	}
	delete(q.bufs, root)
	q.mu.Unlock()
}

// noteMarker makes a marker this Queue has just written a candidate of
// its next claim at once, without listing again: it joins the cached
// listing of its prefix when that listing covers its key (a listing cut
// short before the key reaches it on its next page), and the listings
// whose LIST is in flight. Without a listing, the next claim lists anyway.
func (q *Queue) noteMarker(key string) {
	m, ok := parseMarker(key)
	if !ok {
		q.invalidate(key)
		return
	}
	root := indexRootOf(key) // claims list each index from its root
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, n := range q.notes[root] {
		n.markers = append(n.markers, m)
	}
	if b := q.bufs[root]; b != nil && b.valid {
		b.add(m)
	}
}

// skipUntil records that a marker is not worth a GET before until.
func (q *Queue) skipUntil(key string, until time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.skip) >= maxSkip {
		clear(q.skip)
	}
	q.skip[key] = until
}

func (q *Queue) rememberType(id, taskType string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.types) >= maxSkip {
		clear(q.types)
	}
	q.types[id] = taskType
}

// typeFilter is the set of task types a claim accepts; empty accepts all.
type typeFilter map[string]bool

func (f typeFilter) accepts(taskType string) bool { return len(f) == 0 || f[taskType] }

// next pops the next candidate of prefix for a claim at now: a marker that
// is due (or overdue for expiry), not known to be leased, and not known to
// be of a type the claim does not take. It lists the prefix when the
// cached listing is stale or holds nothing due, at most maxPages times per
// claim (pages counts them). ok is false when nothing is left.
//
// shards is how many shards the index may have (the queue's, or the
// deployment's when more): past the last one's folder there is nothing.
func (q *Queue) next(ctx context.Context, prefix string, shards int, now time.Time, filter typeFilter, pages *int) (marker, bool, error) {
	for {
		q.mu.Lock()
		b := q.bufs[prefix]
		// A listing is fresh when this claim made it, or when it is younger
		// than ListCacheFor (negative: never) and was not dropped.
		fresh := b != nil && b.valid && (*pages > 0 || b.fresh(now, q.opts.ListCacheFor))
		if b != nil && fresh {
			if m, ok := q.popLocked(b, now, filter); ok {
				q.mu.Unlock()
				return m, true, nil
			}
		}
		// Nothing to take in the cached listing. List again from the head
		// when it is stale, or read the next page when it was cut short and
		// something further on may be due.
		var startAfter string
		switch {
		case !fresh:
		case b.truncated && !(b.ended[shardDirOf(b.lastKey)] && lastShard(shardDirOf(b.lastKey), shards)):
			startAfter = b.lastKey
			if dir := shardDirOf(b.lastKey); b.ended[dir] {
				startAfter = afterDir(dir) // nothing more of that shard is due
			}
		default:
			q.mu.Unlock()
			return marker{}, false, nil
		}
		// One claim of this Queue lists a prefix at a time; the others wait
		// for its listing instead of sending the same LIST (a herd of them
		// each second would cost requests and slow the server).
		if wait, busy := q.listing[prefix]; busy && startAfter == "" && q.opts.ListCacheFor >= 0 {
			q.mu.Unlock()
			select {
			case <-wait:
			case <-ctx.Done():
				return marker{}, false, ctx.Err()
			}
			q.mu.Lock()
			if q.bufs[prefix] != nil {
				*pages++ // the listing was made for this claim too
			}
			q.mu.Unlock()
			continue
		}
		if *pages >= q.opts.MaxScanPages {
			q.mu.Unlock()
			return marker{}, false, nil
		}
		done := make(chan struct{})
		q.listing[prefix] = done
		q.mu.Unlock()
		*pages++
		if err := q.fetch(ctx, prefix, startAfter, now, done); err != nil {
			return marker{}, false, err
		}
	}
}

// fetch lists one page of prefix from startAfter into its cached
// listing, then closes done, which the caller has registered in
// q.listing (the claims waiting on it find the new listing).
func (q *Queue) fetch(ctx context.Context, prefix, startAfter string, now time.Time, done chan struct{}) error {
	nb, notes, err := q.list(ctx, prefix, startAfter, now)
	q.mu.Lock()
	if err == nil {
		q.keepLocked(prefix, nb, notes)
	}
	delete(q.listing, prefix)
	close(done)
	q.mu.Unlock()
	return err
}

// list sends one LIST of prefix from startAfter and returns it as a
// listing made at now, with the notes of this Queue's writes to the prefix
// while it was in flight, to pass to keepLocked.
func (q *Queue) list(ctx context.Context, prefix, startAfter string, now time.Time) (*scanBuf, *listNotes, error) {
	notes := &listNotes{}
	q.mu.Lock()
	if q.notes == nil {
		q.notes = map[string][]*listNotes{}
	}
	q.notes[prefix] = append(q.notes[prefix], notes)
	q.mu.Unlock()
	from := startAfter
	if from == "" {
		from = headAfter(prefix) // past the priority folders of a default root
	}
	page, err := q.store.List(ctx, prefix, from, 0)
	if err != nil {
		q.mu.Lock()
		q.unnoteLocked(prefix, notes)
		q.mu.Unlock()
		return nil, nil, fmt.Errorf("list %s: %w", prefix, err)
	}
	nb := &scanBuf{listedAt: now, truncated: page.Truncated && len(page.Items) > 0, after: startAfter, valid: true, ended: map[string]bool{}}
	for _, it := range page.Items {
		nb.lastKey = it.Key
		if m, ok := parseMarker(it.Key); ok && indexRootOf(it.Key) == prefix {
			nb.entries = append(nb.entries, m)
		}
	}
	return nb, notes, nil
}

// keepLocked makes nb, which list returned with notes, the cached listing
// of prefix, with the markers noted while its LIST was in flight. Callers
// hold q.mu.
func (q *Queue) keepLocked(prefix string, nb *scanBuf, notes *listNotes) {
	q.unnoteLocked(prefix, notes)
	for _, m := range notes.markers {
		nb.add(m)
	}
	nb.dropped = notes.dropped
	nb.headFull = nb.truncated
	if old := q.bufs[prefix]; nb.after != "" {
		nb.headFull = old != nil && old.headFull
	}
	q.bufs[prefix] = nb
}

// unnoteLocked ends the notes of a LIST. Callers hold q.mu.
func (q *Queue) unnoteLocked(prefix string, notes *listNotes) {
	rest := slices.DeleteFunc(q.notes[prefix], func(n *listNotes) bool { return n == notes })
	if len(rest) == 0 {
		delete(q.notes, prefix)
		return
	}
	q.notes[prefix] = rest
}

// prefetch lists the claim indexes of queue that a claim is about to
// visit, that it has not listed yet (pages[i] == 0) and whose cached
// listing is stale (and that no other claim is listing). Indexes next to
// each other in key order (priority.go: deadline/'s priority folders,
// deadline/, ready/'s, ready/) are read together, with ONE LIST of their
// parent (indexesPrefix), every shard of each: an empty or sparse queue
// costs one LIST a claim whatever its shards and priorities. A lone
// index is listed from its own root. pages[i] counts the listing of
// indexRoots(queue)[i] for the claim, as next does.
//
// A listing cut short has not reached the indexes after the cut: they
// stay unlisted (pages 0), and the claim lists them when it comes to
// them (prefetch again, then next from each root with its own page
// budget, Options.MaxScanPages), so a backlog of deadline markers not yet
// due (delayed tasks with a TTL: deadline/ sorts by expiry, not
// availability) never keeps a due task of another index from a claim.
// An index whose last listing from its start was such a full page
// (headFull) ends its group: the indexes after it are read by another
// LIST at the same time, one round trip, so that a due ready/ task of a
// busy queue waits for no extra LIST.
func (q *Queue) prefetch(ctx context.Context, queue string, pages []int, now time.Time) {
	roots := indexRoots(queue)
	q.mu.Lock()
	var runs [][]int
	var cur []int
	for _, i := range keyOrder(roots) {
		root := roots[i]
		_, busy := q.listing[root]
		b := q.bufs[root]
		big := b != nil && b.headFull
		if busy || pages[i] > 0 || b.fresh(now, q.opts.ListCacheFor) {
			if big && len(cur) > 0 {
				runs, cur = append(runs, cur), nil // not worth reading through
			}
			continue
		}
		cur = append(cur, i)
		if big {
			runs, cur = append(runs, cur), nil // the page ends inside it
		}
	}
	if len(cur) > 0 {
		runs = append(runs, cur)
	}
	dones := make([]chan struct{}, len(runs))
	for r, run := range runs {
		dones[r] = make(chan struct{})
		for _, i := range run {
			q.listing[roots[i]] = dones[r]
		}
	}
	q.mu.Unlock()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for r, run := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if len(run) == 1 {
				i := run[0]
				if err := q.fetch(ctx, roots[i], "", now, dones[r]); err == nil {
					mu.Lock()
					pages[i]++
					mu.Unlock()
				}
				return
			}
			covered, err := q.fetchIndexes(ctx, queue, runAfter(roots[run[0]]), roots, run, now, dones[r])
			if err != nil {
				return // next lists each root again, and reports the error
			}
			mu.Lock()
			for _, i := range run {
				if covered[i] {
					pages[i]++
				}
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
}

// fetchIndexes lists the parent of queue's claim indexes from after into
// the cached listing of each root of want (indexes into roots) it
// reaches, then closes done, which the caller has registered in
// q.listing for those roots. covered says which roots the page reached:
// a root it was cut short before has no listing from it (its stale one
// is dropped), and is listed on its own.
func (q *Queue) fetchIndexes(ctx context.Context, queue, after string, roots []string, want []int, now time.Time, done chan struct{}) (covered []bool, err error) {
	covered = make([]bool, len(roots))
	notes := make([]*listNotes, len(roots))
	q.mu.Lock()
	if q.notes == nil {
		q.notes = map[string][]*listNotes{}
	}
	for _, i := range want {
		notes[i] = &listNotes{}
		q.notes[roots[i]] = append(q.notes[roots[i]], notes[i])
	}
	q.mu.Unlock()
	prefix := indexesPrefix(queue)
	page, err := q.store.List(ctx, prefix, after, 0)
	q.mu.Lock()
	defer q.mu.Unlock()
	defer close(done)
	for _, i := range want {
		delete(q.listing, roots[i])
		if err != nil {
			q.unnoteLocked(roots[i], notes[i])
		}
	}
	if err != nil {
		return covered, fmt.Errorf("list %s: %w", prefix, err)
	}
	truncated := page.Truncated && len(page.Items) > 0
	last := ""
	if len(page.Items) > 0 {
		last = page.Items[len(page.Items)-1].Key
	}
	nbs := make(map[string]*scanBuf, len(want))
	for _, i := range want {
		nbs[roots[i]] = &scanBuf{listedAt: now, valid: true, ended: map[string]bool{}}
	}
	for _, it := range page.Items {
		m, ok := parseMarker(it.Key)
		if !ok {
			continue
		}
		if nb := nbs[indexRootOf(it.Key)]; nb != nil {
			nb.entries = append(nb.entries, m)
		}
	}
	for _, i := range want {
		root, nb := roots[i], nbs[roots[i]]
		switch {
		case !truncated || last >= rootEnd(root):
			// The page read the whole root: every key of it sorts before last.
		case last >= rootStart(root):
			nb.truncated, nb.lastKey = true, last
		default:
			// Cut short before the root: nothing of it was read.
			q.unnoteLocked(root, notes[i])
			if !q.bufs[root].fresh(now, q.opts.ListCacheFor) {
				delete(q.bufs, root) // the claims waiting on done list it themselves
			}
			continue
		}
		covered[i] = true
		q.keepLocked(root, nb, notes[i])
	}
	return covered, nil
}

// popLocked removes and returns one candidate from b. Callers hold q.mu.
func (q *Queue) popLocked(b *scanBuf, now time.Time, filter typeFilter) (marker, bool) {
	var picks []int
	for i, m := range b.entries {
		if !m.due(now) && !m.expired(now) {
			if m.expires.IsZero() {
				b.ended[shardDirOf(m.key)] = true // ready/ sorts by available_at within a shard
			}
			continue // another shard, or (deadline/ sorts by expires_at) a later marker, may be due
		}
		if until, ok := q.skip[m.key]; ok && now.Before(until) {
			continue
		}
		if tt, ok := q.types[m.id]; ok && !filter.accepts(tt) {
			continue
		}
		picks = append(picks, i)
		if len(picks) == spread {
			break
		}
	}
	if len(picks) == 0 {
		return marker{}, false
	}
	i := picks[0]
	// An overdue marker goes first: expiring it is the sweep's job done
	// early. Otherwise, when this Queue has lately lost races to other
	// claimers, pick among the first few so that they rarely collide.
	if !b.entries[i].expired(now) && q.contended(now) {
		i = picks[rand.IntN(len(picks))]
	}
	m := b.entries[i]
	b.entries = append(b.entries[:i], b.entries[i+1:]...)
	return m, true
}

// unpop puts back a candidate another claim of this Queue may want (one
// that accepts its task type).
func (q *Queue) unpop(m marker) {
	root := indexRootOf(m.key)
	q.mu.Lock()
	defer q.mu.Unlock()
	if b := q.bufs[root]; b != nil {
		b.add(m) // a listing made since, cut short before m, meets it on its next page
	}
}

// lostRace notes that a claim lost a race at now.
func (q *Queue) lostRace(now time.Time) {
	q.mu.Lock()
	q.lastLoss = now
	q.mu.Unlock()
}

// contended reports whether this Queue lost a race in the last ten
// seconds. Callers hold q.mu.
func (q *Queue) contended(now time.Time) bool {
	return !q.lastLoss.IsZero() && now.Sub(q.lastLoss) < 10*time.Second
}

// markerTime is the time a marker's key carries: available_at for ready/
// and deadline/, the lease expiry for a parked lease (sweep/).
func (m marker) time() time.Time {
	if !m.lease.IsZero() {
		return m.lease
	}
	return m.available
}

// staleOK reports whether a marker its record does not name may be deleted
// at now: only once its time is StaleMarkerGrace behind now, so a marker a
// writer has just put, and is about to name, is never taken for stale.
func (q *Queue) staleOK(m marker, now time.Time) bool {
	return m.time().Before(now.Add(-q.opts.StaleMarkerGrace))
}

// youngMarkerSkip is how long a claim leaves alone a marker its record
// does not name (yet) and that is too young to delete: most likely a writer
// is between its two writes, which takes a round trip or two (tens of
// milliseconds on S3). Short, because the task is due: a claim that met
// the marker of a submit in flight (a push queue's dispatcher, woken by an
// earlier submit) must not hold that task back for long (at 1s it set the
// push pickup p99 at 20 tasks/s: 1.35 s, against 0.5 s at 200ms); a GET
// more per such marker is the price.
const youngMarkerSkip = 200 * time.Millisecond

// dropStale deletes a marker whose record does not name it, once that is
// safe; until then, it is skipped for a moment, not for the whole grace:
// the writer that put it is most likely about to name it.
func (q *Queue) dropStale(ctx context.Context, m marker, now time.Time) {
	if q.staleOK(m, now) {
		_ = q.store.Delete(ctx, m.key)
		return
	}
	q.skipUntil(m.key, now.Add(youngMarkerSkip))
}
