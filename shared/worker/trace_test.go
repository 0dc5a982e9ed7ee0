package worker_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/wire"
	"github.com/s3q/s3q/shared/worker"
)

// The W3C trace context a task was submitted in reaches its handler's
// context, as TraceContext and as an OpenTelemetry-shaped carrier.
func TestTheHandlersContextCarriesTheSubmitsTraceContext(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	c, _ := setup(t)
	id := submit(t, c, wire.SubmitRequest{TaskType: "traced", Traceparent: tp, Tracestate: "vendor=abc"})
	plain := submit(t, c, wire.SubmitRequest{TaskType: "traced"})
	w := worker.New(c, fastOpts())
	seen := map[string][2]string{}
	keys := map[string]int{}
	w.Handle("traced", func(ctx context.Context, task *worker.Task) (json.RawMessage, error) {
		p, s := worker.TraceContext(ctx)
		seen[task.ID] = [2]string{p, s}
		keys[task.ID] = len(worker.TraceCarrier(ctx).Keys())
		return nil, nil
	})
	runUntil(t, w, func() bool { return status(t, c, id)() && status(t, c, plain)() })
	if seen[id] != [2]string{tp, "vendor=abc"} || keys[id] != 2 {
		t.Fatalf("the traced task's handler saw %q (%d carrier keys)", seen[id], keys[id])
	}
	if seen[plain] != [2]string{} || keys[plain] != 0 {
		t.Fatalf("the plain task's handler saw %q", seen[plain])
	}
}

// A push to a Lambda function hands its handler the task's trace context
// the same way.
func TestLambdaHandlerGivesTheHandlerTheTasksTraceContext(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	var seen string
	h := worker.LambdaHandler(map[string]worker.Handler{
		"ok": func(ctx context.Context, _ *worker.Task) (json.RawMessage, error) {
			seen, _ = worker.TraceContext(ctx)
			return nil, nil
		},
	})
	p := pushOf("ok", time.Now().Add(time.Hour))
	p.Task.Traceparent = tp
	if _, err := h(context.Background(), p); err != nil || seen != tp {
		t.Fatalf("the handler saw %q (%v), want %q", seen, err, tp)
	}
}
