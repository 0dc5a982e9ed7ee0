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
//     every dispatcher: a declared queue's claims take the core's slots
//     (Declared); a queue of Static takes the dispatcher's own
//     (push/{queue}/slots/{n}.json, compare-and-swap), held until the
//     delivered task's lease ends.
//
// Push queues come from Targets: Declared reads the queues' declarations
// (a target set by PUT /queues/{queue}), Static is a fixed set
// (S3Q_PUSH_QUEUES, s3q dev --push). Waking: OnSubmit (submit's hook)
// wakes a Waker for tasks due soon, LambdaWaker invokes the dispatch
// function asynchronously, Limited bounds that to one wake per queue and
// second, Local runs the dispatcher in this process (s3q dev).
//
// The package holds no Lambda or HTTP-server types in its decisions;
// time comes from the caller (Options.Now, the now of Run).
package dispatch

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/s3q/s3q/shared/queue"
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

// Target is where a push queue's tasks go: exactly one of Lambda (a
// function name or ARN) and URL (https://, or http:// in s3q dev). Secret
// names the SSM parameter that holds the HMAC key of a URL target.
type Target struct {
	Lambda string `json:"lambda,omitempty"`
	URL    string `json:"url,omitempty"`
	Secret string `json:"secret,omitempty"`
}

// PushQueue is a queue whose tasks are pushed.
type PushQueue struct {
	// Name is the queue's name.
	Name string `json:"name"`
	// Target is where its tasks are delivered.
	Target Target `json:"target"`
	// MaxConcurrency is the most deliveries at once across all
	// dispatchers; 0 means no limit (each dispatcher still delivers at
	// most DefaultMaxInFlight at once).
	MaxConcurrency int `json:"max_concurrency,omitempty"`
	// Timeout is the delivery lease: how long the target has to answer.
	// Defaults to DefaultLease; at most MaxLease.
	Timeout queue.Duration `json:"timeout,omitempty"`
	// MaxInFlight, when positive, is the most deliveries one dispatcher
	// runs at once, for a queue whose claims keep its max_concurrency
	// themselves (a declared queue): the dispatcher takes no slots of its
	// own and, while its deliveries run, claims again as each ends.
	MaxInFlight int `json:"-"`
}

// Lease returns the delivery lease of the queue.
func (p PushQueue) Lease() time.Duration {
	d := p.Timeout.Std()
	if d <= 0 {
		d = DefaultLease
	}
	return min(d, MaxLease)
}

// Validate checks a push queue's name and target, naming the bad field.
func (p PushQueue) Validate(allowHTTP bool) error {
	if err := queue.ValidateQueueName(p.Name); err != nil {
		return err
	}
	if err := p.Target.Validate(allowHTTP); err != nil {
		return err
	}
	if p.MaxConcurrency < 0 {
		return fmt.Errorf("dispatch: queue %s: max_concurrency must not be negative", p.Name)
	}
	if p.Timeout < 0 || p.Timeout.Std() > MaxLease {
		return fmt.Errorf("dispatch: queue %s: timeout must be between 0 and %s", p.Name, queue.FormatDuration(MaxLease))
	}
	return nil
}

// Targets lists the push queues. The dispatcher asks it on every run, so
// an implementation should cache what it reads.
type Targets interface {
	// PushQueues returns every queue with a target.
	PushQueues(ctx context.Context, now time.Time) ([]PushQueue, error)
	// PushQueue returns one queue's, and false when it has no target.
	PushQueue(ctx context.Context, name string, now time.Time) (PushQueue, bool, error)
}

// Static is a fixed set of push queues (S3Q_PUSH_QUEUES, tests).
type Static map[string]PushQueue

var _ Targets = Static(nil)

// ParseStatic reads push queues from JSON: {"queue": {"target":
// {"url": "...", "secret": "..."}, "max_concurrency": 4, "timeout": "30s"}}.
// Every queue is validated; allowHTTP admits http:// URLs (s3q dev).
func ParseStatic(b []byte, allowHTTP bool) (Static, error) {
	var m map[string]PushQueue
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("dispatch: push queues: %w", err)
	}
	out := Static{}
	for name, p := range m {
		p.Name = name
		if err := p.Validate(allowHTTP); err != nil {
			return nil, err
		}
		out[name] = p
	}
	return out, nil
}

