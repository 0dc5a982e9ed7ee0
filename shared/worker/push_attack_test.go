package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/aws/aws-lambda-go/lambda/messages"
	"github.com/s3q/s3q/shared/client"
	"github.com/s3q/s3q/shared/queue"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/pushsig"
	"github.com/s3q/s3q/shared/worker"
)

// A target whose secret is unset (an empty environment variable) must not
// accept deliveries signed with the empty key: anyone can make those.
func TestVerifySignatureWithAnEmptySecretRefusesEveryDelivery(t *testing.T) {
	now := time.Date(2026, 1, 28, 9, 0, 0, 0, time.UTC)
	body := []byte(`{"task":{"id":"forged"}}`)
	ts := strconv.FormatInt(now.Unix(), 10)
	h := http.Header{}
	h.Set("S3q-Timestamp", ts)
	h.Set("S3q-Signature", pushsig.Sign("", ts, body))
	if err := worker.VerifySignature("", h, body, now, 0); !errors.Is(err, pushsig.ErrNoSecret) {
		t.Fatalf("empty secret: %v", err)
	}
}

// An invocation that starts after its delivery's deadline (a cold start,
// Lambda's own queueing) does not run the handler: the dispatcher has
// stopped waiting, the lease lapses and the next attempt is delivered, so
// running it would run the task twice at once.
func TestLambdaHandlerDoesNotStartAHandlerPastTheDeliveryDeadline(t *testing.T) {
	ran := false
	h := worker.LambdaHandler(map[string]worker.Handler{
		"ok": func(context.Context, *worker.Task) (json.RawMessage, error) {
			ran = true
			return json.RawMessage(`{}`), nil
		},
	})
	_, err := h(context.Background(), worker.Push{
		Task:     client.Task{Task: queue.Task{ID: "id", TaskType: "ok"}},
		Lease:    client.Lease{TaskID: "id", Token: "tok"},
		Deadline: time.Now().Add(-time.Second),
	})
	if ran || err == nil {
		t.Fatalf("ran %v, error %v", ran, err)
	}
}

// A handler that panics answers a retryable function error (the function
// lives on), and one that overruns its deadline sees its context end at
// the payload's deadline with ErrDeadline as the cause.
func TestLambdaHandlerSurvivesAPanicAndEndsTheContextAtTheDeadline(t *testing.T) {
	var cause error
	h := worker.LambdaHandler(map[string]worker.Handler{
		"panics": func(context.Context, *worker.Task) (json.RawMessage, error) { panic("boom") },
		"overruns": func(ctx context.Context, _ *worker.Task) (json.RawMessage, error) {
			<-ctx.Done()
			cause = context.Cause(ctx)
			return nil, ctx.Err()
		},
	})
	push := func(tt string) worker.Push {
		return worker.Push{Task: client.Task{Task: queue.Task{ID: "id", TaskType: tt}}, Deadline: time.Now().Add(50 * time.Millisecond)}
	}
	var ie messages.InvokeResponse_Error
	if _, err := h(context.Background(), push("panics")); !errors.As(err, &ie) || ie.Type == worker.PermanentErrorType {
		t.Fatalf("panic: %#v", err)
	}
	start := time.Now()
	if _, err := h(context.Background(), push("overruns")); err == nil || !errors.Is(cause, worker.ErrDeadline) || time.Since(start) > time.Second {
		t.Fatalf("overrun: %v, cause %v after %s", err, cause, time.Since(start))
	}
}
