package lambdafn

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"time"

	"github.com/s3q/s3q/shared/config"
	"github.com/s3q/s3q/shared/dispatch"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/reqcount"
)

// dispatchListCache is how long one LIST serves the dispatch function's
// claims: short, because the tasks it serves are submitted by another
// process a moment before the wake.
const dispatchListCache = 100 * time.Millisecond

// DispatcherFromConfig builds the dispatch function's work from its
// configuration: the declared queues with a target (PUT /queues/{queue}),
// then those of S3Q_PUSH_QUEUES, Lambda targets
// invoked through the Lambda client (S3Q_LAMBDA_ENDPOINT when set), URL
// targets signed with secrets from SSM Parameter Store (cached 5m), and
// retries woken by an asynchronous Invoke of the function itself (its
// AWS_LAMBDA_FUNCTION_NAME). It makes no request.
func DispatcherFromConfig(ctx context.Context, c config.Config, d Deps) (*dispatch.Dispatcher, error) {
	lc, err := c.LambdaClient(ctx)
	if err != nil {
		return nil, err
	}
	sc, err := c.SSMClient(ctx)
	if err != nil {
		return nil, err
	}
	opts := dispatch.Options{
		Logger:       d.Logger,
		Lambda:       &dispatch.Lambda{Client: lc},
		HTTP:         dispatch.NewHTTP(dispatch.NewSSMSecrets(sc, 0), c.AllowInsecureTargets),
		RecheckAfter: dispatchListCache + 50*time.Millisecond,
	}
	if self := os.Getenv("AWS_LAMBDA_FUNCTION_NAME"); self != "" {
		opts.Waker = &dispatch.Limited{Now: time.Now, Next: &dispatch.LambdaWaker{Client: lc, Function: self, Logger: d.Logger}}
	}
	// Claims only, of push queues: an undeclared one (S3Q_PUSH_QUEUES) is
	// claimed from as auto_declare would, without declaring it.
	q := queue.New(reqcount.Wrap(d.Store), queue.Options{Shards: c.Shards, ListCacheFor: dispatchListCache})
	return dispatch.New(q, dispatch.NewDeclared(q, c.PushQueues, 0), opts), nil
}

// WakerFromConfig returns the submit function's wake of the dispatch
// function (S3Q_DISPATCH_FUNCTION, at most one Invoke per queue and second
// per container), or nil when none is configured.
func WakerFromConfig(ctx context.Context, c config.Config, logger *slog.Logger) (dispatch.Waker, error) {
	if c.DispatchFunction == "" {
		return nil, nil
	}
	lc, err := c.LambdaClient(ctx)
	if err != nil {
		return nil, err
	}
	return &dispatch.Limited{Now: time.Now, Next: &dispatch.LambdaWaker{Client: lc, Function: c.DispatchFunction, Logger: logger}}, nil
}

// dispatchFunction is the dispatch function: a run of the dispatcher for
// an EventBridge scheduled event (every push queue) or a dispatch.Wake
// (one queue, at its time).
type dispatchFunction struct {
	d Deps
}

// handle runs the dispatcher once. Its time ends a little before the
// invocation's deadline.
func (f *dispatchFunction) handle(ctx context.Context, raw json.RawMessage) (Report, error) {
	now := f.d.Now().UTC()
	rep := Report{Function: Dispatch, Now: now, Wired: f.d.Dispatcher != nil}
	if f.d.Dispatcher == nil {
		rep.Message = "nothing to do: no dispatcher is wired into this build"
		f.d.Logger.LogAttrs(ctx, slog.LevelWarn, "dispatch", slog.Bool("wired", false), slog.String("message", rep.Message))
		return rep, nil
	}
	var w dispatch.Wake // a scheduled event has neither field: every queue, now
	_ = json.Unmarshal(raw, &w)
	if wait := w.At.Sub(now); wait > 0 && wait <= dispatch.WakeAhead {
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return rep, ctx.Err()
		}
	}
	var until time.Time
	if dl, ok := ctx.Deadline(); ok {
		until = dl.Add(-time.Second)
	}
	ctx, counts := reqcount.Start(ctx)
	start := time.Now()
	result, err := f.d.Dispatcher.Run(ctx, w.Queue, until)
	rep.DurationMS = float64(time.Since(start).Microseconds()) / 1000
	rep.S3Requests = counts.Counts().Total()
	rep.Result = result
	attrs := []slog.Attr{
		slog.String("queue", w.Queue), slog.Float64("duration_ms", rep.DurationMS),
		slog.Int64("s3_requests", rep.S3Requests), slog.Any("result", result),
	}
	if f.d.Metrics != nil && result.Delivered+result.Errors > 0 {
		if merr := f.d.Metrics.Dispatch(w.Queue, result.Delivered, result.Failed+result.Lapsed, result.Errors, time.Now()); merr != nil {
			f.d.Logger.Warn("write dispatch metrics", "error", merr)
		}
	}
	if err != nil {
		f.d.Logger.LogAttrs(ctx, slog.LevelError, "dispatch", append(attrs, slog.String("error", err.Error()))...)
		return rep, err
	}
	f.d.Logger.LogAttrs(ctx, slog.LevelInfo, "dispatch", attrs...)
	return rep, nil
}
