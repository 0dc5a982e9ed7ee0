package dispatch

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/s3q/s3q/shared/queue"
)

// WakeAhead is how far ahead of its available_at a submitted task wakes
// the dispatcher: a task due later is left to the minute rule, whose run
// stays with the queue once the task is due within Options.Soon.
const WakeAhead = time.Minute

// Wake is the event that wakes a dispatcher for one queue: run at At
// (now when zero, past, or more than MaxWakeDelay ahead).
type Wake struct {
	Queue string    `json:"queue"`
	At    time.Time `json:"at,omitzero"`
}

// Waker wakes a dispatcher. Wake must not block on the delivery.
type Waker interface {
	Wake(ctx context.Context, w Wake)
}

// MaxWakeDelay is the furthest in the future a Wake's At may be for the
// dispatch function to wait for it: a wake for later than that runs at
// once (a run that finds the queue's next task due soon stays with the
// queue; see Options.Soon). No invocation waits longer for a wake.
const MaxWakeDelay = 2 * time.Second

// OnSubmit wakes the dispatcher for the tasks a submit created that are
// pending, in a push queue, and due within WakeAhead of now: one wake per
// queue, for now, whatever the due times (the woken run stays with the
// queue while its next task is due soon). It is the submit function's hook
// (api.Options.OnSubmit).
func OnSubmit(ctx context.Context, targets Targets, w Waker, tasks []queue.Task, now time.Time, log *slog.Logger) {
	woken := map[string]bool{} // the tasks are all written: one wake per queue serves them all
	for _, t := range tasks {
		if t.Status != queue.StatusPending || t.AvailableAt.After(now.Add(WakeAhead)) || woken[t.Queue] {
			continue
		}
		if _, ok, err := targets.PushQueue(ctx, t.Queue, now); err != nil {
			log.Warn("look up push queue", "queue", t.Queue, "error", err)
			continue
		} else if !ok {
			continue
		}
		woken[t.Queue] = true
		w.Wake(ctx, Wake{Queue: t.Queue})
	}
}

// Limited passes on at most one wake per queue per Every (a warm
// container's limit: at most one Invoke per queue and second, whatever
// the tasks' due times). Wakes are keyed by queue alone; their At is
// dropped. A wake that comes within Every of the last one passed on is
// not dropped but sent once, for the time the limit opens (the last
// wake's time + Every): the earlier run may have looked before the later
// task was written. Of the wakes of one interval, only the first is held
// back so; the others are dropped, since that one serves them.
type Limited struct {
	Next  Waker
	Now   func() time.Time
	Every time.Duration // defaults to 1s

	mu   sync.Mutex
	last map[string]time.Time // by queue: the time the last wake passed on is for
}

// Wake passes w on unless a wake for its queue is already on its way for
// this interval.
func (l *Limited) Wake(ctx context.Context, w Wake) {
	now := l.Now()
	every := l.Every
	if every <= 0 {
		every = time.Second
	}
	w.At = time.Time{}
	l.mu.Lock()
	if l.last == nil {
		l.last = map[string]time.Time{}
	}
	t, ok := l.last[w.Queue]
	switch {
	case !ok || !now.Before(t.Add(every)):
		l.last[w.Queue] = now
	case t.After(now):
		// A held-back wake for the next interval is on its way.
		l.mu.Unlock()
		return
	default:
		// The last wake's run may already have looked: hold this one back
		// until the limit opens, rather than leave the task to the minute
		// rule. One held-back wake per interval.
		w.At = t.Add(every)
		l.last[w.Queue] = w.At
	}
	for q, t := range l.last {
		if now.Sub(t) > time.Minute {
			delete(l.last, q)
		}
	}
	l.mu.Unlock()
	l.Next.Wake(ctx, w)
}

// LambdaWaker wakes the dispatch function with an asynchronous Invoke
// (InvocationType Event) whose payload is the Wake.
type LambdaWaker struct {
	Client   LambdaInvoker
	Function string
	Logger   *slog.Logger
}

// Wake invokes the dispatch function; an error is logged, not returned:
// the minute rule delivers the task anyway.
func (l *LambdaWaker) Wake(ctx context.Context, w Wake) {
	body, _ := json.Marshal(w)
	_, err := l.Client.Invoke(ctx, &lambda.InvokeInput{
		FunctionName: aws.String(l.Function), InvocationType: types.InvocationTypeEvent, Payload: body,
	})
	if err != nil && l.Logger != nil {
		l.Logger.Warn("wake dispatch", "queue", w.Queue, "error", err)
	}
}

// Local runs a Dispatcher in this process (s3q dev): a wake runs it for
// the queue at once, or at the wake's time; a wake that comes while a run
// of the queue is going makes it look again at once and run once
// more when it ends.
type Local struct {
	d   *Dispatcher
	ctx context.Context
	log *slog.Logger

	mu     sync.Mutex
	queues map[string]*localQueue
	wg     sync.WaitGroup
}

type localQueue struct{ running, again bool }

// NewLocal returns a Local waker over d whose runs last until ctx ends.
func NewLocal(ctx context.Context, d *Dispatcher) *Local {
	return &Local{d: d, ctx: ctx, log: d.log, queues: map[string]*localQueue{}}
}

// Wake runs the dispatcher for w.Queue now or at w.At.
func (l *Local) Wake(_ context.Context, w Wake) {
	if wait := w.At.Sub(l.d.opts.Now()); wait > 0 {
		time.AfterFunc(wait, func() { l.kick(w.Queue) })
		return
	}
	l.kick(w.Queue)
}

// Wait waits for the runs in progress (after ctx ended).
func (l *Local) Wait() { l.wg.Wait() }

func (l *Local) kick(name string) {
	if l.ctx.Err() != nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.queues[name]
	if s == nil {
		s = &localQueue{}
		l.queues[name] = s
	}
	if s.running {
		s.again = true
		l.d.poke(name) // a run staying with the queue looks again now
		return
	}
	s.running = true
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		for {
			if _, err := l.d.Run(l.ctx, name, time.Time{}); err != nil && l.ctx.Err() == nil {
				l.log.Warn("dispatch", "queue", name, "error", err)
			}
			l.mu.Lock()
			if !s.again || l.ctx.Err() != nil {
				s.running = false
				l.mu.Unlock()
				return
			}
			s.again = false
			l.mu.Unlock()
		}
	}()
}

// WakeAll runs the dispatcher for every push queue now (the minute rule).
func (l *Local) WakeAll() {
	pqs, err := l.d.targets.PushQueues(l.ctx, l.d.opts.Now())
	if err != nil {
		l.log.Warn("list push queues", "error", err)
		return
	}
	for _, p := range pqs {
		l.kick(p.Name)
	}
}
