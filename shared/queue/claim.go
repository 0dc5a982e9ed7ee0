package queue

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/s3q/s3q/shared/store"
)

// ClaimRequest asks for work from one queue.
type ClaimRequest struct {
	// Queue to claim from. Defaults to "default".
	Queue string `json:"queue,omitempty"`
	// TaskTypes limits the claim to these types. Defaults to any type.
	// The type is not in the index key, so a mixed queue costs one GET per
	// task of another type (remembered afterwards); give each type its own
	// queue when that matters.
	TaskTypes []string `json:"task_types,omitempty"`
	// LeaseFor is the lease length. 0 means each task's own timeout;
	// negative or over MaxLease is ErrInvalidLeaseDuration.
	LeaseFor time.Duration `json:"-"`
	// WorkerID is recorded on the task, for people. Optional.
	WorkerID string `json:"worker_id,omitempty"`
	// MaxTasks is how many tasks to claim at most, 1 to 100. Defaults to 1.
	MaxTasks int `json:"max_tasks,omitempty"`
}

// Claim leases up to MaxTasks available tasks of a queue and returns them,
// or an empty slice (and no error) when nothing is available.
//
// Order, best effort: tasks with a deadline, earliest deadline first, then
// the rest, oldest available_at first. Each task is started by one
// conditional write of its record, so of many concurrent claimers exactly
// one gets it, and no claim returns a task whose lease another holder still
// has. Along the way Claim does the sweeper's work on what it meets: a
// pending task whose expires_at <= now is marked expired and never started;
// a running task whose lease has expired is reclaimed (started again under
// the new lease, or expired when its deadline has passed, or cancelled
// when a cancel was requested, or failed when its attempts are spent); a
// stale marker is deleted.
//
// A task with ttl_from=first_attempt gets its expires_at on its first claim.
//
// The queue's declaration is read through Declarations (LookupRead: once
// per its cache time): an undeclared queue is ErrQueueNotFound where
// declarations are required, and a queue with max_concurrency starts a
// task only when it takes one of its slots (side_slot.go), so fewer tasks, or
// none, come back while the queue runs max_concurrency tasks already. A
// paused queue gives nothing, at the cost of the declaration's read alone.
//
// A queue with max_per_second starts a claim's candidates only as its
// rate limit grants them (ratelimit.go: one conditional write once
// candidates are found). A claim that the limit holds back before it has
// started anything returns a *RateLimitedError (ErrRateLimited) saying
// how long to wait; one that started some returns them.
func (q *Queue) Claim(ctx context.Context, req ClaimRequest, now time.Time) ([]Claimed, error) {
	now = norm(now)
	var err error
	if req.Queue, err = q.scoped("queue", req.Queue); err != nil {
		return nil, err
	}
	if req.Queue == "" {
		req.Queue = DefaultQueue
	}
	if err := ValidateQueueName(req.Queue); err != nil {
		return nil, err
	}
	filter := typeFilter{}
	for _, tt := range req.TaskTypes {
		if err := ValidateTaskType("task_types", tt); err != nil {
			return nil, err
		}
		filter[tt] = true
	}
	if err := checkLeaseFor(req.LeaseFor); err != nil {
		return nil, err
	}
	if err := validText("worker_id", req.WorkerID, MaxWorkerIDBytes); err != nil {
		return nil, err
	}
	switch {
	case req.MaxTasks == 0:
		req.MaxTasks = 1
	case req.MaxTasks < 0 || req.MaxTasks > maxClaim:
		return nil, invalid("max_tasks", "must be between 1 and %d", maxClaim)
	}

	d, err := q.decls.Settings(ctx, req.Queue, LookupRead, now)
	if err != nil {
		return nil, err
	}
	if d.Paused {
		return []Claimed{}, nil // pause.go: nothing starts while paused
	}
	if wait, err := q.heldFor(ctx, d, now); err != nil {
		return nil, err
	} else if wait > 0 {
		// The rate state this Queue saw last holds every start back: no
		// request (ratelimit.go).
		return nil, &RateLimitedError{Queue: req.Queue, RetryAfter: wait}
	}
	run := &claimRun{req: req, filter: filter, decl: d}
	out := []Claimed{}
	// The two claim indexes are listed with one LIST of their parent,
	// every shard of each at once: an empty claim costs one LIST whatever
	// the queue's shards, and a task due in any shard is in the listing
	// (see prefetch and next). Each index then has its own page budget.
	shards := d.ReadShards
	{
		roots := indexRoots(req.Queue)
		pages := make([]int, len(roots))
		q.prefetch(ctx, req.Queue, pages, now)
		for j, prefix := range roots {
			if len(out) < req.MaxTasks && !run.slots.busy && run.heldFor == 0 && pages[j] == 0 {
				// Not reached by the listing so far (cut short before it):
				// list it with the indexes after it that are not listed yet.
				q.prefetch(ctx, req.Queue, pages, now)
			}
			for len(out) < req.MaxTasks && !run.slots.busy && run.heldFor == 0 {
				// Up to as many candidates as tasks wanted, tried at once
				// (one at a time under max_concurrency: each takes a slot).
				want := req.MaxTasks - len(out)
				if d.MaxConcurrency > 0 {
					want = 1
				}
				var ms []marker
				var nextErr error
				for len(ms) < want {
					m, ok, err := q.next(ctx, prefix, shards, now, filter, &pages[j])
					if err != nil {
						nextErr = err
						break
					}
					if !ok {
						break
					}
					ms = append(ms, m)
				}
				if len(ms) == 0 {
					if nextErr != nil {
						return out, nextErr
					}
					break
				}
				if ms, err = q.granted(ctx, ms, run, now); err != nil || len(ms) == 0 {
					if err != nil {
						if len(out) > 0 {
							return out, nil
						}
						return nil, err
					}
					break // held back by the rate limit
				}
				cs, err := q.tryClaimAll(ctx, ms, run, now)
				run.grants -= len(cs)
				out = append(out, cs...)
				if err != nil {
					if len(out) > 0 {
						return out, nil // hand over what we have; the error repeats next time
					}
					return nil, err
				}
			}
		}
	}
	if len(out) == 0 && run.heldFor > 0 {
		return nil, &RateLimitedError{Queue: req.Queue, RetryAfter: run.heldFor}
	}
	return out, nil
}

