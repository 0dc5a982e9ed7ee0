package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/s3q/s3q/shared/api"
	"github.com/s3q/s3q/shared/api/openapitest"
	"github.com/s3q/s3q/shared/client"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/s3local/s3localtest"
	"github.com/s3q/s3q/shared/wire"
	"github.com/s3q/s3q/shared/worker"
)

// tracing returns a tracer provider that keeps every span it ends in
// memory, and the recorder to read them from.
func tracing(t *testing.T) (*sdktrace.TracerProvider, *tracetest.SpanRecorder) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(bg) })
	return tp, rec
}

// setupTraced is setup with an API that records its spans with tp; it
// returns the API's URL too.
func setupTraced(t *testing.T, tp trace.TracerProvider) (*client.Client, string) {
	t.Helper()
	q, decls := queues.New(s3localtest.NewStore(t, servers.VersityGW), queues.Options{Core: queue.Options{Backoff: func(int) time.Duration { return 0 }, ListCacheFor: -1}})
	ts := httptest.NewServer(openapitest.Handler(t, api.New(q, decls, api.Options{Logger: slog.New(slog.DiscardHandler), TracerProvider: tp})))
	t.Cleanup(ts.Close)
	c, err := client.New(bg, ts.URL, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c, ts.URL
}

// spanNamed returns the one ended span called name.
func spanNamed(t *testing.T, rec *tracetest.SpanRecorder, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	var found []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == name {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		var names []string
		for _, s := range rec.Ended() {
			names = append(names, s.Name())
		}
		t.Fatalf("%d spans named %q among %q, want 1", len(found), name, names)
	}
	return found[0]
}

func attr(s sdktrace.ReadOnlySpan, key string) attribute.Value {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value
		}
	}
	return attribute.Value{}
}

// On the pull path a trace travels from the submit to the handler: the
// API's span of the submit continues the caller's traceparent header, the
// task keeps the submit span's context, the worker's span of the run is
// its child, and a span the handler starts from its context is the run's.
// A failed run's span has an error status.
func TestATraceTravelsFromTheSubmitThroughTheAPIAndTheWorkerToTheHandler(t *testing.T) {
	tp, rec := tracing(t)
	c, url := setupTraced(t, tp)
	callerCtx, caller := tp.Tracer("test").Start(bg, "caller")
	h := http.Header{}
	propagation.TraceContext{}.Inject(callerCtx, propagation.HeaderCarrier(h))
	h.Set("Content-Type", "application/json")
	submitWithHeaders := func(body string) string {
		req, _ := http.NewRequest("POST", url+"/queues/default/tasks", strings.NewReader(body))
		req.Header = h.Clone()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var r struct{ Task wire.Task }
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || resp.StatusCode != http.StatusCreated {
			t.Fatalf("submit: %d %v", resp.StatusCode, err)
		}
		return r.Task.ID
	}
	id := submitWithHeaders(`{"task_type":"traced"}`)
	broken := submitWithHeaders(`{"task_type":"broken","max_attempts":1}`)
	caller.End()

	opts := fastOpts()
	opts.TracerProvider = tp
	w := worker.New(c, opts)
	var handlerTP string
	w.Handle("traced", func(ctx context.Context, task *worker.Task) (json.RawMessage, error) {
		handlerTP, _ = worker.TraceContext(ctx)
		_, s := tp.Tracer("handler").Start(ctx, "handler work")
		s.End()
		return nil, nil
	})
	w.Handle("broken", func(context.Context, *worker.Task) (json.RawMessage, error) {
		return nil, errors.New("the printer is on fire")
	})
	runUntil(t, w, func() bool { return status(t, c, id)() && status(t, c, broken)() })

	traceID := caller.SpanContext().TraceID()
	var submits []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == "POST /queues/{queue}/tasks" {
			submits = append(submits, s)
		}
	}
	if len(submits) != 2 {
		t.Fatalf("%d submit spans, want 2", len(submits))
	}
	submitOf := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range submits {
		if s.SpanKind() != trace.SpanKindServer || s.Parent().SpanID() != caller.SpanContext().SpanID() || s.SpanContext().TraceID() != traceID {
			t.Fatalf("submit span kind %v parent %v trace %v, want a server span child of the caller", s.SpanKind(), s.Parent().SpanID(), s.SpanContext().TraceID())
		}
		if got := attr(s, "http.response.status_code").AsInt64(); got != 201 {
			t.Fatalf("submit span status code %d", got)
		}
		ids := attr(s, "s3q.task.ids").AsStringSlice()
		if len(ids) != 1 {
			t.Fatalf("submit span task ids %q", ids)
		}
		submitOf[ids[0]] = s
	}
	got, _ := c.Get(bg, id)
	if want := "00-" + traceID.String() + "-" + submitOf[id].SpanContext().SpanID().String() + "-01"; got.Traceparent != want {
		t.Fatalf("the task's traceparent is %q, want the submit span's %q", got.Traceparent, want)
	}

	run := spanNamed(t, rec, "s3q.run traced")
	if run.SpanKind() != trace.SpanKindConsumer || run.Parent().SpanID() != submitOf[id].SpanContext().SpanID() || run.SpanContext().TraceID() != traceID {
		t.Fatalf("run span kind %v parent %v, want a consumer span child of the submit", run.SpanKind(), run.Parent().SpanID())
	}
	for key, want := range map[string]string{"messaging.system": "s3q", "messaging.destination.name": "default", "messaging.message.id": id, "s3q.task.type": "traced", "s3q.outcome": "completed", "messaging.client.id": "test"} {
		if got := attr(run, key).AsString(); got != want {
			t.Fatalf("run span %s = %q, want %q", key, got, want)
		}
	}
	if attr(run, "s3q.task.attempt").AsInt64() != 1 || run.Status().Code != codes.Unset {
		t.Fatalf("run span attempt %v status %v", attr(run, "s3q.task.attempt"), run.Status())
	}
	if want := "00-" + traceID.String() + "-" + run.SpanContext().SpanID().String() + "-01"; handlerTP != want {
		t.Fatalf("the handler continues %q, want the run span's %q", handlerTP, want)
	}
	work := spanNamed(t, rec, "handler work")
	if work.Parent().SpanID() != run.SpanContext().SpanID() || work.SpanContext().TraceID() != traceID {
		t.Fatal("the handler's span is not a child of the run's")
	}

	failed := spanNamed(t, rec, "s3q.run broken")
	if failed.Status().Code != codes.Error || failed.Status().Description != "the printer is on fire" || attr(failed, "s3q.outcome").AsString() != "failed" || len(failed.Events()) == 0 {
		t.Fatalf("failed run span status %v outcome %q events %d", failed.Status(), attr(failed, "s3q.outcome").AsString(), len(failed.Events()))
	}
	if failed.Parent().SpanID() != submitOf[broken].SpanContext().SpanID() {
		t.Fatal("the failed run's span is not a child of its submit")
	}
}

