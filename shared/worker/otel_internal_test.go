package worker

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/trace/noop"

	"github.com/s3q/s3q/shared/client"
	"github.com/s3q/s3q/shared/wire"
)

// With no provider configured a run's span is the no-op one: starting and
// ending it records nothing and costs a few small allocations (the parse
// of the task's traceparent, the span in the context): about 10 with a
// traceparent and 4 without, against hundreds for a claim's HTTP request.
// The bounds leave room for another version of OpenTelemetry.
func TestTheNoOpSpanOfARunCostsAFewAllocations(t *testing.T) {
	tracer := noop.NewTracerProvider().Tracer(instrumentation)
	traced := &Task{Task: client.Task{Task: wire.Task{ID: "t", TaskType: "x", Traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}}
	plain := &Task{Task: client.Task{Task: wire.Task{ID: "t", TaskType: "x"}}}
	for _, c := range []struct {
		name string
		task *Task
		max  float64
	}{{"traced", traced, 16}, {"plain", plain, 8}} {
		allocs := testing.AllocsPerRun(100, func() {
			ctx, span := startRun(context.Background(), tracer, c.task, "q", "w")
			endRun(span, outcomeCompleted, nil)
			span.End()
			_ = ctx
		})
		t.Logf("%s task: %.0f allocations per run's span", c.name, allocs)
		if allocs > c.max {
			t.Errorf("%s task: %.0f allocations per no-op span, want at most %.0f", c.name, allocs, c.max)
		}
	}
}
