// Package worker runs task handlers: it claims tasks of the types it has
// handlers for, heartbeats before each lease runs out, gives the handler a
// context that is cancelled when the lease is lost or a cancel is
// requested, completes or fails the task by the handler's result, backs
// off when idle, and on shutdown stops claiming, lets running handlers
// finish, and hands back any task it could not finish so nothing is lost.
//
// It long-polls by default (Options.Wait, 20s): a task submitted while it
// waits starts within about a second, while it has had work within
// Options.IdleAfter (1m); after that it claims every 1s doubling to 30s
// until work comes again, which keeps a long idle worker at one LIST per
// 30s (a claim lists the queue's two claim indexes with one LIST of their
// folder).
package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/s3q/s3q/shared/client"
	"github.com/s3q/s3q/shared/deadline"
	"github.com/s3q/s3q/shared/queue"
)

// API is what a worker needs from the queue: *client.Client implements it.
type API interface {
	Claim(ctx context.Context, req client.ClaimRequest) ([]client.Claimed, error)
	Heartbeat(ctx context.Context, req client.HeartbeatRequest) (client.Claimed, error)
	Complete(ctx context.Context, req client.CompleteRequest) (client.Task, error)
	Fail(ctx context.Context, req client.FailRequest) (client.Task, error)
	Reschedule(ctx context.Context, req client.RescheduleRequest) (client.Task, error)
	AckCancel(ctx context.Context, req client.AckCancelRequest) (client.Task, error)
}

var _ API = (*client.Client)(nil)

// TaskReader is the optional part of an API through which a worker sees
// a cancel request between heartbeats (Options.CancelPoll):
// *client.Client implements it.
type TaskReader interface {
	Get(ctx context.Context, id string) (client.Task, error)
}

var _ TaskReader = (*client.Client)(nil)

// Handler does the work of one task and returns its output (JSON, nil for
// none) or an error: a plain error is retried while attempts remain,
// Permanent(err) is not, and Reschedule(...) puts the task back for later.
// ctx is cancelled when the lease is lost or a cancel is requested
// (context.Cause tells which: ErrLeaseLost, ErrCancelRequested).
type Handler func(ctx context.Context, t *Task) (json.RawMessage, error)

// Causes of a handler context's cancellation.
var (
	ErrLeaseLost       = errors.New("worker: lease lost")
	ErrCancelRequested = errors.New("worker: cancel requested")
	ErrShutdown        = errors.New("worker: shutting down")
)

// Task is the task a handler works on.
type Task struct {
	client.Task
	Lease client.Lease
	now   func() time.Time
}

// Remaining returns the time left until the task's deadline (expires_at),
// and false when it has none (deadline.Remaining at the worker's clock).
// A running task is never stopped by its deadline; a handler may read
// this and give up early.
func (t *Task) Remaining() (time.Duration, bool) {
	return deadline.RemainingUntil(t.ExpiresAt, t.now())
}

// ShouldAbort is the DeadlineGuard's rule (deadline.ShouldAbort) at the
// worker's clock: true when a cancel was requested or at most margin is
// left until the task's deadline. A task without a deadline is aborted
// only on a cancel request.
func (t *Task) ShouldAbort(margin time.Duration) bool {
	return deadline.ShouldAbortUntil(t.ExpiresAt, t.CancelRequested, t.now(), margin)
}

