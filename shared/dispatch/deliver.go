package dispatch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/s3q/s3q/shared/internal/clip"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/store"
	"github.com/s3q/s3q/shared/wire"
)

// Payload is what a target receives: the task as the API shows it
// (wire.Task: without its lease tokens, request hashes, index marker or
// slot),
// the lease (task_id, token, expires_at) and the deadline by which the
// target must answer, a little before the lease ends.
type Payload struct {
	Task     wire.Task   `json:"task"`
	Lease    queue.Lease `json:"lease"`
	Deadline time.Time   `json:"deadline"`
}

// Delivery is one delivery handed to a Deliverer.
type Delivery struct {
	Task     queue.Task
	Lease    queue.Lease
	Deadline time.Time
	// Body is the JSON of the Payload.
	Body []byte
	// Now is when the delivery starts (the signature's timestamp).
	Now time.Time
}

// Outcome is what a delivery's answer does to its task.
type Outcome int

// The outcomes.
const (
	// Complete completes the task with Result.Output.
	Complete Outcome = iota + 1
	// Fail records a failed attempt: retried while attempts remain and
	// Result.Retryable, at now + Result.RetryAfter when that is set.
	Fail
	// Lapse writes nothing: the delivery timed out, the lease lapses and
	// the next claim delivers the next attempt.
	Lapse
	// HandBack says nothing was sent because the task's expires_at passed
	// before it could be: the task is handed back undelivered (the
	// attempt given back) and the next claim expires it.
	HandBack
)

