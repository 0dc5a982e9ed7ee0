package client_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/s3q/s3q/shared/client"
	"github.com/s3q/s3q/shared/wire"
)

// A submit sends its trace context as the traceparent and tracestate
// headers, not as body fields: the request's when given, else the span
// context of ctx; a batch sends ctx's for its items without their own.
func TestASubmitSendsItsTraceContextAsHeaders(t *testing.T) {
	type seen struct{ tp, ts, body string }
	var mu sync.Mutex
	var got []seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, seen{r.Header.Get("traceparent"), r.Header.Get("tracestate"), string(b)})
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(r.URL.Path, "/batch") {
			_, _ = io.WriteString(w, `{"results":[{"task":{"id":"a"}}]}`)
			return
		}
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"task":{"id":"a"}}`)
	}))
	defer srv.Close()
	c, err := client.New(context.Background(), srv.URL, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	tid, _ := trace.TraceIDFromHex("0af7651916cd43dd8448eb211c80319c")
	sid, _ := trace.SpanIDFromHex("b7ad6b7169203331")
	ts, _ := trace.ParseTraceState("vendor=span")
	spanCtx := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, TraceState: ts}))
	const fromCtx = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

	submit := func(ctx context.Context, req wire.SubmitRequest) {
		req.TaskType = "t"
		if _, err := c.Submit(ctx, client.SubmitRequest{SubmitRequest: req}); err != nil {
			t.Fatal(err)
		}
	}
	submit(spanCtx, wire.SubmitRequest{Traceparent: tp, Tracestate: "vendor=abc"})
	submit(spanCtx, wire.SubmitRequest{})
	submit(context.Background(), wire.SubmitRequest{})
	if _, err := c.SubmitBatch(spanCtx, []wire.SubmitRequest{{TaskType: "t"}}); err != nil {
		t.Fatal(err)
	}
	want := []seen{{tp, "vendor=abc", ""}, {fromCtx, "vendor=span", ""}, {"", "", ""}, {fromCtx, "vendor=span", ""}}
	if len(got) != len(want) {
		t.Fatalf("%d requests, want %d", len(got), len(want))
	}
	for i, w := range want {
		if got[i].tp != w.tp || got[i].ts != w.ts || strings.Contains(got[i].body, "traceparent") {
			t.Errorf("request %d sent traceparent %q tracestate %q body %s, want %q %q and no field", i, got[i].tp, got[i].ts, got[i].body, w.tp, w.ts)
		}
	}
}