// A trace context given as a submit's field (as the Go client sends it)
// is the parent of the run's span.
func TestARunsSpanIsAChildOfATraceparentGivenAsAField(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	prov, rec := tracing(t)
	c, _ := setup(t)
	id := submit(t, c, wire.SubmitRequest{TaskType: "traced", Traceparent: tp, Tracestate: "vendor=abc"})
	opts := fastOpts()
	opts.TracerProvider = prov
	w := worker.New(c, opts)
	var carrier worker.Carrier
	w.Handle("traced", func(ctx context.Context, _ *worker.Task) (json.RawMessage, error) {
		carrier = worker.TraceCarrier(ctx)
		return nil, nil
	})
	runUntil(t, w, status(t, c, id))
	run := spanNamed(t, rec, "s3q.run traced")
	if run.Parent().TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || run.Parent().SpanID().String() != "00f067aa0ba902b7" || !run.Parent().IsRemote() {
		t.Fatalf("run span parent %v", run.Parent())
	}
	if run.SpanContext().TraceState().Get("vendor") != "abc" || carrier.Get("tracestate") != "vendor=abc" {
		t.Fatalf("tracestate %q, handler's %q", run.SpanContext().TraceState(), carrier.Get("tracestate"))
	}
}

// With no provider configured (the global no-op one, the default) a run
// records nothing, and the handler's context still continues the task's
// trace: its span context is the submit's, as submitted.
func TestWithoutAProviderARunRecordsNothingAndTheHandlerContinuesTheSubmittedTrace(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	c, _ := setup(t)
	id := submit(t, c, wire.SubmitRequest{TaskType: "traced", Traceparent: tp})
	w := worker.New(c, fastOpts())
	var recording bool
	var sc trace.SpanContext
	var seen string
	w.Handle("traced", func(ctx context.Context, _ *worker.Task) (json.RawMessage, error) {
		recording = trace.SpanFromContext(ctx).IsRecording()
		sc = trace.SpanContextFromContext(ctx)
		seen, _ = worker.TraceContext(ctx)
		return nil, nil
	})
	runUntil(t, w, status(t, c, id))
	if recording || seen != tp || sc.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || sc.SpanID().String() != "00f067aa0ba902b7" {
		t.Fatalf("recording %v, handler continues %q, span context %v", recording, seen, sc)
	}
}

