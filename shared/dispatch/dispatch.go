// Package dispatch delivers the tasks of push queues: it
// claims due tasks with the queue's own claim (earliest deadline first,
// then oldest), under a lease that is the delivery's deadline, and hands
// each to the queue's target, a Lambda function (Invoke) or an HTTPS URL
// (a signed POST), within the queue's max_concurrency. The target's answer
// completes the task, fails it (retried with backoff into the dead-letter
// state, as a pull worker's failure is) or lets its lease lapse.
//
// The rules a delivery keeps:
//
//   - A task is never delivered once its expires_at has passed: the claim
//     never starts it, and a delivery that finds the deadline passed just
//     before sending hands the task back (Reschedule), so the next claim
//     expires it.
//   - A cancelled pending task is never claimed; a cancel requested during
//     a delivery turns a failure into cancelled.
//   - Each attempt is delivered at most once: an attempt is one claim (one
//     conditional write with a fresh lease token), and a dispatcher that
//     dies after delivering lets the lease lapse, so the next delivery is
//     the next attempt.
//   - At most max_concurrency deliveries of a queue run at once across
//     every dispatcher and pull worker: every claim of a queue with
//     max_concurrency takes one of the core's slots (queue/side_slot.go).
//
// Push queues are the declared queues with a target (Declared; PUT
// /queues/{queue}), and a queue may name only the targets the
// deployment's push bindings give it (Policy; checked at declaration and
// again before delivery). A dispatcher keeps several claims of a queue in
// flight ahead of its deliveries (Options.Claimers) and delivers up to
// the queue's bound at once.
//
// Waking: OnSubmit (submit's hook) wakes a Waker once per push queue for
// tasks due within a minute; Limited bounds that to one wake per queue and
// second, whatever the due times; LambdaWaker invokes the dispatch
// function asynchronously; Local runs the dispatcher in this process (s3q
// dev). A woken run delivers what is due, and stays with the queue while
// its next task is due soon only if it holds the queue's runner lease
// (runner.go): one waiting run per queue, however many wakes.
//
// The package holds no Lambda or HTTP-server types in its decisions;
// time comes from the caller (Options.Now, the now of Run).
package dispatch

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/store"
)

// Defaults.
const (
	// DefaultLease is the delivery lease of a push queue that names no
	// timeout: a target has this long to answer.
	DefaultLease = time.Minute
	// MaxLease is the longest delivery lease: a delivery must end inside
	// one dispatch invocation (Lambda's limit is 15 minutes).
	MaxLease = 14 * time.Minute
	// DefaultMaxInFlight bounds one dispatcher's deliveries of a queue
	// without a max_concurrency.
	DefaultMaxInFlight = 64
)

// PushQueue is a queue whose tasks are pushed: a declared queue with a
// target (fromDeclaration).
type PushQueue struct {
	// Name is the queue's name.
	Name string `json:"name"`
	// Target is where its tasks are delivered.
	Target queues.Target `json:"target"`
	// MaxConcurrency is the queue's max_concurrency: the most of its tasks
	// running at once, pull or push, kept by the claim itself (each
	// running task holds one of the queue's slots). A dispatcher runs at
	// most this many deliveries of the queue at once; 0 means no limit of
	// the queue's own (Options.MaxInFlight bounds each dispatcher).
	MaxConcurrency int `json:"max_concurrency,omitempty"`
	// Timeout is the delivery lease: how long the target has to answer.
	// Defaults to DefaultLease; at most MaxLease.
	Timeout queue.Duration `json:"timeout,omitempty"`
	// Paused is true while the queue is paused: its claims start nothing,
	// so no run stays with it (a run after the resume delivers).
	Paused bool `json:"paused,omitempty"`
}

// Lease returns the delivery lease of the queue.
func (p PushQueue) Lease() time.Duration {
	d := p.Timeout.Std()
	if d <= 0 {
		d = DefaultLease
	}
	return min(d, MaxLease)
}

// Targets lists the push queues. The dispatcher asks it on every run, so
// an implementation should cache what it reads.
type Targets interface {
	// PushQueues returns every queue with a target.
	PushQueues(ctx context.Context, now time.Time) ([]PushQueue, error)
	// PushQueue returns one queue's, and false when it has no target.
	PushQueue(ctx context.Context, name string, now time.Time) (PushQueue, bool, error)
}

