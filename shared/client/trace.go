package client

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/s3q/s3q/shared/wire"
)

// Trace context. A submit sends its W3C trace context as the traceparent
// and tracestate headers, which the API's span of the submit continues
// (docs/tracing.md): the request's Traceparent and Tracestate when given,
// else the span context ctx carries (an OpenTelemetry span of the caller,
// or the run of the worker handler that submits), else none. A program
// without OpenTelemetry has no span in its contexts: nothing is sent.

// withHeader is a request body sent with extra headers (do).
type withHeader struct {
	body   any
	header http.Header
}

// traceHeader returns the trace context headers of a submit of req, and
// req without its trace context fields (the headers carry it).
func traceHeader(ctx context.Context, req wire.SubmitRequest) (http.Header, wire.SubmitRequest) {
	h := http.Header{}
	switch {
	case req.Traceparent != "":
		h.Set("traceparent", req.Traceparent)
		if req.Tracestate != "" {
			h.Set("tracestate", req.Tracestate)
		}
		req.Traceparent, req.Tracestate = "", ""
	case req.Tracestate != "":
		return nil, req // the API refuses it, naming tracestate
	default:
		h = ctxTraceHeader(ctx)
	}
	return h, req
}

// ctxTraceHeader returns the trace context headers of the span context ctx
// carries, nil when it carries none.
func ctxTraceHeader(ctx context.Context) http.Header {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return nil
	}
	h := http.Header{}
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(h))
	return h
}
