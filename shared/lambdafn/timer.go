package lambdafn

import (
	"context"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/s3q/s3q/shared/metrics"
	"github.com/s3q/s3q/shared/reqcount"
)

// Report is what a timer function answers, and what its log line says.
type Report struct {
	// Function is the function's name.
	Function string `json:"function"`
	// Now is the time the work ran at: the event's time (the minute
	// EventBridge scheduled it for), or the clock when the event has none
	// or names a time still ahead of it.
	Now time.Time `json:"now"`
	// Wired is false when the function has nothing to work on
	// (sweep-expired without Deps.Queue, schedule-tick without
	// Deps.Scheduler) and did nothing.
	Wired bool `json:"wired"`
	// Result is what the work returned.
	Result any `json:"result,omitempty"`
	// Message says what happened, for a person.
	Message string `json:"message,omitempty"`
	// DurationMS is how long the work took.
	DurationMS float64 `json:"duration_ms"`
	// S3Requests counts the store requests the work made through a
	// reqcount-wrapped store.
	S3Requests int64 `json:"s3_requests"`
}

// timerFunction is a timer function: its work, called once per event.
type timerFunction struct {
	name string
	work timerWork
	d    Deps
}

func newTimer(name string, work timerWork, d Deps) *timerFunction {
	return &timerFunction{name: name, work: work, d: d}
}

// handle runs the work once for an EventBridge scheduled event. An error
// of the work is logged and returned, so that Lambda records the failure
// and EventBridge retries.
func (f *timerFunction) handle(ctx context.Context, ev events.EventBridgeEvent) (Report, error) {
	now := f.d.Now()
	if !ev.Time.IsZero() && !ev.Time.After(now) {
		now = ev.Time
	}
	now = now.UTC()
	rep := Report{Function: f.name, Now: now, Wired: f.work != nil}
	if f.work == nil {
		rep.Message = "nothing to do: no " + f.name + " work is wired into this build"
		f.d.Logger.LogAttrs(ctx, slog.LevelWarn, "timer", slog.Time("now", now), slog.Bool("wired", false), slog.String("message", rep.Message))
		return rep, nil
	}
	ctx, counts := reqcount.Start(ctx)
	start := time.Now()
	result, err := f.work(ctx, now, ev.Source == "aws.events" && ev.DetailType == "Scheduled Event")
	rep.DurationMS = float64(time.Since(start).Microseconds()) / 1000
	rep.S3Requests = counts.Counts().Total()
	rep.Result = result
	if f.d.Metrics != nil {
		if merr := f.d.Metrics.Activity(metrics.Activity{S3Requests: rep.S3Requests}, time.Now()); merr != nil {
			f.d.Logger.Warn("write timer metrics", "error", merr)
		}
	}
	attrs := []slog.Attr{
		slog.Time("now", now), slog.Bool("wired", true), slog.Float64("duration_ms", rep.DurationMS),
		slog.Int64("s3_requests", rep.S3Requests), slog.Any("result", result),
	}
	if ev.ID != "" {
		attrs = append(attrs, slog.String("event_id", ev.ID))
	}
	// Who ran it: the rule that fired (the caller of a timer), and the
	// Lambda invocation.
	if len(ev.Resources) > 0 {
		attrs = append(attrs, slog.String("caller_arn", ev.Resources[0]))
	}
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		attrs = append(attrs, slog.String("lambda_request_id", lc.AwsRequestID))
	}
	if err != nil {
		f.d.Logger.LogAttrs(ctx, slog.LevelError, "timer", append(attrs, slog.String("error", err.Error()))...)
		return rep, err
	}
	f.d.Logger.LogAttrs(ctx, slog.LevelInfo, "timer", attrs...)
	return rep, nil
}
