package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda/messages"

	"github.com/s3q/s3q/shared/pushsig"
	"github.com/s3q/s3q/shared/worker"
)

// A target whose secret is unset (an empty environment variable) must not
// accept deliveries signed with the empty key: anyone can make those.
func TestVerifySignatureWithAnEmptySecretRefusesEveryDelivery(t *testing.T) {
	now := time.Date(2026, 1, 28, 9, 0, 0, 0, time.UTC)
	body := []byte(`{"task":{"id":"forged"}}`)
	h := signed("", strconv.FormatInt(now.Unix(), 10), body)
	if err := verify("", h, body, now); !errors.Is(err, pushsig.ErrNoSecret) {
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
	_, err := h(context.Background(), pushOf("ok", time.Now().Add(-time.Second)))
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
	push := func(tt string) worker.Push { return pushOf(tt, time.Now().Add(50*time.Millisecond)) }
	var ie messages.InvokeResponse_Error
	if _, err := h(context.Background(), push("panics")); !errors.As(err, &ie) || ie.Type == worker.PermanentErrorType {
		t.Fatalf("panic: %#v", err)
	}
	start := time.Now()
	if _, err := h(context.Background(), push("overruns")); err == nil || !errors.Is(cause, worker.ErrDeadline) || time.Since(start) > time.Second {
		t.Fatalf("overrun: %v, cause %v after %s", err, cause, time.Since(start))
	}
}

// VerifySignature refuses a timestamp from the future beyond the
// tolerance, a timestamp changed after signing, one that is not a number,
// and a signature of the right length but wrong bytes.
func TestVerifySignatureRefusesTamperedOrFutureTimestamps(t *testing.T) {
	now := time.Date(2026, 1, 28, 9, 0, 0, 0, time.UTC)
	body := []byte(`{"task":{"id":"x"}}`)
	sign := func(ts string) *http.Request { return signed("k", ts, body) }
	future := sign(strconv.FormatInt(now.Add(6*time.Minute).Unix(), 10))
	moved := sign(strconv.FormatInt(now.Add(-10*time.Minute).Unix(), 10))
	moved.Header.Set("S3q-Signature", strings.Replace(moved.Header.Get("S3q-Signature"),
		"t="+strconv.FormatInt(now.Add(-10*time.Minute).Unix(), 10), "t="+strconv.FormatInt(now.Unix(), 10), 1))
	text := sign("soon")
	flipped := sign(strconv.FormatInt(now.Unix(), 10))
	sig := []byte(flipped.Header.Get("S3q-Signature"))
	sig[len(sig)-1] ^= 1
	flipped.Header.Set("S3q-Signature", string(sig))
	huge := sign("99999999999999999")
	for name, c := range map[string]struct {
		r    *http.Request
		want error
	}{
		"future": {future, pushsig.ErrBadTime}, "moved": {moved, pushsig.ErrSignature},
		"text": {text, pushsig.ErrBadTime}, "flipped": {flipped, pushsig.ErrSignature}, "huge": {huge, pushsig.ErrBadTime},
	} {
		if err := verify("k", c.r, body, now); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
}

// The signature binds the delivery to its target, its queue, its task and
// attempt and its method, not only to its body: a delivery captured at
// one target (say, a URL of the caller's own, declared with another
// queue's secret) and replayed to another target that holds the same
// secret is refused, as is one for another queue, one whose task id or
// attempt header was changed, and a GET.
func TestASignedDeliveryVerifiesOnlyAtItsTargetForItsQueueTaskAndAttempt(t *testing.T) {
	now := time.Date(2026, 1, 28, 9, 0, 0, 0, time.UTC)
	body := []byte(`{"task":{"id":"x"}}`)
	ts := strconv.FormatInt(now.Unix(), 10)
	good := func() *http.Request { return signed("k", ts, body) }
	if err := verify("k", good(), body, now); err != nil {
		t.Fatalf("the delivery at its own target: %v", err)
	}
	for name, c := range map[string]struct {
		target worker.PushTarget
		change func(r *http.Request)
		want   error
	}{
		"another_url":   {worker.PushTarget{Secret: "k", URL: "https://hooks.example.com/s3q/billing", Queue: targetQueue}, nil, pushsig.ErrSignature},
		"another_queue": {worker.PushTarget{Secret: "k", URL: targetURL, Queue: "billing"}, nil, pushsig.ErrQueue},
		"queue_header":  {worker.PushTarget{Secret: "k", URL: targetURL, Queue: "billing"}, func(r *http.Request) { r.Header.Set("S3q-Queue", "billing") }, pushsig.ErrSignature},
		"task_id":       {worker.PushTarget{Secret: "k", URL: targetURL, Queue: targetQueue}, func(r *http.Request) { r.Header.Set("S3q-Task-Id", "y") }, pushsig.ErrSignature},
		"attempt":       {worker.PushTarget{Secret: "k", URL: targetURL, Queue: targetQueue}, func(r *http.Request) { r.Header.Set("S3q-Attempt", "2") }, pushsig.ErrSignature},
		"method":        {worker.PushTarget{Secret: "k", URL: targetURL, Queue: targetQueue}, func(r *http.Request) { r.Method = http.MethodPut }, pushsig.ErrSignature},
		"no_target":     {worker.PushTarget{Secret: "k"}, nil, pushsig.ErrTarget},
		"old_header":    {worker.PushTarget{Secret: "k", URL: targetURL, Queue: targetQueue}, func(r *http.Request) { r.Header.Set("S3q-Signature", "deadbeef") }, pushsig.ErrMissing},
	} {
		r := good()
		if c.change != nil {
			c.change(r)
		}
		if _, err := worker.VerifySignature(c.target, r, body, now); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
	// While a secret is rotated the header may carry a v1 per secret.
	r := good()
	r.Header.Set("S3q-Signature", r.Header.Get("S3q-Signature")+",v1="+strings.Repeat("0", 64)+",v2=future")
	if err := verify("k", r, body, now); err != nil {
		t.Errorf("two v1 values and a v2: %v", err)
	}
}
