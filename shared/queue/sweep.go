package queue

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/s3q/s3q/shared/store"
)

// SweepOptions tune one Sweep.
type SweepOptions struct {
	// Publisher delivers Task Expired and Task Dead-Lettered events.
	// Defaults to none: events are dropped and recorded as sent.
	Publisher EventPublisher

	// Queues are swept besides those in the registry (every queue a
	// Submit has used). Defaults to none.
	Queues []string

	// Deadline is the wall-clock time at which the sweep starts no new
	// work: what it has begun it finishes (a few requests per task), and
	// what it has not begun waits for the next sweep, which finds it at
	// the head of the same indexes. Defaults to 3s before ctx's deadline,
	// or none when ctx has none.
	Deadline time.Time

	// Clock reads the wall clock, for Deadline and Duration only: task
	// times always come from now. Defaults to time.Now.
	Clock func() time.Time

	// Concurrency is how many tasks the sweep works on at once.
	// Defaults to 16.
	Concurrency int

	// NearWindow is how far ahead of now SweepReport.NearExpiration
	// counts deadlines. Defaults to 5m.
	NearWindow time.Duration
}

// SweepReport says what one Sweep did, for logs and metrics.
type SweepReport struct {
	Now    time.Time `json:"now"`
	Queues int       `json:"queues"` // queues whose deadline index was read

	Expired         int `json:"expired"`           // tasks expired for their ttl (pending, or running with a lapsed lease)
	ExpiredByParent int `json:"expired_by_parent"` // pending children expired with their parent
	CancelRequested int `json:"cancel_requested"`  // running children asked to cancel (on_parent_expired=cancel)
	Reclaimed       int `json:"reclaimed"`         // lapsed leases back to pending, runnable now
	DeadLettered    int `json:"dead_lettered"`     // lapsed leases with attempts spent, to failed
	Cancelled       int `json:"cancelled"`         // lapsed leases of tasks asked to cancel, to cancelled
	Parked          int `json:"parked"`            // running tasks moved to the sweep index until their lease ends
	Repaired        int `json:"repaired"`          // records that still named a marker they should not
	StaleMarkers    int `json:"stale_markers"`     // stale markers and hints deleted
	Conflicts       int `json:"conflicts"`         // transitions lost to another writer (it acted instead)

	EventsSent   int `json:"events_sent"`
	EventsFailed int `json:"events_failed"` // left owed for the next sweep

	ArtifactsDeleted int `json:"artifacts_deleted"`

	// NearExpiration counts pending deadlines due within NearWindow, as
	// seen in the LIST pages the sweep read anyway (a lower bound when the
	// window runs past a page; running tasks not yet parked are counted).
	NearExpiration int `json:"near_expiration"`

	// ExpiredByType counts, by task type, the expired tasks whose Task
	// Expired event this sweep delivered, whoever expired them (this
	// sweep, a claim, Expire, a submit with ttl=0): every expiry is
	// counted once, or twice if a sweep dies between publishing the event
	// and noting it. It is the source of tasks_expired_total.
	ExpiredByType map[string]int `json:"expired_by_type,omitempty"`

	// Requests are the store requests the sweep made.
	Requests store.Counts `json:"requests"`
	// Duration is the wall-clock time the sweep took.
	Duration time.Duration `json:"duration_ns"`
	// Incomplete is true when the sweep stopped at its Deadline (or ctx
	// ended) with work left; the next sweep picks it up.
	Incomplete bool `json:"incomplete"`
	// Errors counts the tasks the sweep could not finish because of an
	// error; they are retried by the next sweep.
	Errors int `json:"errors"`
}

// maxHeadPages bounds the LIST pages one sweep reads per index prefix; a
// longer head is left for the next sweep (Incomplete).
const maxHeadPages = 20

// maxCascadeDepth bounds how many generations of children one sweep
// expires; deeper ones are done by the next sweep, from the outbox.
const maxCascadeDepth = 4

