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

	"github.com/s3q/s3q/shared/client"
	"github.com/s3q/s3q/shared/pushsig"
	"github.com/s3q/s3q/shared/wire"
	"github.com/s3q/s3q/shared/worker"
)

// The target of the signature tests.
const (
	targetURL   = "https://hooks.example.com/s3q/orders"
	targetQueue = "orders"
)

// signed is a delivery of body to targetURL for targetQueue, task "x"
// attempt 1, signed with secret at ts (Unix seconds).
func signed(secret, ts string, body []byte) *http.Request {
	sec, _ := strconv.ParseInt(ts, 10, 64)
	r, _ := http.NewRequest(http.MethodPost, targetURL, nil)
	pushsig.Headers(r.Header, secret, pushsig.Delivery{Timestamp: sec, Method: http.MethodPost, URL: targetURL, Queue: targetQueue, TaskID: "x", Attempt: 1}, body)
	if sec == 0 {
		r.Header.Set(pushsig.HeaderSignature, strings.Replace(r.Header.Get(pushsig.HeaderSignature), "t=0,", "t="+ts+",", 1))
	}
	return r
}

// verify verifies r as the target (targetURL, targetQueue) with secret.
func verify(secret string, r *http.Request, body []byte, now time.Time) error {
	_, err := worker.VerifySignature(worker.PushTarget{Secret: secret, URL: targetURL, Queue: targetQueue}, r, body, now)
	return err
}

// pushOf is a delivery of a task of type tt with the given deadline.
func pushOf(tt string, deadline time.Time) worker.Push {
	return worker.Push{Task: client.Task{Task: wire.Task{ID: "id", TaskType: tt}}, Lease: client.Lease{TaskID: "id", Token: "tok"}, Deadline: deadline}
}

func TestVerifySignatureAcceptsOnlyTheSignedBodyWithinTheTolerance(t *testing.T) {
	now := time.Date(2026, 1, 28, 9, 0, 0, 0, time.UTC)
	body := []byte(`{"task":{"id":"x"}}`)
	h := signed("k", strconv.FormatInt(now.Unix(), 10), body)
	d, err := worker.VerifySignature(worker.PushTarget{Secret: "k", URL: targetURL, Queue: targetQueue}, h, body, now.Add(time.Minute))
	if err != nil || d.TaskID != "x" || d.Attempt != 1 || d.Queue != targetQueue {
		t.Errorf("a good delivery: %+v %v", d, err)
	}
	for name, c := range map[string]struct {
		secret string
		body   []byte
		now    time.Time
		want   error
	}{
		"another_secret":   {"other", body, now, pushsig.ErrSignature},
		"a_changed_body":   {"k", []byte(`{"task":{"id":"y"}}`), now, pushsig.ErrSignature},
		"a_replay_too_old": {"k", body, now.Add(6 * time.Minute), pushsig.ErrBadTime},
	} {
		if err := verify(c.secret, h, c.body, c.now); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
	bare, _ := http.NewRequest(http.MethodPost, targetURL, nil)
	if err := verify("k", bare, body, now); !errors.Is(err, pushsig.ErrMissing) {
		t.Errorf("no headers: %v", err)
	}
}

func TestLambdaHandlerRunsTheTypesHandlerUntilTheDeadline(t *testing.T) {
	deadline := time.Now().Add(time.Hour).Truncate(time.Second)
	h := worker.LambdaHandler(map[string]worker.Handler{
		"ok": func(ctx context.Context, task *worker.Task) (json.RawMessage, error) {
			if dl, ok := ctx.Deadline(); !ok || !dl.Equal(deadline) {
				t.Errorf("context deadline %v %v, want %v", dl, ok, deadline)
			}
			if task.Lease.Token != "tok" {
				t.Errorf("lease %+v", task.Lease)
			}
			return json.RawMessage(`{"done":true}`), nil
		},
		"bad": func(context.Context, *worker.Task) (json.RawMessage, error) {
			return nil, worker.Permanent(errors.New("no"))
		},
		"flaky": func(context.Context, *worker.Task) (json.RawMessage, error) { return nil, errors.New("later") },
	})
	push := func(tt string) worker.Push { return pushOf(tt, deadline) }
	if out, err := h(context.Background(), push("ok")); err != nil || string(out) != `{"done":true}` {
		t.Errorf("ok: %s %v", out, err)
	}
	var ie messages.InvokeResponse_Error
	if _, err := h(context.Background(), push("bad")); !errors.As(err, &ie) || ie.Type != worker.PermanentErrorType {
		t.Errorf("bad: %#v", err)
	}
	if _, err := h(context.Background(), push("flaky")); !errors.As(err, &ie) || ie.Type == worker.PermanentErrorType || ie.Message != "later" {
		t.Errorf("flaky: %#v", err)
	}
	if _, err := h(context.Background(), push("unknown")); !errors.As(err, &ie) || ie.Type != worker.PermanentErrorType {
		t.Errorf("unknown type: %#v", err)
	}
}
