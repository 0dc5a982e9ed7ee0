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
// retry. (Any function may say the same with "retryable": false in its
// error payload.)
const PermanentErrorType = "s3q.Permanent"

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
		out, err := safeCall(ctx, h, t)
		if err != nil {
			return nil, functionError(err)
		}
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

// VerifySignature checks an HTTPS push delivery (an empty secret fails
// every one, pushsig.ErrNoSecret): header is the request's
// header (S3q-Signature, S3q-Timestamp), body its exact bytes, secret the
// value of the target's SSM parameter. The signature is the hex
// HMAC-SHA256 of timestamp + "." + body; the timestamp must be within
// tolerance of now (<= 0 means 5 minutes). Answer 401 when it fails.
func VerifySignature(secret string, header http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	return pushsig.Verify(secret, header, body, now, tolerance)
}