// Sweep does the periodic work of DESIGN.md §3 and §7 at now, reading only
// the heads of time-sorted indexes, so that its cost grows with what is
// due, not with what is stored:
//
//   - one LIST of the sweep index (sweep/) reads the queue registry and
//     everything due there: parked leases that have run out, the outbox of
//     transitions that owe follow-up work, artifacts due for deletion;
//   - one LIST per queue and shard reads the head of deadline/ up to the
//     first deadline after now.
//
// An idle deployment (nothing due) costs those LISTs and nothing else.
//
// Then, each by one conditional write of its record: a pending task past
// its expires_at is marked expired (expired_at, expiry_reason ttl) and its
// marker dropped; a running task met in deadline/ is parked, its marker
// moved to the sweep index at its lease expiry, so that later sweeps do not
// meet it again until then; a parked task whose lease has run out is
// reclaimed (expired when its deadline has passed, cancelled when a cancel
// was requested, failed when its attempts are spent, else pending,
// runnable now); stale markers are deleted once StaleMarkerGrace behind
// now; a terminal record that still names a marker is repaired.
//
// Follow-up work, from the outbox (written before each transition that
// owes it, by whichever process made it: a claim, Expire, Fail, Submit
// with ttl=0, or this sweep): an expired parent's pending children are
// expired (reason parent_expired) and its running children with
// on_parent_expired=cancel get cancel_requested; a finished task's
// artifacts are deleted; Task Expired and Task Dead-Lettered events are
// published, and only once the publisher has delivered them does the
// record note it (expiry_event_sent_at, dead_letter_event_sent_at) and the
// outbox entry go. Publishing is at-least-once.
//
// Sweeps may run concurrently with each other and with claims: every
// transition is a compare-and-swap, so a task is moved once, and the loser
// re-reads or leaves it. A sweep that dies half-way leaves markers and
// outbox entries that the next sweep finds at the head and finishes.
//
// The report counts what was done; the error, if any, is the first of
// the errors met (the sweep goes on past them).
func (q *Queue) Sweep(ctx context.Context, now time.Time, opts SweepOptions) (SweepReport, error) {
	now = norm(now)
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = 16
	}
	if opts.NearWindow <= 0 {
		opts.NearWindow = 5 * time.Minute
	}
	if opts.Deadline.IsZero() {
		if d, ok := ctx.Deadline(); ok {
			opts.Deadline = d.Add(-3 * time.Second)
		}
	}
	for _, name := range opts.Queues {
		if err := ValidateQueueName(name); err != nil {
			return SweepReport{}, err
		}
	}
	started := opts.Clock()
	counting := store.NewCounting(q.store)
	r := &sweepRun{
		q:      New(counting, q.opts), // a fresh Queue whose requests are counted
		now:    now,
		opts:   opts,
		follow: make(map[string]*followUp),
		rep:    SweepReport{Now: now, ExpiredByType: map[string]int{}},
	}
	err := r.run(ctx)
	r.rep.Requests = counting.Counts()
	r.rep.Duration = opts.Clock().Sub(started)
	return r.rep, err
}

// sweepRun is the state of one Sweep.
type sweepRun struct {
	q    *Queue
	now  time.Time
	opts SweepOptions

	mu     sync.Mutex
	rep    SweepReport
	follow map[string]*followUp // task id -> its follow-up work
	first  error
}

// followUp is the outbox work of one task: its record as last known (and
// the ETag to write it with), and the outbox entries to delete once done.
type followUp struct {
	task     Task
	etag     string
	keys     []string
	cascaded bool // its children have been dealt with (an expired parent)
	blocked  bool // something failed: leave it owed for the next sweep
	events   []Event
	sent     bool // every event delivered
}

func (r *sweepRun) run(ctx context.Context) error {
	queues, due, err := r.readSweepHead(ctx)
	if err != nil {
		r.fail(err)
		return r.first
	}
	for _, name := range r.opts.Queues {
		queues[name] = true
	}
	names := make([]string, 0, len(queues))
	for name := range queues {
		names = append(names, name)
	}
	sort.Strings(names)
	r.rep.Queues = len(names)

	// What is due: the deadline heads, the sweep head.
	var jobs []func(context.Context)
	for _, name := range names {
		for shard := 0; shard < r.q.readShards(name); shard++ {
			ms, err := r.readDeadlineHead(ctx, deadlinePrefix(name, shard))
			if err != nil {
				r.fail(err)
			}
			for _, m := range ms {
				jobs = append(jobs, func(ctx context.Context) { r.deadlineItem(ctx, m) })
			}
		}
	}
	outbox := map[string][]sweepEntry{}
	var ids []string
	for _, e := range due {
		switch e.kind {
		case sweepLease:
			jobs = append(jobs, func(ctx context.Context) { r.leaseItem(ctx, e) })
		case sweepArtifacts:
			jobs = append(jobs, func(ctx context.Context) { r.artifactsItem(ctx, e) })
		case sweepEvent:
			if outbox[e.subject] == nil {
				ids = append(ids, e.subject)
			}
			outbox[e.subject] = append(outbox[e.subject], e)
		}
	}

	// Transitions first, so that the outbox work of a task this sweep
	// moved uses the record it wrote.
	r.parallel(ctx, jobs)
	jobs = jobs[:0]
	for _, id := range ids {
		entries := outbox[id]
		jobs = append(jobs, func(ctx context.Context) { r.outboxItem(ctx, id, entries) })
	}
	r.parallel(ctx, jobs)
	r.finish(ctx)
	return r.first
}