// The Go client sends the span context of its ctx with a submit: a caller's
// span, and a handler's run, whose child tasks so continue its trace. The
// API's submit span is in the chain each time.
func TestTheGoClientCarriesTheTraceOfItsContextIntoTheTasksItSubmits(t *testing.T) {
	tp, rec := tracing(t)
	c, _ := setupTraced(t, tp)
	callerCtx, caller := tp.Tracer("test").Start(bg, "caller")
	res, err := c.Submit(callerCtx, client.SubmitRequest{SubmitRequest: wire.SubmitRequest{TaskType: "parent"}})
	caller.End()
	if err != nil {
		t.Fatal(err)
	}
	opts := fastOpts()
	opts.TracerProvider = tp
	w := worker.New(c, opts)
	var child string
	w.Handle("parent", func(ctx context.Context, _ *worker.Task) (json.RawMessage, error) {
		r, err := c.Submit(ctx, client.SubmitRequest{SubmitRequest: wire.SubmitRequest{TaskType: "child"}})
		child = r.Task.ID
		return nil, err
	})
	w.Handle("child", func(context.Context, *worker.Task) (json.RawMessage, error) { return nil, nil })
	runUntil(t, w, func() bool { return status(t, c, res.Task.ID)() && child != "" && status(t, c, child)() })

	traceID := caller.SpanContext().TraceID()
	parentRun, childRun := spanNamed(t, rec, "s3q.run parent"), spanNamed(t, rec, "s3q.run child")
	submits := map[trace.SpanID]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		if s.Name() == "POST /queues/{queue}/tasks" {
			submits[s.SpanContext().SpanID()] = s
		}
	}
	first, ok := submits[parentRun.Parent().SpanID()]
	if !ok || first.Parent().SpanID() != caller.SpanContext().SpanID() {
		t.Fatal("the parent task's run is not a child of a submit span whose parent is the caller")
	}
	second, ok := submits[childRun.Parent().SpanID()]
	if !ok || second.Parent().SpanID() != parentRun.SpanContext().SpanID() {
		t.Fatal("the child task's run is not a child of a submit span whose parent is the parent task's run")
	}
	for _, s := range []sdktrace.ReadOnlySpan{first, second, parentRun, childRun} {
		if s.SpanContext().TraceID() != traceID {
			t.Fatalf("span %q is in trace %v, want the caller's %v", s.Name(), s.SpanContext().TraceID(), traceID)
		}
	}
}

// With no TracerProvider in the options the global one records: the
// API's requests, a Worker's runs and a Lambda push target's invocations
// (LambdaHandler, whose failed run's span has an error status).
func TestTheGlobalProviderIsTheDefault(t *testing.T) {
	tp, rec := tracing(t)
	otel.SetTracerProvider(tp)
	t.Cleanup(func() { otel.SetTracerProvider(noop.NewTracerProvider()) })
	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

	c, _ := setup(t)
	id := submit(t, c, wire.SubmitRequest{TaskType: "pulled", Traceparent: parent})
	w := worker.New(c, fastOpts())
	w.Handle("pulled", func(context.Context, *worker.Task) (json.RawMessage, error) { return nil, nil })
	runUntil(t, w, status(t, c, id))
	// The API records too (the global provider): the run's parent is its submit span.
	submitSpan := spanNamed(t, rec, "POST /queues/{queue}/tasks")
	if s := spanNamed(t, rec, "s3q.run pulled"); s.Parent().SpanID() != submitSpan.SpanContext().SpanID() || s.SpanContext().TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Fatalf("the pulled run's span has parent %v", s.Parent())
	}

	h := worker.LambdaHandler(map[string]worker.Handler{
		"pushed": func(context.Context, *worker.Task) (json.RawMessage, error) { return nil, nil },
		"broken": func(context.Context, *worker.Task) (json.RawMessage, error) { return nil, errors.New("no ink") },
	})
	for _, tt := range []string{"pushed", "broken"} {
		p := pushOf(tt, time.Now().Add(time.Hour))
		p.Task.Traceparent = parent
		_, _ = h(bg, p)
	}
	ok, failed := spanNamed(t, rec, "s3q.run pushed"), spanNamed(t, rec, "s3q.run broken")
	if ok.Parent().SpanID().String() != "00f067aa0ba902b7" || ok.Status().Code != codes.Unset || attr(ok, "s3q.outcome").AsString() != "completed" {
		t.Fatalf("the pushed run's span: parent %v status %v outcome %q", ok.Parent(), ok.Status(), attr(ok, "s3q.outcome").AsString())
	}
	if failed.Status().Code != codes.Error || failed.Status().Description != "no ink" {
		t.Fatalf("the failed push run's span has status %v", failed.Status())
	}
}
