package lambdafn

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/s3q/s3q/shared/dispatch"
	"github.com/s3q/s3q/shared/metrics"
	"github.com/s3q/s3q/shared/reqcount"
)

// dispatchFunction is the dispatch function: a run of the dispatcher for
// an EventBridge scheduled event (every push queue) or a dispatch.Wake
// (one queue, now or within dispatch.MaxWakeDelay).
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
	// A wake held back by the submit's limit waits for its second; no
	// wake waits longer than MaxWakeDelay (a run that finds a task due
	// soon stays with its queue instead, one run per queue).
	if wait := w.At.Sub(now); wait > 0 && wait <= dispatch.MaxWakeDelay {
		select {
		case <-f.d.Dispatcher.After(wait):
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
	if f.d.Metrics != nil {
		a := metrics.Activity{Completed: result.Completed, Failed: result.Failed, S3Requests: rep.S3Requests}
		if merr := f.d.Metrics.Activity(a, time.Now()); merr != nil {
			f.d.Logger.Warn("write dispatch metrics", "error", merr)
		}
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