// out reports whether the sweep must start no new work.
func (r *sweepRun) out(ctx context.Context) bool {
	if ctx.Err() != nil || (!r.opts.Deadline.IsZero() && !r.opts.Clock().Before(r.opts.Deadline)) {
		return r.incomplete()
	}
	return false
}

// incomplete notes that work was left for the next sweep; it returns true.
func (r *sweepRun) incomplete() bool {
	r.mu.Lock()
	r.rep.Incomplete = true
	r.mu.Unlock()
	return true
}

// parallel runs jobs, Concurrency at a time, until they are done or the
// sweep is out of time.
func (r *sweepRun) parallel(ctx context.Context, jobs []func(context.Context)) {
	sem := make(chan struct{}, r.opts.Concurrency)
	var wg sync.WaitGroup
	for _, job := range jobs {
		if r.out(ctx) {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			job(ctx)
		}()
	}
	wg.Wait()
}

func (r *sweepRun) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rep.Errors++
	if r.first == nil {
		r.first = err
	}
}

func (r *sweepRun) add(n *int, by int) {
	r.mu.Lock()
	*n += by
	r.mu.Unlock()
}

// readSweepHead lists the sweep index from its start up to the first entry
// after now: the queue registry (which sorts first) and the due entries.
func (r *sweepRun) readSweepHead(ctx context.Context) (map[string]bool, []sweepEntry, error) {
	queues := map[string]bool{}
	var due []sweepEntry
	after := ""
	for pages := 0; ; pages++ {
		if r.out(ctx) || pages == maxHeadPages && r.incomplete() { // also before the first page: a late sweep lists nothing more
			break
		}
		page, err := r.q.store.List(ctx, prefixSweep, after, 0)
		if err != nil {
			return nil, nil, fmt.Errorf("list %s: %w", prefixSweep, err)
		}
		future := false
		for _, it := range page.Items {
			e, ok := parseSweepKey(it.Key)
			if !ok {
				continue
			}
			if e.at.After(r.now) {
				future = true
				break
			}
			if e.kind == sweepQueue {
				queues[e.subject] = true
			} else {
				due = append(due, e)
			}
		}
		if future || !page.Truncated || len(page.Items) == 0 {
			break
		}
		after = page.Items[len(page.Items)-1].Key
	}
	return queues, due, nil
}

// readDeadlineHead lists a deadline/ prefix from its start and returns the
// markers whose deadline is at or before now, counting on the way the
// deadlines due within NearWindow that the pages read show.
func (r *sweepRun) readDeadlineHead(ctx context.Context, prefix string) ([]marker, error) {
	var due []marker
	near := 0
	after := ""
	horizon := r.now.Add(r.opts.NearWindow)
	for pages := 0; ; pages++ {
		if r.out(ctx) || pages == maxHeadPages && r.incomplete() { // also before the first page: a late sweep lists nothing more
			break
		}
		page, err := r.q.store.List(ctx, prefix, after, 0)
		if err != nil {
			return due, fmt.Errorf("list %s: %w", prefix, err)
		}
		future := false
		for _, it := range page.Items {
			m, ok := parseMarker(it.Key)
			if !ok {
				continue
			}
			if m.expires.After(r.now) {
				future = true
				if m.expires.After(horizon) {
					break
				}
				near++
				continue
			}
			due = append(due, m)
		}
		if future || !page.Truncated || len(page.Items) == 0 {
			break
		}
		after = page.Items[len(page.Items)-1].Key
	}
	r.add(&r.rep.NearExpiration, near)
	return due, nil
}

