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

	"github.com/s3q/s3q/shared/api"
	"github.com/s3q/s3q/shared/dispatch"
	"github.com/s3q/s3q/shared/store"
)

// On the push path a trace travels from the submit to the target: the
// API's span of the submit continues the caller's traceparent, and the
// delivery's traceparent header is that span's context (same trace id,
// the submit span as parent), so the target's spans are its children.
func TestAPushDeliveryContinuesTheSubmitsSpan(t *testing.T) {
	forEachStore(t, func(t *testing.T, st store.Store) {
		rec := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
		t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
		var mu sync.Mutex
		var got []string
		e, _ := newHTTPEnv(t, st, func(_ dispatch.Payload, w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			got = append(got, r.Header.Get("traceparent"))
			mu.Unlock()
			w.WriteHeader(http.StatusOK)
		})
		e.declare()
		a := api.New(e.q, e.decls, api.Options{Logger: slog.New(slog.DiscardHandler), Now: e.clk.Now, TracerProvider: tp})

		callerCtx, caller := tp.Tracer("test").Start(context.Background(), "caller")
		req := httptest.NewRequest("POST", "/queues/push/tasks", strings.NewReader(`{"task_type":"push.test"}`))
		propagation.TraceContext{}.Inject(callerCtx, propagation.HeaderCarrier(req.Header))
		rr := httptest.NewRecorder()
		a.ServeHTTP(rr, req)
		caller.End()
		if rr.Code != http.StatusCreated {
			t.Fatalf("submit: %d %s", rr.Code, rr.Body)
		}
		var submit sdktrace.ReadOnlySpan
		for _, s := range rec.Ended() {
			if s.Name() == "POST /queues/{queue}/tasks" {
				submit = s
			}
		}
		if submit == nil || submit.Parent().SpanID() != caller.SpanContext().SpanID() {
			t.Fatal("no submit span, child of the caller's")
		}

		if rep := run(t, e.dispatcher(st, nil), ""); rep.Completed != 1 {
			t.Fatalf("report %+v", rep)
		}
		mu.Lock()
		defer mu.Unlock()
		want := "00-" + caller.SpanContext().TraceID().String() + "-" + submit.SpanContext().SpanID().String() + "-01"
		if len(got) != 1 || got[0] != want {
			t.Fatalf("deliveries carried %q, want %q (the submit span's context)", got, want)
		}
	})
}
