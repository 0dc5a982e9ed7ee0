package worker

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/s3q/s3q/shared/internal/w3ctrace"
)

// Spans. A worker records one OpenTelemetry span per run of a task (a
// consumer span named "s3q.run <task type>"), a child of the trace
// context the task was submitted in, through the TracerProvider of its
// Options (the global one by default). The handler's context carries it,
// so the spans a handler starts nest under it. A program that configures
// no OpenTelemetry has the global no-op provider: nothing is recorded or
// exported, and a run costs the parse of its traceparent.

// instrumentation is the name of the tracer the worker's spans come from.
const instrumentation = "github.com/s3q/s3q/shared/worker"

// spanNamePrefix begins the name of a run's span; the task type ends it.
const spanNamePrefix = "s3q.run "

// tracerOf returns the tracer of tp, the global provider's when nil.
func tracerOf(tp trace.TracerProvider) trace.Tracer { return w3ctrace.Tracer(tp, instrumentation) }

// startRun starts the span of one run of t on queue, a child of the trace
// context t was submitted in, and returns ctx carrying it and the trace
// context the handler continues (for TraceContext and TraceCarrier): the
// span's when it records, else the task's as submitted.
func startRun(ctx context.Context, tracer trace.Tracer, t *Task, queue, workerID string) (context.Context, trace.Span) {
	ctx = w3ctrace.Continue(ctx, t.Traceparent, t.Tracestate)
	ctx, span := tracer.Start(ctx, spanNamePrefix+t.TaskType, trace.WithSpanKind(trace.SpanKindConsumer))
	if !span.IsRecording() {
		return withTrace(ctx, t.Traceparent, t.Tracestate), span
	}
	span.SetAttributes(
		attribute.String("messaging.system", "s3q"),
		attribute.String("messaging.operation.type", "process"),
		attribute.String("messaging.operation.name", "run"),
		attribute.String("messaging.destination.name", queue),
		attribute.String("messaging.message.id", t.ID),
		attribute.String("s3q.task.type", t.TaskType),
		attribute.Int("s3q.task.attempt", t.Attempt),
		attribute.Int("s3q.task.priority", t.Priority),
	)
	if workerID != "" {
		span.SetAttributes(attribute.String("messaging.client.id", workerID))
	}
	tp, ts := w3ctrace.Of(ctx)
	return withTrace(ctx, tp, ts), span
}

// Outcomes of a run, as its span's s3q.outcome attribute.
const (
	outcomeCompleted   = "completed"
	outcomeFailed      = "failed"
	outcomeRescheduled = "rescheduled"
	outcomeCancelled   = "cancelled"
	outcomeLeaseLost   = "lease_lost"
	outcomeHandedBack  = "handed_back"
)

// endRun records on span how the run ended: its outcome, and for a
// failed run or a lost lease the error and an error status.
func endRun(span trace.Span, outcome string, err error) {
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(attribute.String("s3q.outcome", outcome))
	switch outcome {
	case outcomeFailed:
		span.SetAttributes(attribute.Bool("s3q.retryable", !IsPermanent(err)))
		fallthrough
	case outcomeLeaseLost:
		if err == nil {
			err = errors.New(outcome)
		}
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
}

// ackFailed records on span that the acknowledgement of its run (the
// complete, fail, ...) failed: the task runs again once its lease lapses.
func ackFailed(span trace.Span, err error) {
	if err != nil && span.IsRecording() {
		span.AddEvent("acknowledgement failed", trace.WithAttributes(attribute.String("error", err.Error())))
	}
}