// PushQueues returns the queues sorted by name.
func (s Static) PushQueues(context.Context, time.Time) ([]PushQueue, error) {
	out := make([]PushQueue, 0, len(s))
	for _, p := range s {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// PushQueue returns the named queue.
func (s Static) PushQueue(_ context.Context, name string, _ time.Time) (PushQueue, bool, error) {
	p, ok := s[name]
	return p, ok, nil
}

// Options tune a Dispatcher.
type Options struct {
	// Now is the clock. Defaults to time.Now.
	Now func() time.Time
	// Logger receives one line per delivery. Defaults to slog.Default().
	Logger *slog.Logger
	// Lambda delivers to Lambda targets. Defaults to none: such a
	// delivery fails (retryably) with "no Lambda client".
	Lambda Deliverer
	// HTTP delivers to URL targets. Defaults to none, like Lambda.
	HTTP Deliverer
	// MaxInFlight bounds one dispatcher's deliveries of a queue without a
	// max_concurrency. Defaults to DefaultMaxInFlight.
	MaxInFlight int
	// Margin is kept between the end of a delivery's lease and the end of
	// the run, and cut from the lease for the delivery's own time-out, so
	// that its outcome is written while the lease is valid. Defaults to
	// a tenth of the lease, at most 2s.
	Margin time.Duration
	// WorkerID is recorded on claimed tasks. Defaults to "dispatch".
	WorkerID string
	// Waker, when set, is woken for a task this dispatcher put back to
	// pending (a retry) or left to lapse, at the time it is due again when
	// that is within WakeAhead, so retries need not wait for the minute
	// rule. Defaults to none.
	Waker Waker
	// RecheckAfter, when positive, makes a run of one queue (a wake) that
	// finds nothing at first claim again once after this long (a run of
	// every queue, the minute rule's, does not): a
	// dispatcher in another process than the submit may hold a listing
	// from just before the task was written (queue.Options.ListCacheFor).
	// Defaults to 0: no second look.
	RecheckAfter time.Duration
}

// Dispatcher delivers the tasks of push queues. It is safe for concurrent
// use, and one per process is the intended use (it caches slot states).
type Dispatcher struct {
	q       *queue.Queue
	st      store.Store
	targets Targets
	opts    Options
	log     *slog.Logger
	slots   *slots
}

// New returns a dispatcher over q (whose store holds the slots) for the
// push queues targets lists.
func New(q *queue.Queue, targets Targets, opts Options) *Dispatcher {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = DefaultMaxInFlight
	}
	if opts.WorkerID == "" {
		opts.WorkerID = "dispatch"
	}
	return &Dispatcher{
		q: q, st: q.Store(), targets: targets, opts: opts, log: opts.Logger,
		slots: newSlots(q.Store()),
	}
}

// Targets returns the push queues the dispatcher serves.
func (d *Dispatcher) Targets() Targets { return d.targets }

// Report says what one Run did.
type Report struct {
	Queues    int `json:"queues"`
	Delivered int `json:"delivered"`
	Completed int `json:"completed"`
	Failed    int `json:"failed"`  // failures recorded (retried or dead-lettered)
	Retried   int `json:"retried"` // of Failed, the ones put back to pending
	Lapsed    int `json:"lapsed"`  // time-outs: the lease was left to lapse
	Skipped   int `json:"skipped"` // claimed past the deadline and handed back undelivered
	Errors    int `json:"errors"`  // outcomes that could not be written, and queues whose lease does not fit in a run
}

// Run delivers due tasks of the named queue (every push queue when queue
// is "") until nothing is due or the run's time ends: a task is claimed
// only when its delivery lease ends before until (zero: no limit) minus
// the margin. It returns when its deliveries have ended.
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
	r.Lapsed += o.Lapsed
	r.Skipped += o.Skipped
	r.Errors += o.Errors
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