// granted returns the candidates ms that the queue's rate limit lets
// start (all of them without one), asking it for what the grants this
// claim holds do not cover, and puts the others back. When it lets none
// start, run.heldFor says for how long.
func (q *Queue) granted(ctx context.Context, ms []marker, run *claimRun, now time.Time) ([]marker, error) {
	if run.decl.MaxPerSecond <= 0 {
		return ms, nil
	}
	if need := len(ms) - run.grants; need > 0 {
		n, wait, err := q.grantStarts(ctx, run.decl, need, now)
		if err != nil {
			for _, m := range ms {
				q.unpop(m)
			}
			return nil, err
		}
		run.grants += n
		if run.grants == 0 {
			run.heldFor = wait
		}
	}
	if run.grants < len(ms) {
		for _, m := range ms[run.grants:] {
			q.unpop(m)
		}
		ms = ms[:run.grants]
	}
	return ms, nil
}

// tryClaimAll tries the candidates at once and returns the tasks it
// claimed, in the candidates' order, and the first error met.
func (q *Queue) tryClaimAll(ctx context.Context, ms []marker, run *claimRun, now time.Time) ([]Claimed, error) {
	if len(ms) == 1 {
		c, err := q.tryClaim(ctx, ms[0], run, now)
		if c == nil {
			return nil, err
		}
		return []Claimed{*c}, err
	}
	got := make([]*Claimed, len(ms))
	errs := make([]error, len(ms))
	var wg sync.WaitGroup
	for i, m := range ms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = q.tryClaim(ctx, m, run, now)
		}()
	}
	wg.Wait()
	var out []Claimed
	var first error
	for i, c := range got {
		if c != nil {
			out = append(out, *c)
		}
		if first == nil {
			first = errs[i]
		}
	}
	return out, first
}

