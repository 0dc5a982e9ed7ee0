package dispatch_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/s3q/s3q/shared/api"
	"github.com/s3q/s3q/shared/dispatch"
	"github.com/s3q/s3q/shared/store"
)

// On the push path a trace travels from the submit to the target: the
// API's span of the submit continues the caller's traceparent. A
// dispatcher that records no spans delivers the submit span's context (same
// trace id, the submit span as parent); one that records them makes a
// client span per delivery, child of the submit span, and delivers its
// context, so the target's spans are children of the delivery.
func TestAPushDeliveryContinuesTheSubmitsSpan(t *testing.T) {
	forEachStore(t, func(t *testing.T, st store.Store) {
		rec := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
		t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
		var mu sync.Mutex
		var got, inBody []string // the header; the task's field in the payload (what a Lambda target gets)
		e, _ := newHTTPEnv(t, st, func(p dispatch.Payload, w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			got = append(got, r.Header.Get("traceparent"))
			inBody = append(inBody, p.Task.Traceparent)
			mu.Unlock()
			w.WriteHeader(http.StatusOK)
		})
		e.declare()
		a := api.New(e.q, e.decls, api.Options{Logger: slog.New(slog.DiscardHandler), Now: e.clk.Now, TracerProvider: tp})

		callerCtx, caller := tp.Tracer("test").Start(context.Background(), "caller")
		defer caller.End()
		submit := func() sdktrace.ReadOnlySpan {
			req := httptest.NewRequest("POST", "/queues/push/tasks", strings.NewReader(`{"task_type":"push.test"}`))
			propagation.TraceContext{}.Inject(callerCtx, propagation.HeaderCarrier(req.Header))
			rr := httptest.NewRecorder()
			a.ServeHTTP(rr, req)
			if rr.Code != http.StatusCreated {
				t.Fatalf("submit: %d %s", rr.Code, rr.Body)
			}
			ended := rec.Ended()
			s := ended[len(ended)-1]
			if s.Name() != "POST /queues/{queue}/tasks" || s.Parent().SpanID() != caller.SpanContext().SpanID() {
				t.Fatalf("span %q parent %v: no submit span, child of the caller's", s.Name(), s.Parent().SpanID())
			}
			return s
		}
		ctxOf := func(s sdktrace.ReadOnlySpan) string {
			return "00-" + caller.SpanContext().TraceID().String() + "-" + s.SpanContext().SpanID().String() + "-01"
		}

		first := submit()
		if rep := run(t, e.dispatcher(st, nil), ""); rep.Completed != 1 {
			t.Fatalf("report %+v", rep)
		}
		second := submit()
		traced := dispatch.New(e.q, dispatch.NewDeclared(e.decls, 0), dispatch.Options{
			Now: e.clk.Now, Soon: -1, Logger: slog.New(slog.DiscardHandler),
			HTTP:           dispatch.NewHTTP(dispatch.StaticSecrets{"s3q/secret": secret}, true),
			TracerProvider: tp,
		})
		if rep := run(t, traced, ""); rep.Completed != 1 {
			t.Fatalf("report %+v", rep)
		}
		var deliver sdktrace.ReadOnlySpan
		for _, s := range rec.Ended() {
			if s.Name() == "s3q.deliver push.test" {
				deliver = s
			}
		}
		if deliver == nil || deliver.SpanKind() != trace.SpanKindClient || deliver.Parent().SpanID() != second.SpanContext().SpanID() {
			t.Fatal("no client span of the delivery, child of the second submit")
		}
		attrs := map[string]string{}
		for _, kv := range deliver.Attributes() {
			attrs[string(kv.Key)] = kv.Value.Emit()
		}
		if attrs["s3q.outcome"] != "complete" || attrs["s3q.target.status"] != "200" || attrs["messaging.destination.name"] != "push" || attrs["s3q.target.kind"] != "url" {
			t.Fatalf("delivery span attributes %v", attrs)
		}
		mu.Lock()
		defer mu.Unlock()
		want := []string{ctxOf(first), ctxOf(deliver)}
		if len(got) != 2 || got[0] != want[0] || got[1] != want[1] || len(inBody) != 2 || inBody[0] != want[0] || inBody[1] != want[1] {
			t.Fatalf("deliveries carried %q in the header and %q in the payload, want %q (the submit span's, then the delivery span's)", got, inBody, want)
		}
	})
}