func (o Outcome) String() string {
	switch o {
	case Complete:
		return "complete"
	case Fail:
		return "fail"
	case Lapse:
		return "lapse"
	case HandBack:
		return "hand back"
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// Result is a target's answer, as a Deliverer reads it.
type Result struct {
	Outcome    Outcome
	Output     []byte // Complete: the target's answer (JSON; other bytes are kept as a JSON string)
	Error      string // Fail: the reason, kept as last_error
	Retryable  bool
	RetryAfter time.Duration
	// Status is the HTTP status or the Lambda status code, for the log.
	Status int
}

// Deliverer hands one delivery to a target and reads its answer. It must
// return by ctx's deadline (the delivery's deadline): a delivery cut by
// it is a Lapse.
type Deliverer interface {
	Deliver(ctx context.Context, target queues.Target, d Delivery) Result
}

// inflight are the deliveries of one queue a drain has started.
type inflight struct {
	sem      chan struct{} // one per delivery or claim in flight: the queue's bound
	finished chan struct{} // a delivery ended (capacity 1: a hint)
	wg       sync.WaitGroup

	mu      sync.Mutex
	running int
	rep     Report
}

func (f *inflight) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.running
}

// drain delivers the due tasks of one queue, claims pipelined ahead of
// deliveries: up to Options.Claimers claims in flight at once, each task
// handed to its delivery as soon as its claim returns, and at most the
// queue's bound (max_concurrency, else MaxInFlight) of claims and
// deliveries at once. When nothing is due it stays with the queue while
// the next task is due within Options.Soon, if it takes the queue's
// runner lease (runner.go), looking again at the next due time or after
// MaxNap, whichever is first; else it returns. wake says the run is for
// one queue (a wake), whose first empty look is repeated once after
// RecheckAfter. It returns when its deliveries have ended.
func (d *Dispatcher) drain(ctx context.Context, p PushQueue, until time.Time, wake bool) (Report, error) {
	lease := p.Lease()
	margin := d.margin(lease)
	limit := d.opts.MaxInFlight
	if p.MaxConcurrency > 0 {
		limit = p.MaxConcurrency
	}
	f := &inflight{sem: make(chan struct{}, limit), finished: make(chan struct{}, 1)}
	result := func(r Report) Report {
		f.wg.Wait() // the deliveries add to f.rep
		f.mu.Lock()
		defer f.mu.Unlock()
		return r.plus(f.rep)
	}
	var rep Report
	if now := d.opts.Now(); !wake && !until.IsZero() && now.Add(lease+margin).After(until) {
		// The minute rule's run has its whole time ahead: a lease that
		// does not fit now never will, and the queue is never delivered.
		d.log.Error("the delivery lease does not fit in a dispatch run; raise the dispatch function's timeout (dispatchTimeoutSeconds) or lower the queue's timeout",
			"queue", p.Name, "lease", lease, "margin", margin, "run_left", until.Sub(now))
		rep.Errors++
		return rep, nil
	}
	timeUp := func(now time.Time) bool { return !until.IsZero() && now.Add(lease+margin).After(until) }
	rechecks := 0
	if d.opts.RecheckAfter > 0 && wake {
		rechecks = 1
	}
	var runner *runnerHold
	defer func() {
		if runner != nil {
			d.release(context.WithoutCancel(ctx), runner)
		}
	}()
	poke := d.pokeChan(p.Name)
	var (
		lastClaim time.Time
		stuck     uint // looks in a row that found a task due now and claimed nothing
	)
	for ctx.Err() == nil {
		now := d.opts.Now()
		if timeUp(now) {
			if runner != nil && d.opts.Waker != nil {
				// Hand the queue on: free the lease first, so that the
				// woken run can take it.
				d.release(context.WithoutCancel(ctx), runner)
				runner = nil
				d.opts.Waker.Wake(context.WithoutCancel(ctx), Wake{Queue: p.Name})
				rep.HandedOn++
			}
			break
		}
		n, err := d.claimRound(ctx, p, lease, margin, timeUp, f)
		if err != nil {
			return result(rep), err
		}
		if n > 0 {
			rechecks, stuck = 0, 0
			lastClaim = d.opts.Now()
			continue // more may be due: look again at once
		}
		now = d.opts.Now()
		next, ok, err := d.q.NextDue(ctx, p.Name, now)
		if err != nil {
			return result(rep), fmt.Errorf("next due: %w", err)
		}
		soon := ok && d.opts.Soon > 0 && next.Before(now.Add(d.opts.Soon)) && !p.Paused
		if !soon && p.MaxConcurrency > 0 && f.count() > 0 {
			// Our deliveries may hold the slots the claims wanted: claim
			// again as each ends.
			soon, next = true, now.Add(d.opts.MaxNap)
		}
		if !soon {
			if rechecks > 0 {
				rechecks--
				select {
				case <-d.opts.After(d.opts.RecheckAfter):
				case <-ctx.Done():
				}
				continue
			}
			break
		}
		if runner == nil {
			h, err := d.takeRunner(ctx, p.Name, now)
			if err != nil {
				d.log.Warn("take the runner lease", "queue", p.Name, "error", err)
				break
			}
			if h == nil {
				break // another run stays with the queue
			}
			runner = h
			rep.Stayed++
		} else if !d.renew(ctx, runner, now) {
			runner = nil // lost: the one that has it goes on
			break
		}
		// Wait for the next due time (or MaxNap; busyNap while tasks keep
		// coming, as other processes' submits do not poke this run), a
		// delivery's end (its slot, or a retry it made), or a poke.
		longest := d.opts.MaxNap
		if now.Sub(lastClaim) < time.Second {
			longest = min(longest, busyNap)
		}
		shortest := minNap
		if !next.After(now) {
			// Due now, yet nothing could be claimed (every slot held by
			// pull workers, a task another claimer holds): back off.
			shortest = min(minNap<<min(stuck, 5), longest)
			stuck++
		} else {
			stuck = 0
		}
		nap := min(max(next.Sub(now), shortest), longest)
		select {
		case <-d.opts.After(nap):
		case <-f.finished:
		case <-poke:
		case <-ctx.Done():
		}
	}
	return result(rep), nil
}

// minNap is the shortest wait of a run staying with a queue whose next
// task is due now but could not be claimed (held by another claimer a
// moment ago, or every slot taken).
const minNap = 50 * time.Millisecond

// busyNap is the longest wait of a run staying with a queue that had a
// task claimed in the last second: tasks submitted by other processes are
// seen within it (and their listing's cache), not only at the next wake.
const busyNap = 200 * time.Millisecond

// claimRound claims the queue's due tasks, each handed to its delivery as
// soon as its claim returns, until every claim in flight has come back
// empty, and returns how many it claimed. It starts with one claim in
// flight and adds one with each task claimed, up to Options.Claimers and
// half the queue's bound, and a claim that comes back empty is not made
// again (so a queue with one task due costs about one claim more than it
// needs, a backlog gets every claimer soon, and tasks arriving while it
// runs keep it going); a claim waits for room under the queue's bound
// first, and holds it for the task's delivery.
func (d *Dispatcher) claimRound(ctx context.Context, p PushQueue, lease, margin time.Duration, timeUp func(time.Time) bool, f *inflight) (int, error) {
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		claimed  int
		claimers int
		first    error
		stop     = make(chan struct{})
		once     sync.Once
	)
	end := func() { once.Do(func() { close(stop) }) }
	// Claims hold room under the bound while they run: at most half of it,
	// so that deliveries keep the other half.
	most := min(d.opts.Claimers, max(1, cap(f.sem)/2))
	var claimer func()
	spawn := func() {
		mu.Lock()
		defer mu.Unlock()
		if claimers < most {
			claimers++
			wg.Add(1)
			go claimer()
		}
	}
	claimer = func() {
		defer wg.Done()
		defer func() {
			mu.Lock()
			claimers--
			mu.Unlock()
		}()
		for {
			select {
			case f.sem <- struct{}{}:
			case <-stop:
				return
			case <-ctx.Done():
				return
			}
			now := d.opts.Now()
			stopped := false
			select {
			case <-stop:
				stopped = true
			default:
			}
			if stopped || timeUp(now) {
				<-f.sem
				end()
				return
			}
			cs, err := d.q.Claim(ctx, queue.ClaimRequest{
				Queue: p.Name, LeaseFor: lease, WorkerID: d.opts.WorkerID, MaxTasks: 1,
			}, now)
			var limited *queue.RateLimitedError
			if errors.As(err, &limited) {
				// The queue's rate limit holds the start back: this
				// claimer waits until it lets one start, then claims
				// again (the Queue remembers the limit's state, so the
				// claimers waiting with it cost no request).
				<-f.sem
				select {
				case <-d.opts.After(limited.RetryAfter):
				case <-stop:
					return
				case <-ctx.Done():
					return
				}
				continue
			}
			if err != nil || len(cs) == 0 {
				<-f.sem
				if err != nil {
					if ctx.Err() == nil {
						mu.Lock()
						if first == nil {
							first = fmt.Errorf("claim: %w", err)
						}
						mu.Unlock()
					}
					end()
				}
				// Nothing due for this claimer: it leaves; the others go
				// on while they find tasks (each success adds one back).
				return
			}
			mu.Lock()
			claimed++
			mu.Unlock()
			f.mu.Lock()
			f.running++
			f.mu.Unlock()
			f.wg.Add(1)
			go func(c queue.Claimed) {
				defer f.wg.Done()
				r := d.deliver(context.WithoutCancel(ctx), p, c, margin)
				f.mu.Lock()
				f.rep.add(r)
				f.running--
				f.mu.Unlock()
				<-f.sem
				select {
				case f.finished <- struct{}{}:
				default:
				}
			}(cs[0])
			spawn() // a task was due: more may be
		}
	}
	spawn()
	wg.Wait()
	return claimed, first
}

