package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/s3q/s3q/shared/pushsig"
	"github.com/s3q/s3q/shared/queues"
)

// PermanentErrorType is the errorType of a Lambda function error that
// must not be retried: pushsig.PermanentErrorType, the one definition the
// worker shares.
const PermanentErrorType = pushsig.PermanentErrorType

// LambdaInvoker is the part of the Lambda client dispatch uses:
// *lambda.Client implements it.
type LambdaInvoker interface {
	Invoke(ctx context.Context, in *lambda.InvokeInput, opts ...func(*lambda.Options)) (*lambda.InvokeOutput, error)
}

var _ LambdaInvoker = (*lambda.Client)(nil)

// Lambda delivers to Lambda targets with a synchronous Invoke of the
// payload. The function's result completes the task; a function error
// (FunctionError set) fails it, retryably unless its payload says
// "retryable": false or its errorType is PermanentErrorType; a time-out
// of the invocation lets the lease lapse; an error of the Invoke call
// itself (throttled, not found, denied, a broken connection, a 5xx) is a
// retryable failure, retried after the throttle's Retry-After when Lambda
// gives one. The SDK never sends an Invoke twice: one attempt is one
// Invoke.
type Lambda struct {
	Client LambdaInvoker
}

var _ Deliverer = (*Lambda)(nil)

// Deliver invokes the target function with one delivery.
func (l *Lambda) Deliver(ctx context.Context, target queues.Target, d Delivery) Result {
	out, err := l.Client.Invoke(ctx, &lambda.InvokeInput{
		FunctionName:   aws.String(target.Lambda),
		InvocationType: types.InvocationTypeRequestResponse,
		Payload:        d.Body,
	}, noRetry)
	if err != nil {
		if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) {
			return Result{Outcome: Lapse}
		}
		res := Result{Outcome: Fail, Error: "invoke " + target.Lambda + ": " + err.Error(), Retryable: true}
		var throttled *types.TooManyRequestsException
		if errors.As(err, &throttled) {
			// Lambda's own Retry-After: the function is at its concurrency.
			res.RetryAfter = parseRetryAfter(aws.ToString(throttled.RetryAfterSeconds), d.Now)
		}
		return res
	}
	return decideLambda(out.StatusCode, aws.ToString(out.FunctionError), out.Payload)
}

// noRetry turns off the SDK's retries of a delivery's Invoke: a
// connection that breaks, or a 5xx, after the request reached Lambda may
// have run the function, and sending it again would deliver the same
// attempt twice. The failure is retried as the next attempt instead.
func noRetry(o *lambda.Options) { o.Retryer = aws.NopRetryer{} }

// FunctionError is the payload of a Lambda function error.
type FunctionError struct {
	Message   string `json:"errorMessage"`
	Type      string `json:"errorType"`
	Retryable *bool  `json:"retryable,omitempty"`
}

// decideLambda maps an Invoke answer to a Result (see Lambda).
func decideLambda(status int32, functionError string, payload []byte) Result {
	if functionError == "" {
		return Result{Outcome: Complete, Output: payload, Status: int(status)}
	}
	var fe FunctionError
	_ = json.Unmarshal(payload, &fe)
	retryable := fe.Type != PermanentErrorType && (fe.Retryable == nil || *fe.Retryable)
	msg := fe.Message
	if msg == "" {
		msg = snippet(payload)
	}
	if fe.Type != "" {
		msg = fmt.Sprintf("%s: %s", fe.Type, msg)
	}
	return Result{Outcome: Fail, Error: "function error (" + functionError + "): " + msg, Retryable: retryable, Status: int(status)}
}