// Options tune a Worker.
type Options struct {
	// Queue to claim from. The lease calls (heartbeat, complete, ...)
	// must address it too: a *client.Client is switched to it (Client.In);
	// another API must address it itself. Defaults to the client's queue.
	Queue string
	// WorkerID is recorded on claimed tasks. Defaults to host-pid.
	WorkerID string
	// Concurrency is how many tasks run at once. Defaults to 1. Each of
	// the Concurrency slots claims for itself, and claims its next task
	// while its last one's complete is still on its way, so a worker of
	// concurrency N picks up as fast as N workers of concurrency 1.
	Concurrency int
	// LeaseFor is the lease asked for at claim and on each heartbeat.
	// Defaults to 0: each task's own timeout.
	LeaseFor time.Duration
	// Wait is how long a claim waits for a task when none is available (a
	// long-poll: the API answers as soon as one is). Defaults to
	// DefaultWait (20s); negative turns long-polling off (the claims then
	// back off as after IdleAfter); so does an API that refuses it (a
	// shorter S3Q_MAX_WAIT). Only one slot long-polls at a time:
	// the others wait for it to get a task, so an idle worker of any
	// concurrency costs what one long-poll costs.
	Wait time.Duration
	// IdleAfter is how long the worker long-polls without getting a task
	// before it stops: then it claims without waiting, backing off from
	// IdleBackoff to MaxIdleBackoff, until a claim gets a task again. A
	// long-poll costs the API a claim (one LIST, of the folder of the
	// queue's two claim indexes) about every 3s; a claim every 30s costs
	// one LIST per 30s: this bounds what a long idle worker costs. Defaults to
	// DefaultIdleAfter (1m); negative long-polls for ever.
	IdleAfter time.Duration
	// IdleBackoff is the first wait after a claim finds nothing once the
	// worker is idle (IdleAfter, or with long-polling off); it doubles up
	// to MaxIdleBackoff. Defaults to 1s and 30s: an idle worker makes one
	// claim (one LIST) every 30s and sees new work within 30s.
	IdleBackoff, MaxIdleBackoff time.Duration
	// ShutdownGrace is how long running handlers may finish after the Run
	// context is cancelled; then they are cancelled and their tasks handed
	// back. Defaults to 30s.
	ShutdownGrace time.Duration
	// CancelPoll is how often a running task's record is read (one GET
	// /queues/{queue}/tasks/{id}) between heartbeats to see a cancel
	// request, so that a cancel reaches its handler within about this
	// long whatever the lease and heartbeat interval: about 1,800 reads
	// per running task-hour at 2s, under $0.01 (docs/cost.md). It needs an
	// API that is a TaskReader (a *client.Client is). Defaults to
	// DefaultCancelPoll (2s); negative turns it off (a cancel is then seen
	// at the next heartbeat, a third of the lease).
	CancelPoll time.Duration
	// Logger for structured logs. Defaults to slog.Default().
	Logger *slog.Logger
	// Now is the clock handlers see through Task.Remaining. Defaults to time.Now.
	Now func() time.Time
	// TracerProvider records an OpenTelemetry span per run of a task
	// (otel.go): a consumer span "s3q.run <task type>", child of the
	// trace context the task was submitted in, with the queue, task id,
	// attempt and outcome, its status an error when the handler fails;
	// the handler's context carries it. Defaults to the global provider
	// (otel.GetTracerProvider), a no-op until the program sets one:
	// nothing is recorded or exported then.
	TracerProvider trace.TracerProvider
}

// Defaults of Options.
const (
	DefaultWait      = 20 * time.Second
	DefaultIdleAfter = time.Minute
	// DefaultCancelPoll is how often a running task is read for a cancel
	// request by default (Options.CancelPoll).
	DefaultCancelPoll = 2 * time.Second
)

// Worker claims and runs tasks. Register handlers with Handle, then Run.
type Worker struct {
	api      API
	opts     Options
	handlers map[string]Handler
	log      *slog.Logger
	tracer   trace.Tracer
}