// claimRun is what one Claim call carries from candidate to candidate.
type claimRun struct {
	req    ClaimRequest
	filter typeFilter
	decl   Settings // the queue's declaration
	slots  slotRun  // its concurrency slots, with max_concurrency
	// grants are the starts the queue's rate limit granted this claim and
	// it has not used yet; heldFor, when the limit granted none, how long
	// until it may (ratelimit.go).
	grants  int
	heldFor time.Duration
}

// tryClaim examines one candidate marker and claims its task if it can.
// It returns nil, nil when the candidate was not claimable (and deals with
// it: expired, reclaimed-and-failed, stale marker deleted, or skipped), or
// when the queue has no free concurrency slot (run.slots.busy).
func (q *Queue) tryClaim(ctx context.Context, m marker, run *claimRun, now time.Time) (*Claimed, error) {
	filter := run.filter
	// A record this Queue wrote or read last (its own submit's, say) is
	// claimed without a GET when it is pending and names the marker; the
	// claim's write is conditional on that version, and a failed guess
	// reads the record and tries again (recs.go).
	if cur, etag, ok := q.cached(m.queue, m.id); ok && cur.Status == StatusPending && cur.IndexKey == m.key &&
		!cur.AvailableAt.After(now) && !cur.deadlinePassed(now) && filter.accepts(cur.TaskType) {
		c, err := q.startLoaded(ctx, m, run, cur, etag, now)
		if !errors.Is(err, errLostClaim) {
			return c, err
		}
		q.forget(m.queue, m.id) // not that version any more: read it
	}
	cur, etag, err := q.load(ctx, m.queue, m.id)
	if errors.Is(err, ErrNotFound) {
		// A marker without a record: a submit crashed between its writes,
		// or is between them now.
		q.dropStale(ctx, m, now)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	q.rememberType(cur.ID, cur.TaskType)
	if cur.IndexKey != m.key {
		q.dropStale(ctx, m, now)
		// The record's own marker, if due, will be met in its turn.
		return nil, nil
	}
	if !filter.accepts(cur.TaskType) {
		q.unpop(m)
		return nil, nil
	}
	switch cur.Status {
	case StatusPending:
		if cur.deadlinePassed(now) {
			_, err := q.expireLoaded(ctx, cur, etag, ReasonTTL, now)
			return nil, ignoreLost(err)
		}
		if cur.AvailableAt.After(now) {
			return nil, nil // the marker is older than the record; not due yet
		}
	case StatusRunning:
		if cur.leaseValid(now) {
			q.skipUntil(m.key, *cur.LeaseExpiresAt)
			return nil, nil
		}
		// The lease has expired: reclaim.
		if next := cur.clone(); settleLapsed(&next, now) {
			_, err := q.commit(ctx, &cur, etag, &next, cleanInline)
			return nil, ignoreLost(err)
		}
	default:
		// Terminal, with a marker it still names: a crash after the write.
		next := cur.clone()
		next.IndexKey = ""
		_, err := q.commit(ctx, &cur, etag, &next, cleanInline)
		return nil, ignoreLost(err)
	}

	c, err := q.startLoaded(ctx, m, run, cur, etag, now)
	if errors.Is(err, errLostClaim) {
		return nil, nil // another claimer won
	}
	return c, err
}

// errLostClaim is startLoaded's answer when another writer changed the
// record first.
var errLostClaim = errors.New("queue: another claimer won")

// startLoaded starts cur, read with etag for marker m, under a new lease
// in one conditional write (with a concurrency slot first when the queue
// has max_concurrency). It returns nil, nil when the queue has no free
// slot, and errLostClaim when the record changed first.
func (q *Queue) startLoaded(ctx context.Context, m marker, run *claimRun, cur Task, etag string, now time.Time) (*Claimed, error) {
	next := cur.clone()
	start(&next, run.req, now, run.decl.Shards)
	if run.decl.MaxConcurrency > 0 {
		key, slotETag, err := q.sides.slot.take(ctx, run.decl, &next, &run.slots, now)
		if err != nil {
			return nil, err
		}
		if key == "" {
			q.unpop(m) // the queue is at max_concurrency
			return nil, nil
		}
		next.SlotKey, next.SlotETag = key, slotETag
	}
	_, err := q.commit(ctx, &cur, etag, &next, cleanInline)
	if errors.Is(err, store.ErrPrecondition) {
		// The record is not ours, so neither is the slot. (After any other
		// error the write may have landed: the slot stays, for takeover.)
		_ = q.sides.slot.free(ctx, &next)
		q.lostRace(now)
		return nil, errLostClaim
	}
	if err != nil {
		return nil, err
	}
	q.skipUntil(m.key, *next.LeaseExpiresAt)
	return &Claimed{Task: next, Lease: Lease{TaskID: next.ID, Token: next.LeaseToken, ExpiresAt: *next.LeaseExpiresAt}}, nil
}

// start turns a pending (or lease-expired running) task into a running one
// under a new lease.
func start(t *Task, req ClaimRequest, now time.Time, shards int) {
	leaseFor := t.leaseLength(req.LeaseFor)
	t.Status = StatusRunning
	t.Attempt++
	t.LeaseToken = newToken()
	// The ended lease's token now names nothing: retried with it, a
	// lease operation is lease_mismatch, not a replay of the old answer.
	t.EndedLeaseToken, t.EndedBy, t.EndedRequest = "", "", ""
	t.Heartbeats = 0
	t.LeaseExpiresAt = ptr(norm(now.Add(leaseFor)))
	t.WorkerID = req.WorkerID
	t.UpdatedAt = now
	t.CancelRequested = false
	if t.StartedAt == nil {
		t.StartedAt = ptr(now)
	}
	if t.TTLFrom == TTLFromFirstAttempt && t.ExpiresAt == nil && t.TTL != nil {
		t.ExpiresAt = ptr(norm(now.Add(t.TTL.Std())))
		// Now it has a deadline: its marker moves to deadline/, where the
		// sweep finds it if its worker dies (two requests, first claim only).
		if m, ok := parseMarker(t.IndexKey); ok && m.lease.IsZero() {
			t.IndexKey = indexKeyFor(t, shards)
		}
	}
}

// settleLapsed decides the end of a running task whose lease has lapsed
// and that may not run again: expired when its deadline has passed,
// cancelled when a cancel was requested, failed when its attempts are
// spent. It changes t and returns true, or returns false (t unchanged)
// when the task may run again.
func settleLapsed(t *Task, now time.Time) bool {
	switch {
	case t.deadlinePassed(now):
		expire(t, ReasonTTL, now)
	case t.CancelRequested:
		cancel(t, now)
	case t.Attempt >= t.MaxAttempts:
		deadLetter(t, fmt.Sprintf("lease expired after attempt %d of %d", t.Attempt, t.MaxAttempts), now)
	default:
		return false
	}
	return true
}

// deadLetter moves a task to failed, the dead-letter state.
func deadLetter(t *Task, reason string, now time.Time) {
	t.Status = StatusFailed
	t.LastError = reason
	t.FailedAt = ptr(now)
	t.DeadLetterEventSentAt = nil // owed: the sweep publishes it (outbox)
	t.UpdatedAt = now
	clearLease(t)
	t.IndexKey = ""
}

func clearLease(t *Task) {
	t.LeaseToken = ""
	t.LeaseExpiresAt = nil
	t.SlotKey, t.SlotETag = "", ""
}

// ignoreLost treats a lost race as nothing to report: someone else acted.
func ignoreLost(err error) error {
	if errors.Is(err, store.ErrPrecondition) || errors.Is(err, ErrConflict) {
		return nil
	}
	return err
}

func newToken() string {
	var b [16]byte
	_, _ = crand.Read(b[:])
	return hex.EncodeToString(b[:])
}
