package w3ctrace_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/s3q/s3q/shared/internal/w3ctrace"
)

func TestATaskTraceContextRoundTripsThroughAContext(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	ctx := w3ctrace.Continue(context.Background(), tp, "vendor=a")
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() || !sc.IsRemote() || sc.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Fatalf("span context %+v, want the remote parent of %s", sc, tp)
	}
	gotTP, gotTS := w3ctrace.Of(ctx)
	if gotTP != tp || gotTS != "vendor=a" {
		t.Fatalf("Of = %q %q, want %q %q", gotTP, gotTS, tp, "vendor=a")
	}
}

func TestNoOrAMalformedTraceparentLeavesTheContextAsItIs(t *testing.T) {
	for _, tp := range []string{"", "00-zz-00f067aa0ba902b7-01", "00-00000000000000000000000000000000-00f067aa0ba902b7-01"} {
		ctx := w3ctrace.Continue(context.Background(), tp, "vendor=a")
		if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
			t.Fatalf("traceparent %q: span context %+v, want none", tp, sc)
		}
		if gotTP, _ := w3ctrace.Of(ctx); gotTP != "" {
			t.Fatalf("traceparent %q: Of = %q, want empty", tp, gotTP)
		}
	}
}

func TestANilProviderIsTheGlobalOne(t *testing.T) {
	_, span := w3ctrace.Tracer(nil, "x").Start(context.Background(), "s")
	defer span.End()
	if span.IsRecording() {
		t.Fatal("the global no-op provider recorded a span")
	}
}
