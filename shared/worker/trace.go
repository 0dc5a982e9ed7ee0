package worker

import "context"

// traceKey is the context key of a task's trace context.
type traceKey struct{}

// withTrace returns ctx carrying the W3C trace context a handler
// continues, for TraceContext and Carrier.
func withTrace(ctx context.Context, traceparent, tracestate string) context.Context {
	if traceparent == "" {
		return ctx
	}
	return context.WithValue(ctx, traceKey{}, Carrier{"traceparent": traceparent, "tracestate": tracestate})
}

// TraceContext returns the W3C traceparent and tracestate the handler
// continues ("" when none), from the context the worker gives its
// handler: the task's as it was submitted (Task.Traceparent), or, when
// the worker records OpenTelemetry spans (Options.TracerProvider), the
// context of the span of this run, whose parent is the task's.
func TraceContext(ctx context.Context) (traceparent, tracestate string) {
	c, _ := ctx.Value(traceKey{}).(Carrier)
	return c["traceparent"], c["tracestate"]
}

// Carrier is a trace context as W3C headers: "traceparent" and
// "tracestate". It has the methods of OpenTelemetry's
// propagation.TextMapCarrier. A handler's context already carries the
// span of its run (see Options.TracerProvider), so a handler starts its
// spans from ctx; a carrier serves code that takes the context as
// headers (a subprocess, another protocol).
type Carrier map[string]string

// Get returns the value of key ("" when absent).
func (c Carrier) Get(key string) string { return c[key] }

// Set sets key to value.
func (c Carrier) Set(key, value string) { c[key] = value }

// Keys returns the keys c holds.
func (c Carrier) Keys() []string {
	out := make([]string, 0, len(c))
	for k, v := range c {
		if v != "" {
			out = append(out, k)
		}
	}
	return out
}

// TraceCarrier returns the trace context the handler continues
// (TraceContext) as a Carrier (empty when there is none).
func TraceCarrier(ctx context.Context) Carrier {
	c, _ := ctx.Value(traceKey{}).(Carrier)
	out := Carrier{}
	for k, v := range c {
		out[k] = v
	}
	return out
}
