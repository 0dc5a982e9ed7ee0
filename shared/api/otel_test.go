package api_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/s3q/s3q/shared/api"
	"github.com/s3q/s3q/shared/schedule"
	"github.com/s3q/s3q/shared/store/memstore"
)

// newTracedEnv is newEnvEveryRoute with an API that records its spans in
// the returned recorder.
func newTracedEnv(t *testing.T) (*env, *tracetest.SpanRecorder) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	e := newEnv(t, nil, api.Options{})
	e.api = api.New(e.q, e.decls, api.Options{
		Now: e.clock.Now, Logger: discard(), TracerProvider: tp,
		Schedules: schedule.New(e.q.Store(), e.q, schedule.Options{}),
	})
	return e, rec
}

// lastSpan returns the span ended last.
func lastSpan(t *testing.T, rec *tracetest.SpanRecorder) sdktrace.ReadOnlySpan {
	t.Helper()
	ended := rec.Ended()
	if len(ended) == 0 {
		t.Fatal("no span recorded")
	}
	return ended[len(ended)-1]
}

// Each request is a server span named by its route, continuing the
// request's traceparent header; an unmatched one is named by its method.
func TestARequestIsAServerSpanNamedByItsRouteContinuingItsTraceparent(t *testing.T) {
	e, rec := newTracedEnv(t)
	r := e.doHeaders("POST", "/queues/default/tasks", `{"task_type":"t"}`, map[string]string{"traceparent": traceparent})
	s := lastSpan(t, rec)
	if s.Name() != "POST /queues/{queue}/tasks" || s.SpanKind() != trace.SpanKindServer {
		t.Fatalf("span %q kind %v", s.Name(), s.SpanKind())
	}
	if s.Parent().TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || s.Parent().SpanID().String() != "00f067aa0ba902b7" || !s.Parent().IsRemote() {
		t.Fatalf("span parent %v", s.Parent())
	}
	id := str(r.body, "task.id")
	attrs := map[string]string{}
	for _, kv := range s.Attributes() {
		attrs[string(kv.Key)] = kv.Value.Emit()
	}
	for k, want := range map[string]string{"http.route": "/queues/{queue}/tasks", "http.request.method": "POST", "http.response.status_code": "201", "s3q.task.ids": `["` + id + `"]`} {
		if attrs[k] != want {
			t.Fatalf("span attribute %s = %q, want %q (all: %v)", k, attrs[k], want, attrs)
		}
	}

	e.do("GET", "/nowhere", "")
	if s := lastSpan(t, rec); s.Name() != "GET" || s.Status().Code != codes.Unset || s.Parent().IsValid() {
		t.Fatalf("unmatched span %q status %v parent %v", s.Name(), s.Status(), s.Parent())
	}
}

// With spans recorded, a submit's task continues the submit's span: the
// header's trace context, or none, becomes the span's; a body field that
// names another trace keeps it; a schedule's fire still starts a new trace.
func TestASubmitsTasksContinueTheSubmitsSpan(t *testing.T) {
	e, rec := newTracedEnv(t)
	h := map[string]string{"traceparent": traceparent, "tracestate": "vendor=abc"}
	r := e.doHeaders("POST", "/queues/default/tasks", `{"task_type":"t"}`, h)
	span := lastSpan(t, rec).SpanContext()
	want := "00-4bf92f3577b34da6a3ce929d0e0e4736-" + span.SpanID().String() + "-01"
	if got := str(r.body, "task.traceparent"); got != want || str(r.body, "task.tracestate") != "vendor=abc" {
		t.Fatalf("task traceparent %q tracestate %q, want %q", got, str(r.body, "task.tracestate"), want)
	}

	other := "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	r = e.doHeaders("POST", "/queues/default/tasks/batch", `{"tasks":[{"task_type":"t"},{"task_type":"t","traceparent":"`+other+`"}]}`, h)
	batchSpan := lastSpan(t, rec)
	span = batchSpan.SpanContext()
	raw := string(r.raw)
	if !strings.Contains(raw, `"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-`+span.SpanID().String()+`-01"`) || !strings.Contains(raw, `"traceparent":"`+other+`"`) {
		t.Fatalf("batch: %s", raw)
	}
	if links := batchSpan.Links(); len(links) != 1 || links[0].SpanContext.TraceID().String() != "0af7651916cd43dd8448eb211c80319c" {
		t.Fatalf("the batch span links %v, want the item's own trace context", links)
	}

	r = e.do("POST", "/queues/default/tasks", `{"task_type":"t"}`)
	span = lastSpan(t, rec).SpanContext()
	if got := str(r.body, "task.traceparent"); got != "00-"+span.TraceID().String()+"-"+span.SpanID().String()+"-01" {
		t.Fatalf("a submit without trace context got %q, want the submit span's (%v)", got, span)
	}

	if r := e.do("POST", "/queues/default/schedules", `{"id":"nightly","task_type":"t","cron":"@hourly"}`); r.status != http.StatusCreated {
		t.Fatalf("schedule: %d %s", r.status, r.raw)
	}
	r = e.doHeaders("POST", "/queues/default/schedules/nightly/trigger", "", h)
	task := e.do("GET", "/queues/default/tasks/"+str(r.body, "fire.task_id"), "")
	if tp := str(task.body, "task.traceparent"); tp == "" || strings.Contains(tp, "4bf92f3577b34da6a3ce929d0e0e4736") {
		t.Fatalf("a fire's task has traceparent %q, want a new trace", tp)
	}
}

// A 5xx answer's span has an error status (the cause, which the answer
// does not show), a panic's too; a 4xx's does not (the caller's mistake).
func TestAServerErrorsSpanHasAnErrorStatus(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error // nil: the store panics
	}{
		{"an_unclassified_store_error", errors.New("AccessDenied")},
		{"a_panic", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
			t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
			e := newEnv(t, failingStore{Store: memstore.New(), err: c.err}, api.Options{Logger: discard(), TracerProvider: tp})
			if r := e.do("GET", "/queues/default/tasks/"+unknownID, ""); r.status != http.StatusInternalServerError {
				t.Fatalf("%d %s", r.status, r.raw)
			}
			s := lastSpan(t, rec)
			if s.Status().Code != codes.Error || s.Name() != "GET /queues/{queue}/tasks/{id}" {
				t.Fatalf("span %q status %v", s.Name(), s.Status())
			}
		})
	}
	e, rec := newTracedEnv(t)
	if r := e.do("GET", "/queues/default/tasks/"+unknownID, ""); r.status != http.StatusNotFound {
		t.Fatalf("%d %s", r.status, r.raw)
	}
	if s := lastSpan(t, rec); s.Status().Code != codes.Unset {
		t.Fatalf("a 404's span has status %v", s.Status())
	}
}
