// Package lambdafntest runs the functions of package lambdafn the way
// Lambda would, for tests and benchmarks: DispatchStorm submits batches
// through the submit function, whose wakes reach the dispatch function
// through a Lambda client that counts every Invoke and runs each one as
// its own invocation (a fresh dispatcher: a cold container), on a clock
// that runs faster than real time.
package lambdafntest

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/s3q/s3q/shared/dispatch"
	"github.com/s3q/s3q/shared/lambdafn"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/store"
	"github.com/s3q/s3q/shared/store/memstore"
)

// StormOptions shape a dispatch storm. The zero value is the pattern of
// the review that found dispatch unbounded: one 60-task batch a second
// for 60 s into one push queue, each batch's schedule_at spread over the
// next minute.
type StormOptions struct {
	// Store holds the queue. Defaults to a fresh memstore.
	Store store.Store
	// Batches, BatchSize and Spread: Batches submits one second apart,
	// each of BatchSize tasks whose schedule_at are spread evenly over
	// the next Spread. Default to 60, 60 and 60s.
	Batches, BatchSize int
	Spread             time.Duration
	// Scale is how much faster than real time the clock runs (the
	// dispatcher's and the functions' clock and waits). Defaults to 20:
	// the 60 s storm and its last tasks take about 6 s.
	Scale float64
	// Within is the real time to wait for the last delivery after the
	// last batch. Defaults to 2 minutes.
	Within time.Duration
	// Logger receives the functions' logs. Defaults to discarding them.
	Logger *slog.Logger
	// Reserved is the dispatch function's reserved concurrency: an Invoke
	// that finds this many invocations running is throttled, as Lambda
	// throttles it, and runs when one of them ends (Lambda retries a
	// throttled asynchronous event; here the retry comes as soon as it
	// can succeed). Defaults to 10, the stack's default.
	Reserved int
}

// StormResult is what a storm did.
type StormResult struct {
	// Invokes are the asynchronous Invokes of the dispatch function
	// (submit's wakes and dispatch's own hand-offs and retries).
	Invokes int
	// PeakConcurrent is the most dispatch invocations running at once
	// (at most Reserved); Throttled counts the Invokes that found
	// Reserved running and waited for one to end. Both depend on how long
	// an invocation takes, so on the machine's speed: figures to print,
	// not to assert.
	PeakConcurrent, Throttled int
	// Tasks were submitted; Delivered of them reached the target, and
	// Duplicates deliveries were of a task already delivered.
	Tasks, Delivered, Duplicates int
	// LatenessP50 and LatenessP99 are from a task's schedule_at to its
	// delivery, on the storm's clock.
	LatenessP50, LatenessP99 time.Duration
}

// DispatchFunctionName is the dispatch function's name in a storm.
const DispatchFunctionName = "s3q-storm-dispatch"

// scaled is a clock that runs scale times faster than real time from
// start.
type scaled struct {
	start time.Time
	scale float64
}

func (c scaled) Now() time.Time {
	return c.start.Add(time.Duration(float64(time.Since(c.start)) * c.scale)).UTC()
}

func (c scaled) After(d time.Duration) <-chan time.Time {
	return time.After(time.Duration(float64(d) / c.scale))
}

func (c scaled) sleepUntil(t time.Time) {
	if d := t.Sub(c.Now()); d > 0 {
		<-c.After(d)
	}
}

// invoker is a Lambda client whose asynchronous Invoke of the dispatch
// function runs the function's handler in a goroutine, as a new
// invocation: at once while fewer than reserved run, else when one of
// them ends (throttled). It counts the Invokes, the throttled ones and
// the invocations running at once.
type invoker struct {
	handler  func() (func(ctx context.Context, payload []byte) error, error)
	log      *slog.Logger
	reserved int

	mu        sync.Mutex
	invokes   int
	throttled int
	running   int
	peak      int
	waiting   [][]byte // throttled payloads, in order
	wg        sync.WaitGroup
}

func (l *invoker) Invoke(ctx context.Context, in *lambda.InvokeInput, _ ...func(*lambda.Options)) (*lambda.InvokeOutput, error) {
	if aws.ToString(in.FunctionName) != DispatchFunctionName || in.InvocationType != types.InvocationTypeEvent {
		return nil, fmt.Errorf("storm: unexpected invoke of %s (%s)", aws.ToString(in.FunctionName), in.InvocationType)
	}
	payload := append([]byte(nil), in.Payload...)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.invokes++
	l.wg.Add(1)
	if l.running >= l.reserved {
		l.throttled++
		l.waiting = append(l.waiting, payload)
		return &lambda.InvokeOutput{StatusCode: 202}, nil
	}
	l.startLocked(payload)
	return &lambda.InvokeOutput{StatusCode: 202}, nil
}

// startLocked runs one invocation of payload; when it ends, the first
// throttled payload runs in its place. Callers hold l.mu and have added
// the invocation to l.wg.
func (l *invoker) startLocked(payload []byte) {
	l.running++
	l.peak = max(l.peak, l.running)
	go func() {
		defer l.wg.Done()
		h, err := l.handler()
		if err == nil {
			err = h(context.Background(), payload)
		}
		if err != nil {
			l.log.Warn("storm: dispatch invocation", "error", err)
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		l.running--
		if len(l.waiting) > 0 {
			next := l.waiting[0]
			l.waiting = l.waiting[1:]
			l.startLocked(next)
		}
	}()
}

// target is the push queue's Lambda target: it records when each task
// arrived, on the storm's clock.
type target struct {
	now func() time.Time

	mu        sync.Mutex
	delivered map[string]time.Duration // task id -> lateness
	dups      int
}

func (t *target) Deliver(_ context.Context, _ queues.Target, d dispatch.Delivery) dispatch.Result {
	late := t.now().Sub(d.Task.AvailableAt)
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.delivered[d.Task.ID]; ok {
		t.dups++
	} else {
		t.delivered[d.Task.ID] = late
	}
	return dispatch.Result{Outcome: dispatch.Complete, Output: []byte(`{}`), Status: 200}
}

func (t *target) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.delivered)
}