// New returns a worker over api.
func New(api API, opts Options) *Worker {
	if opts.Concurrency <= 0 {
		opts.Concurrency = 1
	}
	if opts.WorkerID == "" {
		host, _ := os.Hostname()
		opts.WorkerID = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	if opts.Wait == 0 {
		opts.Wait = DefaultWait
	}
	if opts.IdleAfter == 0 {
		opts.IdleAfter = DefaultIdleAfter
	}
	if opts.IdleBackoff <= 0 {
		opts.IdleBackoff = time.Second
	}
	if opts.MaxIdleBackoff <= 0 {
		opts.MaxIdleBackoff = 30 * time.Second
	}
	if opts.ShutdownGrace <= 0 {
		opts.ShutdownGrace = 30 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.CancelPoll == 0 {
		opts.CancelPoll = DefaultCancelPoll
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if c, ok := api.(*client.Client); ok && opts.Queue != "" {
		api = c.In(opts.Queue) // every route names the queue
	}
	return &Worker{api: api, opts: opts, handlers: map[string]Handler{}, log: opts.Logger, tracer: tracerOf(opts.TracerProvider)}
}

// Handle registers the handler of a task type.
func (w *Worker) Handle(taskType string, h Handler) { w.handlers[taskType] = h }

// Run claims and runs tasks until ctx is cancelled (SIGTERM, say), then
// stops claiming, waits up to ShutdownGrace for running handlers, cancels
// the rest and hands their tasks back (reschedule, available at once).
// It returns nil after a clean shutdown, and an error at once when the
// queue is not declared where the deployment requires it (a claim answers
// queue_not_found): a misspelt queue does not idle forever.
func (w *Worker) Run(ctx context.Context) error {
	if len(w.handlers) == 0 {
		return errors.New("worker: no handlers registered")
	}
	types := make([]string, 0, len(w.handlers))
	for t := range w.handlers {
		types = append(types, t)
	}
	sort.Strings(types)

	// Handlers run under their own context, cancelled only ShutdownGrace
	// after ctx, so a SIGTERM lets running work finish.
	work, cancelWork := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cancelWork(nil)
	// Claims stop when ctx ends, or at once on a claim error no retry
	// can mend (p.fatal).
	claiming, stopClaims := context.WithCancel(ctx)
	defer stopClaims()
	p := &poller{w: w, types: types, lastTask: time.Now(), stop: stopClaims}
	p.turn = make(chan struct{}, 1)
	p.turn <- struct{}{}
	var slots sync.WaitGroup
	for range w.opts.Concurrency {
		slots.Add(1)
		go func() {
			defer slots.Done()
			w.slot(claiming, work, p)
		}()
	}
	<-claiming.Done()

	w.log.Info("worker stopping: no new claims; waiting for running tasks", "grace", w.opts.ShutdownGrace.String())
	done := make(chan struct{})
	go func() { slots.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(w.opts.ShutdownGrace):
		cancelWork(ErrShutdown)
		<-done
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.fatal
}

// queueName is the queue the worker claims from.
func (w *Worker) queueName() string {
	if w.opts.Queue != "" {
		return w.opts.Queue
	}
	if c, ok := w.api.(*client.Client); ok {
		return c.Queue()
	}
	return queue.DefaultQueue
}

// slot is one of the worker's Concurrency slots: it claims a task, runs
// it, and claims the next while the last one's complete (or fail, ...)
// is on its way; at most one of those is in flight per slot.
func (w *Worker) slot(ctx, work context.Context, p *poller) {
	var finishing chan struct{}
	defer func() {
		if finishing != nil {
			<-finishing
		}
	}()
	for ctx.Err() == nil {
		c, ok := p.claim(ctx)
		if !ok {
			continue
		}
		finish := w.run(work, c)
		if finishing != nil {
			<-finishing
		}
		finishing = make(chan struct{})
		go func(done chan struct{}) {
			defer close(done)
			finish()
		}(finishing)
	}
}

// poller hands the slots their claims. A slot with nothing to do claims
// without waiting first; when that finds nothing, it long-polls, but only
// the slot holding the turn does: the others wait for the turn, which is
// passed on as soon as a long-poll gets a task (the others then claim at
// once: where there was one task there may be more). An idle worker so
// costs one long-poll however many slots it has.
type poller struct {
	w     *Worker
	types []string
	turn  chan struct{} // holds a token while no slot long-polls

	stop func() // stops every slot's claims (a fatal error)

	mu       sync.Mutex
	lastTask time.Time     // when a claim last got a task
	backoff  time.Duration // the idle backoff (IdleAfter)
	fatal    error         // a claim error no retry can mend: Run returns it
	noWait   bool          // the API refused Wait: claims no longer wait
}

// claim returns one claimed task, or false when ctx ends first (or a
// claim failed: the caller calls again).
func (p *poller) claim(ctx context.Context) (client.Claimed, bool) {
	for {
		c, ok, held := p.once(ctx, 0)
		if ok {
			return c, true
		}
		if !held || ctx.Err() != nil {
			break
		}
	}
	select {
	case <-p.turn:
	case <-ctx.Done():
		return client.Claimed{}, false
	}
	defer func() { p.turn <- struct{}{} }()
	for ctx.Err() == nil {
		wait := p.w.opts.Wait
		if p.idle() {
			wait = 0
		}
		began := time.Now()
		c, ok, held := p.once(ctx, wait)
		if ok {
			return c, true
		}
		if held {
			continue // once waited the rate limit's Retry-After
		}
		// An API that answers a long-poll early (a shorter limit of its
		// own) is not asked again in a tight loop.
		if wait <= 0 || time.Since(began) < wait/2 {
			p.mu.Lock()
			p.backoff = nextBackoff(p.backoff, p.w.opts.IdleBackoff, p.w.opts.MaxIdleBackoff)
			d := p.backoff
			p.mu.Unlock()
			sleep(ctx, d)
		}
	}
	return client.Claimed{}, false
}

// idle reports whether the worker has gone IdleAfter without a task (or
// does not long-poll at all): its claims then back off instead of waiting.
func (p *poller) idle() bool {
	o := p.w.opts
	if o.Wait <= 0 {
		return true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.noWait || o.IdleAfter > 0 && time.Since(p.lastTask) > o.IdleAfter
}

// once makes one claim of one task, waiting up to wait for it. A claim
// the queue's rate limit held back waits its Retry-After here and
// returns held.
func (p *poller) once(ctx context.Context, wait time.Duration) (c client.Claimed, ok, held bool) {
	o := p.w.opts
	cs, err := p.w.api.Claim(ctx, client.ClaimRequest{
		Queue: o.Queue, TaskTypes: p.types, LeaseFor: o.LeaseFor, WorkerID: o.WorkerID, MaxTasks: 1, Wait: max(wait, 0),
	})
	var limited *queue.RateLimitedError
	if errors.As(err, &limited) {
		sleep(ctx, limited.RetryAfter)
		return client.Claimed{}, false, true
	}
	if errors.Is(err, queue.ErrQueueNotFound) {
		p.mu.Lock()
		if p.fatal == nil {
			p.fatal = fmt.Errorf("worker: queue %q is not declared: %w", p.w.queueName(), err)
		}
		p.mu.Unlock()
		p.stop()
		return client.Claimed{}, false, false
	}
	var ce *client.Error
	if wait > 0 && errors.As(err, &ce) && ce.Field == "wait" {
		// A deployment with a shorter S3Q_MAX_WAIT: claim without waiting.
		p.mu.Lock()
		p.noWait = true
		p.mu.Unlock()
		p.w.log.Warn("the API refuses this long-poll; claiming without waiting from now on", "wait", wait.String(), "error", err)
		return client.Claimed{}, false, false
	}
	if err != nil {
		if ctx.Err() == nil {
			p.w.log.Warn("claim failed", "error", err)
			sleep(ctx, o.IdleBackoff) // not in a tight loop against a failing API
		}
		return client.Claimed{}, false, false
	}
	if len(cs) == 0 {
		return client.Claimed{}, false, false
	}
	p.mu.Lock()
	p.lastTask, p.backoff = time.Now(), 0
	p.mu.Unlock()
	return cs[0], true, false
}

func nextBackoff(cur, first, max time.Duration) time.Duration {
	if cur == 0 {
		return first
	}
	if cur *= 2; cur > max {
		cur = max
	}
	return cur
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// run works one claimed task until its handler returns, and returns what
// ends it: the complete, fail, reschedule or cancel acknowledgement, for
// the caller to send (while it claims its next task). The run's span
// (otel.go) ends once that is sent.
func (w *Worker) run(parent context.Context, c client.Claimed) (finish func()) {
	task := &Task{Task: c.Task, Lease: c.Lease, now: w.opts.Now}
	ctx, span := startRun(parent, w.tracer, task, w.queueName(), w.opts.WorkerID)
	ack := w.work(ctx, span, task)
	return func() {
		ack()
		span.End()
	}
}

// work runs the handler of task under ctx (which carries span), records
// on span how it ended, and returns the acknowledgement to send.
func (w *Worker) work(parent context.Context, span trace.Span, task *Task) (finish func()) {
	log := w.log.With("task_id", task.ID, "task_type", task.TaskType, "attempt", task.Attempt)
	h := w.handlers[task.TaskType]
	// Lease operations outlive a cancelled handler context.
	opCtx := context.WithoutCancel(parent)
	if h == nil { // the claim filters by type; this is a safety net
		msg := "no handler for task type " + task.TaskType
		endRun(span, outcomeFailed, errors.New(msg))
		return func() {
			_, err := w.api.Fail(opCtx, client.FailRequest{Lease: task.Lease, Error: msg})
			ackFailed(span, err)
		}
	}
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	stopBeat := make(chan struct{})
	beatDone := make(chan struct{})
	go func() {
		defer close(beatDone)
		w.heartbeat(opCtx, task, stopBeat, cancel, log)
	}()
	start := time.Now()
	out, err := safeCall(ctx, h, task)
	// The outcome is what the handler saw: a cancel (or a lost lease) that
	// a heartbeat or read in flight reports after it returned does not drop
	// its output (a complete of a task asked to cancel completes it).
	cause := context.Cause(ctx)
	close(stopBeat)
	<-beatDone

	switch {
	case errors.Is(cause, ErrLeaseLost):
		endRun(span, outcomeLeaseLost, ErrLeaseLost)
		log.Warn("lease lost; result dropped", "error", err)
		return func() {}
	case errors.Is(cause, ErrCancelRequested):
		endRun(span, outcomeCancelled, nil)
		return func() {
			if _, aerr := w.api.AckCancel(opCtx, client.AckCancelRequest{Lease: task.Lease}); aerr != nil {
				ackFailed(span, aerr)
				log.Warn("cancel acknowledgement failed", "error", aerr)
			}
			log.Info("task cancelled on request")
		}
	case errors.Is(cause, ErrShutdown):
		endRun(span, outcomeHandedBack, nil)
		return func() {
			if _, rerr := w.api.Reschedule(opCtx, client.RescheduleRequest{Lease: task.Lease}); rerr != nil {
				ackFailed(span, rerr)
				log.Warn("handing back on shutdown failed; the lease will run out", "error", rerr)
			} else {
				log.Info("task handed back on shutdown")
			}
		}
	}
	took := time.Since(start)
	var res *rescheduleError
	switch {
	case err == nil:
		endRun(span, outcomeCompleted, nil)
		return func() {
			if _, err := w.api.Complete(opCtx, client.CompleteRequest{Lease: task.Lease, Output: out}); err != nil {
				ackFailed(span, err)
				if refused(err) {
					// No attempt can deliver this output (over the inline
					// limit): fail the task now rather than let the lease
					// lapse and the finished task run again.
					msg := "the handler's output was refused: " + err.Error()
					if _, ferr := w.api.Fail(opCtx, client.FailRequest{Lease: task.Lease, Error: msg, Permanent: true}); ferr != nil {
						log.Warn("complete refused; fail failed", "error", err, "fail_error", ferr)
						return
					}
					log.Warn("complete refused: task failed", "error", err)
					return
				}
				log.Warn("complete failed", "error", err)
				return
			}
			log.Info("task completed", "duration_ms", took.Milliseconds())
		}
	case errors.As(err, &res):
		endRun(span, outcomeRescheduled, nil)
		return func() {
			if _, rerr := w.api.Reschedule(opCtx, client.RescheduleRequest{Lease: task.Lease, Delay: res.delay, ExtendExpiration: res.extend}); rerr != nil {
				ackFailed(span, rerr)
				log.Warn("reschedule failed", "error", rerr)
			}
		}
	default:
		permanent := IsPermanent(err)
		endRun(span, outcomeFailed, err)
		return func() {
			if _, ferr := w.api.Fail(opCtx, client.FailRequest{Lease: task.Lease, Error: err.Error(), Permanent: permanent}); ferr != nil {
				ackFailed(span, ferr)
				log.Warn("fail failed", "error", ferr)
				return
			}
			log.Info("task failed", "error", err.Error(), "retryable", !permanent)
		}
	}
}

// heartbeat extends the lease at a third of its length until stop, and
// cancels the handler when the lease is lost or a cancel is requested:
// seen on a heartbeat, or between them on a read of the task every
// Options.CancelPoll (cancelwatch.go).
func (w *Worker) heartbeat(ctx context.Context, t *Task, stop <-chan struct{}, cancel context.CancelCauseFunc, log *slog.Logger) {
	watch := w.cancelWatch(t)
	for {
		left := time.Until(t.Lease.ExpiresAt)
		interval := left / 3
		if interval < 100*time.Millisecond {
			interval = 100 * time.Millisecond
		}
		if !watch.until(ctx, time.Now().Add(interval), stop) {
			if watch.requested {
				cancel(ErrCancelRequested)
			}
			return
		}
		hb, err := w.api.Heartbeat(ctx, client.HeartbeatRequest{Lease: t.Lease, LeaseFor: w.opts.LeaseFor})
		switch {
		case errors.Is(err, queue.ErrLeaseExpired), errors.Is(err, queue.ErrLeaseMismatch), errors.Is(err, queue.ErrNotRunning), errors.Is(err, queue.ErrNotFound),
			errors.Is(err, queue.ErrInvalidState), // past queue.MaxHeartbeats: the lease will lapse
			tokenUsed(err):
			cancel(ErrLeaseLost)
			return
		case err != nil:
			log.Warn("heartbeat failed; retrying", "error", err)
			continue
		}
		t.Lease = hb.Lease
		if hb.Task.CancelRequested {
			cancel(ErrCancelRequested)
			return
		}
	}
}

// tokenUsed reports whether err says the lease's token already ended the
// lease (a 409 conflict naming lease_token): the lease is gone.
func tokenUsed(err error) bool { return errors.Is(err, queue.ErrLeaseEnded) }

// safeCall runs a handler, turning a panic into a failure.
func safeCall(ctx context.Context, h Handler, t *Task) (out json.RawMessage, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("handler panicked: %v", r)
		}
	}()
	return h(ctx, t)
}

type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// Permanent marks err as not worth retrying: the task goes straight to
// failed (the dead-letter state).
func Permanent(err error) error { return &permanentError{err: err} }

// IsPermanent reports whether err was marked with Permanent.
func IsPermanent(err error) bool {
	var p *permanentError
	return errors.As(err, &p)
}

type rescheduleError struct{ delay, extend time.Duration }

func (e *rescheduleError) Error() string { return "reschedule in " + queue.FormatDuration(e.delay) }

// Reschedule, returned by a handler, puts the task back to run again after
// delay without using up an attempt, moving its deadline extend later.
func Reschedule(delay, extend time.Duration) error {
	return &rescheduleError{delay: delay, extend: extend}
}

// refused reports whether the API refused a complete's output itself (413
// too_large, or 400 naming the output): sending it again never helps.
func refused(err error) bool {
	var e *client.Error
	return errors.As(err, &e) && (e.Code == "too_large" || (e.Status == 400 && e.Field == "output"))
}
