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
	"github.com/s3q/s3q/shared/store"
)

// Payload is what a target receives: the task (as the API shows it:
// without its lease tokens, request hash, index marker or slot),
// the lease (task_id, token, expires_at) and the deadline by which the
// target must answer, a little before the lease ends.
type Payload struct {
	Task     queue.Task  `json:"task"`
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
	Deliver(ctx context.Context, target Target, d Delivery) Result
}

// drain delivers due tasks of one queue until none is due, the run's time
// ends, or every slot is held by other dispatchers. wake says the run is
// for one queue (a wake), whose first empty claim looks once more after
// RecheckAfter; the minute rule's run of every queue does not.
func (d *Dispatcher) drain(ctx context.Context, p PushQueue, until time.Time, wake bool) (rep Report, err error) {
	lease := p.Lease()
	margin := d.margin(lease)
	limit := d.opts.MaxInFlight
	if p.MaxConcurrency > 0 {
		limit = min(limit, p.MaxConcurrency)
	}
	if p.MaxInFlight > 0 {
		limit = min(limit, p.MaxInFlight)
	}
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		inFlight int
		finished = make(chan struct{}, limit)
		sem      = make(chan struct{}, limit)
		rechecks = 0
	)
	if d.opts.RecheckAfter > 0 && wake {
		rechecks = 1
	}
	running := func() int {
		mu.Lock()
		defer mu.Unlock()
		return inFlight
	}
	// waitFinished waits for a delivery of ours to end; false when the
	// run ends first.
	waitFinished := func() bool {
		select {
		case <-finished:
			return true
		case <-ctx.Done():
			return false
		}
	}
	defer wg.Wait() // the deliveries add to rep
	if now := d.opts.Now(); !wake && !until.IsZero() && now.Add(lease+margin).After(until) {
		// The minute rule's run has its whole time ahead: a lease that
		// does not fit now never will, and the queue is never delivered.
		d.log.Error("the delivery lease does not fit in a dispatch run; raise the dispatch function's timeout (dispatchTimeoutSeconds) or lower the queue's timeout",
			"queue", p.Name, "lease", lease, "margin", margin, "run_left", until.Sub(now))
		rep.Errors++
		return rep, nil
	}
	for ctx.Err() == nil {
		if now := d.opts.Now(); !until.IsZero() && now.Add(lease+margin).After(until) {
			break
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return rep, nil
		}
		now := d.opts.Now()
		var hold *slotHold
		if p.MaxConcurrency > 0 {
			hold, err = d.slots.take(ctx, p.Name, p.MaxConcurrency, now, now.Add(lease))
			if err != nil {
				<-sem
				return rep, fmt.Errorf("take a slot: %w", err)
			}
			if hold == nil {
				<-sem
				if running() == 0 {
					break // every slot is held elsewhere; those dispatchers go on
				}
				if !waitFinished() {
					return rep, nil
				}
				continue
			}
		}
		claimed, err := d.q.Claim(ctx, queue.ClaimRequest{
			Queue: p.Name, LeaseFor: lease, WorkerID: d.opts.WorkerID, MaxTasks: 1,
		}, now)
		if err != nil || len(claimed) == 0 {
			d.slots.release(ctx, hold)
			<-sem
			if err != nil {
				return rep, fmt.Errorf("claim: %w", err)
			}
			if running() > 0 && p.MaxInFlight > 0 {
				// The claim's own slots may all be ours: claim again as
				// each of our deliveries ends.
				if !waitFinished() {
					return rep, nil
				}
				continue
			}
			if rechecks > 0 {
				rechecks--
				if running() == 0 {
					select {
					case <-time.After(d.opts.RecheckAfter):
					case <-ctx.Done():
						return rep, nil
					}
				}
				continue
			}
			break
		}
		rechecks = 0
		mu.Lock()
		inFlight++
		mu.Unlock()
		wg.Add(1)
		go func(c queue.Claimed) {
			defer wg.Done()
			r := d.deliver(context.WithoutCancel(ctx), p, c, margin)
			if r.Lapsed == 0 {
				// A lapsed delivery keeps its slot until its lease ends:
				// the target may still be working on it.
				d.slots.release(context.WithoutCancel(ctx), hold)
			}
			mu.Lock()
			rep.add(r)
			inFlight--
			mu.Unlock()
			<-sem
			select {
			case finished <- struct{}{}:
			default:
			}
		}(claimed[0])
	}
	return rep, nil
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
	shown := t // as the API shows it: the lease's token only, no internals
	shown.LeaseToken, shown.EndedLeaseToken, shown.RequestHash = "", "", ""
	shown.IndexKey, shown.SlotKey, shown.SlotETag = "", "", ""
	body, err := json.Marshal(Payload{Task: shown, Lease: l, Deadline: deadline})
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
		res = dl.Deliver(dctx, p.Target, Delivery{Task: t, Lease: l, Deadline: deadline, Body: body, Now: now})
		cancel()
	}
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
	if _, err := d.q.Reschedule(ctx, t.Ref(), l.Token, queue.RescheduleRequest{}, now); err != nil {
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
		out := Output(res.Output)
		err := d.retryWrite(ctx, l, func(now time.Time) (err error) {
			_, err = d.q.Complete(ctx, t.Ref(), l.Token, out, now)
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
		next, err = d.q.Fail(ctx, t.Ref(), l.Token, queue.FailRequest{
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

// Output turns a target's answer into a task output: nothing for an empty
// answer or JSON null, the answer itself when it is JSON, else the answer
// as a JSON string.
func Output(b []byte) json.RawMessage {
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
