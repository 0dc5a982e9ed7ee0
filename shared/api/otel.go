package api

import (
	"context"
	"net/http"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/s3q/s3q/shared/internal/w3ctrace"
	"github.com/s3q/s3q/shared/queue"
)

// Spans. The API records one OpenTelemetry span per request (a server
// span named by its route, "POST /queues/{queue}/tasks"), continuing the
// W3C traceparent header of the request, through Options.TracerProvider
// (the global provider by default). A submit's tasks then continue the
// submit's span (spanTrace): the worker's span of each run is a child of
// the submit that made the task. A program that configures no
// OpenTelemetry has the global no-op provider: nothing is recorded, and
// the tasks keep the trace context the request gave.

// instrumentation is the name of the tracer the API's spans come from.
const instrumentation = "github.com/s3q/s3q/shared/api"

// tracerOf returns the tracer of tp, the global provider's when nil.
func tracerOf(tp trace.TracerProvider) trace.Tracer { return w3ctrace.Tracer(tp, instrumentation) }

// startSpan starts the span of request r, continuing its traceparent
// header (a malformed one is ignored here: the submit routes refuse it).
func (a *API) startSpan(ctx context.Context, r *http.Request) (context.Context, trace.Span) {
	ctx = w3ctrace.Continue(ctx, r.Header.Get("traceparent"), strings.Join(r.Header.Values("tracestate"), ","))
	return a.tracer.Start(ctx, r.Method, trace.WithSpanKind(trace.SpanKindServer))
}

// endSpan names span by the route rl matched and records the answer:
// its status, the queue, the task ids, and for a 5xx an error status.
func endSpan(span trace.Span, rl *requestLog, status int) {
	if !span.IsRecording() {
		return
	}
	name := rl.method
	if rl.route != "" && rl.route != "unmatched" {
		name = rl.route
		_, pattern, _ := strings.Cut(rl.route, " ")
		span.SetAttributes(attribute.String("http.route", pattern))
	}
	span.SetName(name)
	span.SetAttributes(
		attribute.String("http.request.method", rl.method),
		attribute.String("url.path", rl.path),
		attribute.Int("http.response.status_code", status),
	)
	if len(rl.ids) > 0 {
		span.SetAttributes(attribute.StringSlice("s3q.task.ids", rl.ids))
	}
	if rl.code != "" {
		span.SetAttributes(attribute.String("error.type", rl.code))
	}
	if status >= 500 {
		msg := rl.code
		if rl.err != nil {
			msg = rl.err.Error()
		}
		span.SetStatus(codes.Error, msg)
	}
}

// spanTrace gives the tasks of a submit whose trace context is the
// request's (its traceparent header, tp and ts) or who have none the
// trace context of the submit's span when it records one, so that each
// run of the task is a child of the submit. A task whose body names
// another trace context keeps it, and the span gets a link to it; with no
// span recorded every task keeps what the request gave.
func spanTrace(ctx context.Context, tp string, reqs []*queue.SubmitRequest) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	own, ownState := w3ctrace.Of(ctx)
	if own == "" {
		return
	}
	for _, req := range reqs {
		if req.Traceparent == "" || req.Traceparent == tp {
			req.Traceparent, req.Tracestate = own, ownState
			continue
		}
		other := w3ctrace.Continue(context.Background(), req.Traceparent, req.Tracestate)
		if sc := trace.SpanContextFromContext(other); sc.IsValid() {
			span.AddLink(trace.Link{SpanContext: sc})
		}
	}
}
