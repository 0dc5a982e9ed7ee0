package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"time"

	"github.com/aws/aws-lambda-go/lambda/messages"

	"github.com/s3q/s3q/shared/client"
	"github.com/s3q/s3q/shared/pushsig"
)

// PermanentErrorType is the errorType of the function error LambdaHandler
// returns for a Permanent error: the dispatcher fails the task without
// retry. It is pushsig.PermanentErrorType, the one definition the
// dispatcher shares. (Any function may say the same with "retryable":
// false in its error payload.)
const PermanentErrorType = pushsig.PermanentErrorType

// ErrDeadline is the cause of a pushed handler's context when the
// delivery's deadline passes.
var ErrDeadline = errors.New("worker: delivery deadline passed")

// Push is what a push target receives: the task, its lease and the
// deadline by which the target must answer (a little before the lease
// ends; the dispatcher stops waiting then and the lease lapses).
type Push struct {
	Task     client.Task  `json:"task"`
	Lease    client.Lease `json:"lease"`
	Deadline time.Time    `json:"deadline"`
}

// LambdaHandler turns the pull worker's task-type handlers into the
// handler of a Lambda push target (for lambda.Start): it runs the handler
// of the pushed task's type with a context that ends at the payload's
// deadline (or the invocation's, if earlier; context.Cause is
// ErrDeadline), and Task.Remaining / ShouldAbort, the DeadlineGuard, read
// the task's expires_at. No heartbeat is needed: the dispatcher holds the
// lease until the deadline. An invocation that starts after the deadline
// runs no handler (a retryable function error): the dispatcher has
// stopped waiting for it.
//
// The handler's output is the function's result, which completes the
// task (an output that is not JSON is sent as a JSON string). An error is a function error, which fails it: retried while
// attempts remain, unless it is Permanent (errorType PermanentErrorType)
// or there is no handler for the type. Reschedule is not available under
// push; it fails the attempt like a plain error.
//
// Each invocation records a span "s3q.run <task type>" with the global
// OpenTelemetry provider, as a Worker does (Options.TracerProvider),
// child of the task's trace context; a no-op unless the function's
// program sets a provider.
func LambdaHandler(handlers map[string]Handler) func(ctx context.Context, p Push) (json.RawMessage, error) {
	return func(ctx context.Context, p Push) (json.RawMessage, error) {
		h := handlers[p.Task.TaskType]
		if h == nil {
			return nil, functionError(Permanent(fmt.Errorf("no handler for task type %q", p.Task.TaskType)))
		}
		if !p.Deadline.IsZero() {
			if !time.Now().Before(p.Deadline) {
				// The dispatcher has stopped waiting: the lease lapses and
				// the next attempt is delivered. Running this one too would
				// run the task twice at once.
				return nil, functionError(ErrDeadline)
			}
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadlineCause(ctx, p.Deadline, ErrDeadline)
			defer cancel()
		}
		t := &Task{Task: p.Task, Lease: p.Lease, now: time.Now}
		ctx, span := startRun(ctx, tracerOf(nil), t, t.Queue, "")
		defer span.End()
		out, err := safeCall(ctx, h, t)
		if err != nil {
			endRun(span, outcomeFailed, err)
			return nil, functionError(err)
		}
		endRun(span, outcomeCompleted, nil)
		if len(out) == 0 {
			return json.RawMessage("null"), nil
		}
		if !json.Valid(out) {
			// As an HTTP target's plain-text answer: the text as a JSON
			// string. The runtime would fail to encode it, and each retry
			// would run the handler again.
			return json.Marshal(string(out))
		}
		return out, nil
	}
}

// functionError shapes a handler error as the Lambda runtime reports it,
// with PermanentErrorType for a Permanent one.
func functionError(err error) error {
	typ := PermanentErrorType
	if !IsPermanent(err) {
		t := reflect.TypeOf(err)
		if t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		typ = t.Name()
	}
	return messages.InvokeResponse_Error{Message: err.Error(), Type: typ}
}

// PushTarget is what an HTTPS push target knows of the deliveries meant
// for it.
type PushTarget struct {
	// Secret is the value of the SSM parameter that signs the queue's
	// deliveries (target.secret).
	Secret string
	// URL is the target URL exactly as the queue declares it
	// (target.url): a delivery sent to another URL is refused, whatever
	// URL the request arrived at behind a proxy.
	URL string
	// Queue is the queue whose deliveries this target takes: a delivery
	// for another queue is refused.
	Queue string
	// Tolerance is how far the delivery's timestamp may be from now
	// either way. Defaults to 5 minutes.
	Tolerance time.Duration
	// PreviousSecret, when set, is accepted too: the parameter's old value
	// while the secret is rotated (the dispatcher may sign with the old
	// value for up to 5 minutes after the parameter changes). Defaults to
	// none.
	PreviousSecret string
}

// VerifySignature checks an HTTPS push delivery: its S3q-Signature
// (t=…,v1=…, an HMAC-SHA256 under target.Secret) must cover the
// timestamp, r's method, target.URL, target.Queue, the task id and
// attempt of its headers and body (the request's exact bytes) (or be that
// under target.PreviousSecret), and the
// timestamp must be within target.Tolerance of now. An empty secret fails
// every delivery (pushsig.ErrNoSecret). Answer 401 when it fails. The
// delivery it returns names the task and attempt: treat (task id,
// attempt) as the idempotency key, since a delivery may arrive again
// within the window.
func VerifySignature(target PushTarget, r *http.Request, body []byte, now time.Time) (pushsig.Delivery, error) {
	return pushsig.Verify(target.Secret, pushsig.Expect{URL: target.URL, Queue: target.Queue, Tolerance: target.Tolerance, PreviousSecret: target.PreviousSecret}, r.Method, r.Header, body, now)
}