// Options tune a Dispatcher.
type Options struct {
	// Now is the clock. Defaults to time.Now.
	Now func() time.Time
	// After waits: it returns a channel that receives after d, as
	// time.After does (the default). Tests that run the clock fast give
	// their own.
	After func(d time.Duration) <-chan time.Time
	// Logger receives one line per delivery. Defaults to slog.Default().
	Logger *slog.Logger
	// Lambda delivers to Lambda targets. Defaults to none: such a
	// delivery fails (retryably) with "no Lambda client".
	Lambda Deliverer
	// HTTP delivers to URL targets. Defaults to none, like Lambda.
	HTTP Deliverer
	// Policy, when set, says which targets each queue may use (the
	// deployment's push bindings): a queue whose declared target it
	// refuses (declared before the bindings changed) is not delivered, and
	// the run reports an error for it. Defaults to none: every target.
	Policy *Policy
	// MaxInFlight bounds one dispatcher's deliveries of a queue without a
	// max_concurrency (a queue with one runs up to that many). Defaults
	// to DefaultMaxInFlight.
	MaxInFlight int
	// Claimers is how many claims of one queue a dispatcher keeps in
	// flight at once, ahead of the deliveries (they share the queue's
	// listing, so they never race each other for a task). Defaults to
	// DefaultClaimers, at most half the queue's in-flight bound.
	Claimers int
	// Margin is kept between the end of a delivery's lease and the end of
	// the run, and cut from the lease for the delivery's own time-out, so
	// that its outcome is written while the lease is valid. Defaults to
	// a tenth of the lease, at most 2s.
	Margin time.Duration
	// WorkerID is recorded on claimed tasks. Defaults to "dispatch".
	WorkerID string
	// Waker, when set, is woken for a task this dispatcher put back to
	// pending (a retry) or left to lapse when it is due again within
	// WakeAhead, and for a queue this run leaves (its time ended) with
	// work due soon: the hand-off. Defaults to none.
	Waker Waker
	// RecheckAfter, when positive, makes a run of one queue (a wake) that
	// finds nothing at first claim again once after this long (a run of
	// every queue, the minute rule's, does not): a
	// dispatcher in another process than the submit may hold a listing
	// from just before the task was written (queue.Options.ListCacheFor).
	// Defaults to 0: no second look.
	RecheckAfter time.Duration
	// Soon is how far ahead a queue's next task may be due for a run to
	// stay with the queue, holding its runner lease (runner.go), rather
	// than leave it to a later wake or the minute rule. Defaults to
	// WakeAhead (a minute: the minute rule's period); negative: never
	// stay.
	Soon time.Duration
	// MaxNap is the longest a run staying with a queue waits before it
	// looks again (it looks at the next due time when that is sooner).
	// Defaults to DefaultMaxNap.
	MaxNap time.Duration
	// RunnerLease is the length of a queue's runner lease, renewed while
	// the run stays. Defaults to DefaultRunnerLease.
	RunnerLease time.Duration // CancelPoll is how often a task is read for a cancel request while
	// its delivery is in flight (cancelwatch.go): a cancel ends the
	// delivery within about this long and the task ends cancelled.
	// Defaults to DefaultCancelPoll (2s); negative: no reads (a cancel
	// then waits for the delivery's answer, and the task is completed or
	// failed as it answers).
	CancelPoll time.Duration
	// TracerProvider records an OpenTelemetry span per delivery (otel.go):
	// a client span "s3q.deliver <task type>", child of the task's trace
	// context, whose context the delivery carries. Defaults to the global
	// provider (otel.GetTracerProvider), a no-op until the program sets
	// one: a delivery then carries the task's trace context as submitted.
	TracerProvider trace.TracerProvider
}

// More defaults.
const (
	// DefaultClaimers is how many claims of a queue are in flight at once.
	DefaultClaimers = 32
	// DefaultMaxNap bounds the wait of a run that stays with a queue.
	DefaultMaxNap = time.Second
	// DefaultRunnerLease is the runner lease's length.
	DefaultRunnerLease = 15 * time.Second
)

// Dispatcher delivers the tasks of push queues. It is safe for concurrent
// use, and one per process is the intended use.
type Dispatcher struct {
	q       *queue.Queue
	st      store.Store
	targets Targets
	opts    Options
	log     *slog.Logger
	tracer  trace.Tracer

	mu    sync.Mutex
	pokes map[string]chan struct{}
}