// deliver delivers one claimed task and writes its outcome.
func (d *Dispatcher) deliver(ctx context.Context, p PushQueue, c queue.Claimed, margin time.Duration) Report {
	var rep Report
	t, l := c.Task, c.Lease
	log := d.log.With("queue", p.Name, "task_id", t.ID, "attempt", t.Attempt)
	now := d.opts.Now()
	if t.ExpiresAt != nil && !now.Before(*t.ExpiresAt) {
		return d.handBack(ctx, t, l, now, log)
	}
	deadline := l.ExpiresAt.Add(-margin)
	// The span of the delivery (otel.go); sent is t with its trace context.
	ctx, span, sent := d.startDelivery(ctx, p, t)
	defer span.End()
	body, err := json.Marshal(Payload{Task: sent.Wire(), Lease: l, Deadline: deadline})
	if err != nil {
		rep.Errors++
		return rep
	}
	var dl Deliverer
	switch {
	case p.Target.Lambda != "":
		dl = d.opts.Lambda
	case p.Target.URL != "":
		dl = d.opts.HTTP
	}
	var res Result
	if dl == nil {
		res = Result{Outcome: Fail, Error: "dispatch: no deliverer for this target", Retryable: true}
	} else {
		dctx, cancel := context.WithDeadline(ctx, deadline)
		stop := d.watchCancel(dctx, t, l, cancel)
		res = dl.Deliver(dctx, p.Target, Delivery{Task: sent, Lease: l, Deadline: deadline, Body: body, Now: now})
		if stop() && res.Outcome == Lapse {
			// Ended for a cancel request (an answer that came first
			// stands): the failure of a task asked to cancel cancels it.
			res = Result{Outcome: Fail, Error: cancelledError}
			rep.Cancelled++
		}
		cancel()
	}
	endDelivery(span, res)
	if res.Outcome == HandBack {
		return d.handBack(ctx, t, l, d.opts.Now(), log)
	}
	rep.Delivered++
	return rep.plus(d.apply(ctx, t, l, res, log))
}

