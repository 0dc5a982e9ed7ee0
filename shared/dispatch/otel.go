package dispatch

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/s3q/s3q/shared/internal/w3ctrace"
	"github.com/s3q/s3q/shared/queue"
)

// Spans. A dispatcher records one OpenTelemetry span per delivery (a
// client span named "s3q.deliver <task type>"), a child of the trace
// context the task was submitted in, through Options.TracerProvider (the
// global provider by default). The delivery then carries the span's
// context instead of the task's (the traceparent and tracestate headers
// of a URL delivery, the task's fields in the payload), so the target's
// spans are its children. A program that configures no OpenTelemetry
// has the global no-op provider: nothing is recorded, and a delivery
// carries the task's trace context as it was submitted.

// instrumentation is the name of the tracer the dispatcher's spans come from.
const instrumentation = "github.com/s3q/s3q/shared/dispatch"

// tracerOf returns the tracer of tp, the global provider's when nil.
func tracerOf(tp trace.TracerProvider) trace.Tracer { return w3ctrace.Tracer(tp, instrumentation) }

// startDelivery starts the span of the delivery of t from push queue p
// and returns ctx carrying it, and the task as the delivery sends it:
// with the span's trace context when the span records, else as it is.
func (d *Dispatcher) startDelivery(ctx context.Context, p PushQueue, t queue.Task) (context.Context, trace.Span, queue.Task) {
	ctx = w3ctrace.Continue(ctx, t.Traceparent, t.Tracestate)
	ctx, span := d.tracer.Start(ctx, "s3q.deliver "+t.TaskType, trace.WithSpanKind(trace.SpanKindClient))
	if !span.IsRecording() {
		return ctx, span, t
	}
	target := "url"
	if p.Target.Lambda != "" {
		target = "lambda"
	}
	span.SetAttributes(
		attribute.String("messaging.system", "s3q"),
		attribute.String("messaging.operation.type", "send"),
		attribute.String("messaging.operation.name", "deliver"),
		attribute.String("messaging.destination.name", p.Name),
		attribute.String("messaging.message.id", t.ID),
		attribute.String("s3q.task.type", t.TaskType),
		attribute.Int("s3q.task.attempt", t.Attempt),
		attribute.String("s3q.target.kind", target),
	)
	t.Traceparent, t.Tracestate = w3ctrace.Of(ctx)
	return ctx, span, t
}

// endDelivery records on span how the target answered: the outcome, the
// answer's status, and for a failed delivery the error and an error
// status.
func endDelivery(span trace.Span, res Result) {
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(attribute.String("s3q.outcome", res.Outcome.String()))
	if res.Status != 0 {
		span.SetAttributes(attribute.Int("s3q.target.status", res.Status))
	}
	switch res.Outcome {
	case Fail:
		span.SetAttributes(attribute.Bool("s3q.retryable", res.Retryable))
		span.SetStatus(codes.Error, res.Error)
	case Lapse:
		span.SetStatus(codes.Error, "the delivery timed out")
	}
}
