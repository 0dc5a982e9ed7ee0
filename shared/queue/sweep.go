package queue

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/s3q/s3q/shared/store"
)

// SweepOptions tune one Sweep.
type SweepOptions struct {
	// Publisher delivers Task Expired and Task Dead-Lettered events.
	// Defaults to none: events are dropped and recorded as sent.
	Publisher EventPublisher

	// Queues are swept besides those with a wake-up due (see
	// Queue.Sweep). Defaults to none.
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
	Now time.Time `json:"now"`
	// QueuesDue counts the queues that had a wake-up due (or were named
	// in SweepOptions.Queues); Queues those whose deadline heads this
	// sweep read. Fewer read than due means Incomplete: the next sweep
	// reads the rest.
	QueuesDue int `json:"queues_due"`
	Queues    int `json:"queues"`
	// WakeupsDeleted counts the wake-ups (and old registry entries)
	// deleted because their queue's head held nothing due.
	WakeupsDeleted int `json:"wakeups_deleted"`

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

	// NextDue is the earliest time after Now at which the sweep saw
	// something fall due: a deadline at the head of a queue it read, a
	// parked lease, an outbox or artifacts entry, or a queue's wake-up
	// (the minute a queue's deadlines start). Zero when it saw nothing
	// ahead. A caller that stays (lambdafn: while NextDue is within its
	// minute) sweeps again then, so that expiry is on time while work is
	// near due; an idle deployment's sweep sees nothing ahead and costs
	// its one LIST.
	NextDue time.Time `json:"next_due,omitzero"`

	// Requests are the store requests the sweep made, but for the reads
	// of queues' declarations, which go through the Queue's Declarations
	// (and its cache, which the process shares).
	Requests store.Counts `json:"requests"`
	// Passes is how many sweeps this report adds up: 1 for one Sweep;
	// a caller that stays and sweeps again (lambdafn) adds theirs.
	Passes int `json:"passes"`
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

// Sweep does the periodic work of expiry at now, reading only
// the heads of time-sorted indexes, so that its cost grows with what is
// due, not with what is stored, nor with how many queues exist:
//
//   - first, one LIST of the sweep index (sweep/) reads everything due
//     there: parked leases that have run out, the outbox of transitions
//     that owe follow-up work, artifacts due for deletion; that work and
//     its events are done before any queue is read;
//   - then the queues with a wake-up due (sweep/wake/{minute}_{queue},
//     written before every deadline/ marker; the same LIST shows them when
//     nothing future comes first): one LIST per queue and shard reads the
//     head of deadline/ up to the first deadline after now, Concurrency
//     queues at a time, until Deadline. A queue whose head holds nothing
//     due loses its wake-ups once they are StaleMarkerGrace old.
//
// An idle deployment (nothing due) costs one LIST, or two when a future
// lease or artifact entry comes before the wake-ups, and nothing else.
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
		q:      New(counting, q.decls, q.opts), // a fresh Queue whose requests are counted
		now:    now,
		opts:   opts,
		follow: make(map[string]*followUp),
		rep:    SweepReport{Now: now, ExpiredByType: map[string]int{}, Passes: 1},
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

// run does the sweep index's work first (parked leases, artifacts, the
// outbox, and their events), then the deadline heads of the queues that
// are due, so that no number of queues can keep events from going out.
func (r *sweepRun) run(ctx context.Context) error {
	head, err := r.readSweepHead(ctx)
	if err != nil {
		r.fail(err)
	}
	r.indexWork(ctx, head.due)
	r.finish(ctx)

	r.mu.Lock()
	r.follow = make(map[string]*followUp) // done above, or owed to the next sweep
	r.mu.Unlock()
	r.sweepQueues(ctx, head)
	r.finish(ctx)
	return r.first
}

// indexWork deals with the due entries of the sweep index: the parked
// leases and artifact deletions, then the outbox (after the leases, so
// that the outbox work of a task this sweep moved uses the record it
// wrote).
func (r *sweepRun) indexWork(ctx context.Context, due []sweepEntry) {
	var jobs []func(context.Context)
	outbox := map[string][]sweepEntry{}
	var refs []string // queue/id: ids are unique within a queue
	for _, e := range due {
		switch e.kind {
		case sweepLease:
			jobs = append(jobs, func(ctx context.Context) { r.leaseItem(ctx, e) })
		case sweepArtifacts:
			jobs = append(jobs, func(ctx context.Context) { r.artifactsItem(ctx, e) })
		case sweepEvent:
			ref := Ref(e.queue, e.id)
			if outbox[ref] == nil {
				refs = append(refs, ref)
			}
			outbox[ref] = append(outbox[ref], e)
		}
	}
	r.parallel(ctx, jobs)
	jobs = jobs[:0]
	for _, ref := range refs {
		entries := outbox[ref]
		jobs = append(jobs, func(ctx context.Context) { r.outboxItem(ctx, entries) })
	}
	r.parallel(ctx, jobs)
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

// ahead notes a time after now at which something falls due
// (SweepReport.NextDue).
func (r *sweepRun) ahead(at time.Time) {
	if !at.After(r.now) {
		return
	}
	r.mu.Lock()
	if r.rep.NextDue.IsZero() || at.Before(r.rep.NextDue) {
		r.rep.NextDue = at
	}
	r.mu.Unlock()
}

func (r *sweepRun) add(n *int, by int) {
	r.mu.Lock()
	*n += by
	r.mu.Unlock()
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
	newETag, err := r.q.commit(ctx, cur, etag, next, cleanInline)
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
	f := r.follow[t.Ref()]
	if f == nil {
		f = &followUp{}
		r.follow[t.Ref()] = f
	}
	f.task, f.etag = t, etag
	f.keys = append(f.keys, keys...)
	return f
}
