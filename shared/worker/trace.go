package worker

import "context"

// traceKey is the context key of a task's trace context.
type traceKey struct{}

// withTrace returns ctx carrying the W3C trace context t was submitted in,
// for TraceContext and Carrier.
func withTrace(ctx context.Context, t *Task) context.Context {
	if t.Traceparent == "" {
		return ctx
	}
	return context.WithValue(ctx, traceKey{}, Carrier{"traceparent": t.Traceparent, "tracestate": t.Tracestate})
}

// TraceContext returns the W3C traceparent and tracestate the handler's
// task was submitted in ("" when none), from the context the worker gives
// its handler.
func TraceContext(ctx context.Context) (traceparent, tracestate string) {
	c, _ := ctx.Value(traceKey{}).(Carrier)
	return c["traceparent"], c["tracestate"]
}

// Carrier is a task's trace context as the headers of its submit:
// "traceparent" and "tracestate". It has the methods of OpenTelemetry's
// propagation.TextMapCarrier, so a handler whose program configures
// OpenTelemetry continues the submitter's trace with
//
//	ctx = otel.GetTextMapPropagator().Extract(ctx, worker.TraceCarrier(ctx))
//	ctx, span := tracer.Start(ctx, "handle "+t.TaskType)
//
// without s3q depending on OpenTelemetry (nothing recorded, nothing
// exported, nothing paid when the program does not configure it).
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

// TraceCarrier returns the trace context of the handler's task as a
// Carrier (empty when the task has none).
func TraceCarrier(ctx context.Context) Carrier {
	c, _ := ctx.Value(traceKey{}).(Carrier)
	out := Carrier{}
	for k, v := range c {
		out[k] = v
	}
	return out
}