// stale deletes a marker or hint whose record does not want it, once its
// time is StaleMarkerGrace behind now (a writer may be about to name it).
func (r *sweepRun) stale(ctx context.Context, key string, at time.Time) {
	if !at.Before(r.now.Add(-r.q.opts.StaleMarkerGrace)) {
		return
	}
	if err := r.q.store.Delete(ctx, key); err != nil {
		r.fail(fmt.Errorf("delete stale %s: %w", key, err))
		return
	}
	r.add(&r.rep.StaleMarkers, 1)
}

// transition commits one change the sweep decided, counts it in *n, and
// queues the follow-up work it owes.
func (r *sweepRun) transition(ctx context.Context, cur *Task, etag string, next *Task, n *int) {
	newETag, err := r.q.commit(ctx, cur, etag, next)
	if errors.Is(err, store.ErrPrecondition) {
		r.add(&r.rep.Conflicts, 1) // another writer moved it; it is theirs
		return
	}
	if err != nil {
		r.fail(err)
		return
	}
	r.add(n, 1)
	if followUpDue(cur, next) {
		r.addFollowUp(*next, newETag, outboxKey(next))
	}
}

func (r *sweepRun) addFollowUp(t Task, etag string, keys ...string) *followUp {
	r.mu.Lock()
	defer r.mu.Unlock()
	f := r.follow[t.ID]
	if f == nil {
		f = &followUp{}
		r.follow[t.ID] = f
	}
	f.task, f.etag = t, etag
	f.keys = append(f.keys, keys...)
	return f
}

// deadlineItem deals with one overdue marker of deadline/.
func (r *sweepRun) deadlineItem(ctx context.Context, m marker) {
	cur, etag, err := r.q.load(ctx, m.id)
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

// leaseItem deals with a parked task whose lease expiry has come.
func (r *sweepRun) leaseItem(ctx context.Context, e sweepEntry) {
	cur, etag, err := r.q.load(ctx, e.subject)
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

// running deals with a running task the sweep met: parked under its lease
// expiry while the lease is valid (heartbeats move it later), reclaimed
// once the lease has lapsed.
func (r *sweepRun) running(ctx context.Context, cur *Task, etag string) {
	next := cur.clone()
	if cur.leaseValid(r.now) {
		next.IndexKey = leaseKeyFor(cur.ID, *cur.LeaseExpiresAt)
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

// artifactsItem deletes a task's artifacts whose time has come, unless a
// later reservation moved their time (a later entry exists then).
func (r *sweepRun) artifactsItem(ctx context.Context, e sweepEntry) {
	cur, _, err := r.q.load(ctx, e.subject)
	switch {
	case errors.Is(err, ErrNotFound):
	case err != nil:
		r.fail(err)
		return
	case !cur.Status.Terminal() && cur.ArtifactsExpireAt != nil && cur.ArtifactsExpireAt.After(e.at):
		if err := r.q.store.Delete(ctx, e.key); err != nil {
			r.fail(err)
		}
		return
	}
	n, err := r.q.deleteArtifacts(ctx, e.subject)
	r.add(&r.rep.ArtifactsDeleted, n)
	if err != nil {
		r.fail(err)
		return
	}
	if err := r.q.store.Delete(ctx, e.key); err != nil {
		r.fail(err)
	}
}

// outboxItem reads the record behind outbox entries and queues its
// follow-up work, or deletes the entries as stale when it owes none.
func (r *sweepRun) outboxItem(ctx context.Context, id string, entries []sweepEntry) {
	keys := make([]string, len(entries))
	for i, e := range entries {
		keys[i] = e.key
	}
	r.mu.Lock()
	f := r.follow[id]
	if f != nil {
		f.keys = append(f.keys, keys...) // this sweep moved it: it has the record
	}
	r.mu.Unlock()
	if f != nil {
		return
	}
	t, etag, err := r.q.load(ctx, id)
	if err != nil && !errors.Is(err, ErrNotFound) {
		r.fail(err)
		return
	}
	if err != nil || !owesFollowUp(&t) {
		for _, e := range entries {
			r.stale(ctx, e.key, e.at)
		}
		return
	}
	r.addFollowUp(t, etag, keys...)
}

// owesFollowUp reports whether a record still wants outbox work.
func owesFollowUp(t *Task) bool {
	return t.owesExpiryEvent() || t.owesDeadLetterEvent() || (t.Status.Terminal() && t.ArtifactsExpireAt != nil)
}