// New returns a dispatcher over q (whose store holds the runner leases)
// for the push queues targets lists.
func New(q *queue.Queue, targets Targets, opts Options) *Dispatcher {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.After == nil {
		opts.After = time.After
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = DefaultMaxInFlight
	}
	if opts.Claimers <= 0 {
		opts.Claimers = DefaultClaimers
	}
	if opts.WorkerID == "" {
		opts.WorkerID = "dispatch"
	}
	if opts.Soon == 0 {
		opts.Soon = WakeAhead
	}
	if opts.MaxNap <= 0 {
		opts.MaxNap = DefaultMaxNap
	}
	if opts.RunnerLease <= 0 {
		opts.RunnerLease = DefaultRunnerLease
	}
	if opts.CancelPoll == 0 {
		opts.CancelPoll = DefaultCancelPoll
	}
	return &Dispatcher{
		q: q, st: q.Store(), targets: targets, opts: opts, log: opts.Logger, tracer: tracerOf(opts.TracerProvider),
		pokes: map[string]chan struct{}{},
	}
}

// Targets returns the push queues the dispatcher serves.
func (d *Dispatcher) Targets() Targets { return d.targets }

// After waits d on the dispatcher's clock (Options.After).
func (d *Dispatcher) After(dur time.Duration) <-chan time.Time { return d.opts.After(dur) }

// poke makes a run of this dispatcher that stays with the queue look
// again now, as a wake in the same process (Local) does.
func (d *Dispatcher) poke(name string) {
	select {
	case d.pokeChan(name) <- struct{}{}:
	default:
	}
}

// pokeChan is the channel by which a run staying with queue name is poked.
func (d *Dispatcher) pokeChan(name string) chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := d.pokes[name]
	if c == nil {
		c = make(chan struct{}, 1)
		d.pokes[name] = c
	}
	return c
}

// Report says what one Run did.
type Report struct {
	Queues    int `json:"queues"`
	Delivered int `json:"delivered"`
	Completed int `json:"completed"`
	Failed    int `json:"failed"`    // failures recorded (retried or dead-lettered)
	Retried   int `json:"retried"`   // of Failed, the ones put back to pending
	Cancelled int `json:"cancelled"` // of Failed, deliveries ended for a cancel request (the task ends cancelled)
	Lapsed    int `json:"lapsed"`    // time-outs: the lease was left to lapse
	Skipped   int `json:"skipped"`   // claimed past the deadline and handed back undelivered
	Errors    int `json:"errors"`    // outcomes that could not be written, queues whose lease does not fit in a run or whose target is not bound
	Stayed    int `json:"stayed"`    // queues this run stayed with, holding their runner lease
	HandedOn  int `json:"handed_on"` // of Stayed, queues handed to a new run (a wake) when this one's time ended
}

// Run delivers due tasks of the named queue (every push queue when queue
// is "") until nothing is due soon or the run's time ends: a task is
// claimed only when its delivery lease ends before until (zero: no limit)
// minus the margin. It returns when its deliveries have ended.
func (d *Dispatcher) Run(ctx context.Context, queueName string, until time.Time) (Report, error) {
	now := d.opts.Now()
	var pqs []PushQueue
	if queueName != "" {
		p, ok, err := d.targets.PushQueue(ctx, queueName, now)
		if err != nil {
			return Report{}, err
		}
		if ok {
			pqs = append(pqs, p)
		}
	} else {
		var err error
		if pqs, err = d.targets.PushQueues(ctx, now); err != nil {
			return Report{}, err
		}
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		rep   = Report{Queues: len(pqs)}
		first error
	)
	for _, p := range pqs {
		if err := d.opts.Policy.allows(p.Name, p.Target); err != nil {
			d.log.Error("not delivering a queue whose target the push bindings do not allow", "queue", p.Name, "error", err)
			rep.Errors++
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := d.drain(ctx, p, until, queueName != "")
			mu.Lock()
			defer mu.Unlock()
			rep.add(r)
			if err != nil && first == nil {
				first = fmt.Errorf("dispatch queue %s: %w", p.Name, err)
			}
		}()
	}
	wg.Wait()
	return rep, first
}

func (r *Report) add(o Report) {
	r.Delivered += o.Delivered
	r.Completed += o.Completed
	r.Failed += o.Failed
	r.Retried += o.Retried
	r.Cancelled += o.Cancelled
	r.Lapsed += o.Lapsed
	r.Skipped += o.Skipped
	r.Errors += o.Errors
	r.Stayed += o.Stayed
	r.HandedOn += o.HandedOn
}

func (d *Dispatcher) margin(lease time.Duration) time.Duration {
	if d.opts.Margin > 0 {
		return d.opts.Margin
	}
	return min(lease/10, 2*time.Second)
}

// SetWaker sets Options.Waker after construction, for a waker that needs
// the dispatcher itself (Local). Call it before the first Run.
func (d *Dispatcher) SetWaker(w Waker) { d.opts.Waker = w }