// DispatchStorm runs a storm (see StormOptions) and reports it. The push
// queue "storm" is declared with a Lambda target; the submit function
// wakes dispatch as deployed (at most one Invoke per queue and second);
// each Invoke runs the dispatch function as deployed (a fresh dispatcher,
// a short listing cache, its own wake for retries and hand-offs), with no
// deadline of its own.
func DispatchStorm(ctx context.Context, o StormOptions) (StormResult, error) {
	if o.Store == nil {
		o.Store = memstore.New()
	}
	if o.Batches <= 0 {
		o.Batches = 60
	}
	if o.BatchSize <= 0 {
		o.BatchSize = 60
	}
	if o.Spread <= 0 {
		o.Spread = time.Minute
	}
	if o.Scale <= 0 {
		o.Scale = 20
	}
	if o.Within <= 0 {
		o.Within = 2 * time.Minute
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Reserved <= 0 {
		o.Reserved = 10
	}
	clk := scaled{start: time.Now(), scale: o.Scale}
	q, decls := queues.New(o.Store, queues.Options{})
	if _, _, err := decls.Declare(ctx, queues.Declaration{Name: "storm", Target: &queues.Target{Lambda: "storm-target"}}, clk.Now()); err != nil {
		return StormResult{}, err
	}
	tg := &target{now: clk.Now, delivered: map[string]time.Duration{}}
	inv := &invoker{log: o.Logger, reserved: o.Reserved}
	wake := func() dispatch.Waker {
		return &dispatch.Limited{Now: clk.Now, Next: &dispatch.LambdaWaker{Client: inv, Function: DispatchFunctionName, Logger: o.Logger}}
	}
	inv.handler = func() (func(ctx context.Context, payload []byte) error, error) {
		dq, ddecls := queues.New(o.Store, queues.Options{Core: queue.Options{ListCacheFor: 100 * time.Millisecond}})
		dp := dispatch.New(dq, dispatch.NewDeclared(ddecls, 0), dispatch.Options{
			Now: clk.Now, After: clk.After, Logger: o.Logger, Lambda: tg, Waker: wake(),
			RecheckAfter: 150 * time.Millisecond,
		})
		h, err := lambdafn.New(lambdafn.Dispatch, lambdafn.Deps{Dispatcher: dp, Now: clk.Now, Logger: o.Logger})
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context, payload []byte) error {
			_, err := h.Invoke(ctx, payload)
			return err
		}, nil
	}
	submit, err := lambdafn.New(lambdafn.Submit, lambdafn.Deps{
		Queue: q, Queues: decls, Now: clk.Now, Logger: o.Logger, Waker: wake(), Targets: dispatch.NewDeclared(decls, 0),
	})
	if err != nil {
		return StormResult{}, err
	}
	first := clk.Now().Add(time.Second).Truncate(time.Second)
	tasks := 0
	for b := range o.Batches {
		clk.sleepUntil(first.Add(time.Duration(b) * time.Second))
		now := clk.Now()
		type req struct {
			TaskType   string    `json:"task_type"`
			ScheduleAt time.Time `json:"schedule_at"`
		}
		batch := struct {
			Tasks []req `json:"tasks"`
		}{}
		for i := range o.BatchSize {
			batch.Tasks = append(batch.Tasks, req{TaskType: "storm", ScheduleAt: now.Add(o.Spread * time.Duration(i) / time.Duration(o.BatchSize))})
		}
		body, _ := json.Marshal(batch)
		out, err := submit.Invoke(ctx, APIEvent("POST", "/queues/storm/tasks/batch", string(body)))
		if err != nil {
			return StormResult{}, err
		}
		var resp events.APIGatewayV2HTTPResponse
		if err := json.Unmarshal(out, &resp); err != nil || resp.StatusCode != 200 {
			return StormResult{}, fmt.Errorf("storm: batch %d: %d %s (%v)", b, resp.StatusCode, resp.Body, err)
		}
		tasks += o.BatchSize
	}
	deadline := time.Now().Add(o.Within)
	for tg.count() < tasks && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
	}
	// The minute rule is not part of the storm: runs still staying with
	// the queue end when nothing more is due within a minute.
	inv.wg.Wait()
	tg.mu.Lock()
	defer tg.mu.Unlock()
	inv.mu.Lock()
	defer inv.mu.Unlock()
	res := StormResult{Invokes: inv.invokes, PeakConcurrent: inv.peak, Throttled: inv.throttled, Tasks: tasks, Delivered: len(tg.delivered), Duplicates: tg.dups}
	var late []time.Duration
	for _, d := range tg.delivered {
		late = append(late, d)
	}
	sort.Slice(late, func(i, j int) bool { return late[i] < late[j] })
	if len(late) > 0 {
		res.LatenessP50, res.LatenessP99 = late[len(late)/2], late[min(len(late)-1, len(late)*99/100)]
	}
	return res, nil
}