// handBack hands back a task claimed just before its deadline and not
// sent in time, undelivered (the attempt is given back); the next claim
// or sweep expires it.
func (d *Dispatcher) handBack(ctx context.Context, t queue.Task, l queue.Lease, now time.Time, log *slog.Logger) Report {
	var rep Report
	if _, err := d.q.Reschedule(ctx, queue.RescheduleRequest{ID: t.Ref(), LeaseToken: l.Token}, now); err != nil {
		log.Warn("hand back an expired task", "error", err)
		rep.Errors++
	}
	rep.Skipped++
	return rep
}

func (r Report) plus(o Report) Report { r.add(o); return r }

// outcomeRetries is how many times a delivery's outcome write is sent
// again after a retryable store error, waiting 100ms, 200ms, 400ms.
const outcomeRetries = 3

// retryWrite runs an outcome write (complete, fail) and runs it again
// after a retryable store error while the lease lasts: the core answers a
// retry of a write that did land as it answered the first, and a write
// that did not land would otherwise leave the lease to lapse, so that the
// target's answer is lost and the task delivered again as the next
// attempt.
func (d *Dispatcher) retryWrite(ctx context.Context, l queue.Lease, write func(now time.Time) error) error {
	wait := 100 * time.Millisecond
	for i := 0; ; i++ {
		now := d.opts.Now()
		err := write(now)
		if err == nil || !errors.Is(err, store.ErrRetryable) || i == outcomeRetries || !now.Add(wait).Before(l.ExpiresAt) {
			return err
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return err
		}
		wait *= 2
	}
}

// apply writes the outcome of a delivery.
func (d *Dispatcher) apply(ctx context.Context, t queue.Task, l queue.Lease, res Result, log *slog.Logger) Report {
	var rep Report
	now := d.opts.Now()
	switch res.Outcome {
	case Complete:
		out := asOutput(res.Output)
		err := d.retryWrite(ctx, l, func(now time.Time) (err error) {
			_, err = d.q.Complete(ctx, queue.CompleteRequest{ID: t.Ref(), LeaseToken: l.Token, Output: out}, now)
			return err
		})
		var verr *queue.ValidationError
		if errors.As(err, &verr) {
			// The answer is no acceptable output (too large): a failure
			// that another attempt would repeat.
			res = Result{Outcome: Fail, Error: "target answer: " + err.Error(), Status: res.Status}
			break
		}
		if err != nil {
			log.Warn("complete after delivery", "error", err)
			rep.Errors++
			return rep
		}
		rep.Completed++
		log.Info("delivered", "outcome", "complete", "status", res.Status)
		return rep
	case Lapse:
		rep.Lapsed++
		d.rewake(ctx, t.Queue, l.ExpiresAt, now)
		log.Warn("delivery timed out; the lease lapses", "status", res.Status)
		return rep
	}
	retryable := res.Retryable
	var next queue.Task
	err := d.retryWrite(ctx, l, func(now time.Time) (err error) {
		next, err = d.q.Fail(ctx, queue.FailRequest{
			ID: t.Ref(), LeaseToken: l.Token,
			Error: clip.String(res.Error, maxErrorBytes), Retryable: &retryable, RetryAfter: res.RetryAfter,
		}, now)
		return err
	})
	if err != nil {
		log.Warn("fail after delivery", "error", err)
		rep.Errors++
		return rep
	}
	rep.Failed++
	if next.Status == queue.StatusPending {
		rep.Retried++
		d.rewake(ctx, t.Queue, next.AvailableAt, now)
	}
	log.Info("delivered", "outcome", "fail", "status", res.Status, "error", res.Error,
		"retryable", retryable, "next", next.Status, "available_at", next.AvailableAt)
	return rep
}

// asOutput turns a target's answer into a task output: nothing for an empty
// answer or JSON null, the answer itself when it is JSON, else the answer
// as a JSON string.
func asOutput(b []byte) json.RawMessage {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || bytes.Equal(b, []byte("null")) {
		return nil
	}
	if json.Valid(b) {
		return b
	}
	s, _ := json.Marshal(string(b))
	return s
}

// rewake wakes Options.Waker for a queue at a time within WakeAhead.
func (d *Dispatcher) rewake(ctx context.Context, name string, at, now time.Time) {
	if d.opts.Waker != nil && !at.After(now.Add(WakeAhead)) {
		d.opts.Waker.Wake(ctx, Wake{Queue: name, At: at})
	}
}

// maxErrorBytes keeps a delivery's error message within the core's limit
// (8 KiB).
const maxErrorBytes = 4096
