// Package w3ctrace is what the API server, the dispatcher and the worker
// share of OpenTelemetry: the tracer of an optional provider, and a task's
// W3C trace context (traceparent and tracestate, the form a task keeps
// whatever propagator the program configures for its own requests) put
// into and taken out of a context.
package w3ctrace

import (
	"context"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// w3c is the W3C Trace Context propagator.
var w3c propagation.TraceContext

// Tracer returns the tracer named instrumentation of tp, or of the global
// provider when tp is nil (a no-op unless the program configures one).
func Tracer(tp trace.TracerProvider, instrumentation string) trace.Tracer {
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	return tp.Tracer(instrumentation)
}

// Continue returns ctx continuing the trace context traceparent and
// tracestate name (a remote parent): ctx as it is when traceparent is
// empty or malformed.
func Continue(ctx context.Context, traceparent, tracestate string) context.Context {
	if traceparent == "" {
		return ctx
	}
	return w3c.Extract(ctx, propagation.MapCarrier{"traceparent": traceparent, "tracestate": tracestate})
}

// Of returns the W3C trace context of the span ctx carries: empty
// strings when it carries none.
func Of(ctx context.Context) (traceparent, tracestate string) {
	c := propagation.MapCarrier{}
	w3c.Inject(ctx, c)
	return c["traceparent"], c["tracestate"]
}
