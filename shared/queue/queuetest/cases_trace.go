package queuetest

import (
	"errors"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/queue"
)

// runTrace: a submit's W3C trace context is kept on the task and comes
// back with every claim of it.
func runTrace(t *testing.T, f Factory) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	t.Run("a_submits_trace_context_comes_back_with_every_claim_of_the_task", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		task := e.submit(queue.SubmitRequest{Traceparent: tp, Tracestate: "vendor=abc"}, t0)
		c := e.reopenClaimOne(t0)
		if c.Task.ID != task.ID || c.Task.Traceparent != tp || c.Task.Tracestate != "vendor=abc" {
			t.Fatalf("claimed %s with %q %q", c.Task.ID, c.Task.Traceparent, c.Task.Tracestate)
		}
		got, err := e.q.Fail(ctx, queue.FailRequest{ID: task.Ref(), LeaseToken: c.Lease.Token, Error: "again"}, t0)
		if err != nil {
			t.Fatal(err)
		}
		c = e.reopenClaimOne(got.AvailableAt)
		if c.Task.Attempt != 2 || c.Task.Traceparent != tp {
			t.Fatalf("the retry: attempt %d with %q", c.Task.Attempt, c.Task.Traceparent)
		}
	})

	t.Run("a_retried_submit_from_another_span_replays_the_task", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		id := queue.NewID(t0)
		first := e.submit(queue.SubmitRequest{ID: id, Traceparent: tp}, t0)
		res, err := e.q.Submit(ctx, queue.SubmitRequest{ID: id, TaskType: "email.send", Traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b8-01"}, t0.Add(time.Second))
		if err != nil || !res.Replayed || res.Task.Traceparent != first.Traceparent {
			t.Fatalf("retry: %+v %v", res, err)
		}
	})

	t.Run("a_malformed_trace_context_is_refused_naming_the_field_and_nothing_is_written", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		for _, c := range []struct{ tp, ts, field string }{
			{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7", "", "traceparent"},
			{"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", "", "traceparent"},
			{"00-00000000000000000000000000000000-00f067aa0ba902b7-01", "", "traceparent"},
			{"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", "", "traceparent"},
			{"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "", "traceparent"},
			{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra", "", "traceparent"},
			{"", "vendor=abc", "tracestate"},
			{tp, "vendor=\x01", "tracestate"},
		} {
			_, err := e.q.Submit(ctx, queue.SubmitRequest{TaskType: "x", Traceparent: c.tp, Tracestate: c.ts}, t0)
			var ve *queue.ValidationError
			if !errors.As(err, &ve) || ve.Field != c.field {
				t.Fatalf("%q %q: %v, want a validation error naming %s", c.tp, c.ts, err, c.field)
			}
		}
		if keys := e.allKeys(); len(keys) > 1 {
			t.Fatalf("refused submits wrote %v", keys)
		}
	})
}
