package s3store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/s3q/s3q/shared/store"
)

// sdkError builds the error the SDK returns for an HTTP answer with status
// and the decoded API error apiErr (nil for a response without a body).
func sdkError(status int, apiErr error) error {
	if apiErr == nil {
		apiErr = errors.New("http response without an error code")
	}
	return &smithy.OperationError{
		ServiceID:     "S3",
		OperationName: "PutObject",
		Err: &awshttp.ResponseError{
			RequestID: "req-1",
			ResponseError: &smithyhttp.ResponseError{
				Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status}},
				Err:      apiErr,
			},
		},
	}
}

func apiError(code string) error {
	return &smithy.GenericAPIError{Code: code, Message: code + " happened"}
}

func TestMapError(t *testing.T) {
	sendErr := &smithy.OperationError{ServiceID: "S3", OperationName: "GetObject",
		Err: &smithyhttp.RequestSendError{Err: &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}}}
	canceled := &smithy.OperationError{ServiceID: "S3", OperationName: "GetObject",
		Err: &aws.RequestCanceledError{Err: context.Canceled}}

	tests := []struct {
		name string
		err  error
		want error // a sentinel, or nil for none of them
	}{
		{"412 PreconditionFailed", sdkError(412, apiError("PreconditionFailed")), store.ErrPrecondition},
		{"412 without a code", sdkError(412, nil), store.ErrPrecondition},
		{"PreconditionFailed code on another status", sdkError(400, apiError("PreconditionFailed")), store.ErrPrecondition},
		{"404 NoSuchKey", sdkError(404, &types.NoSuchKey{}), store.ErrNotFound},
		{"404 NotFound from HEAD", sdkError(404, &types.NotFound{}), store.ErrNotFound},
		{"404 NoSuchVersion", sdkError(404, apiError("NoSuchVersion")), store.ErrNotFound},
		{"404 without a code", sdkError(404, nil), store.ErrNotFound},
		{"404 NoSuchBucket is a configuration error", sdkError(404, &types.NoSuchBucket{}), nil},
		{"503 SlowDown", sdkError(503, apiError("SlowDown")), store.ErrRetryable},
		{"503 without a code", sdkError(503, nil), store.ErrRetryable},
		{"400 Throttling", sdkError(400, apiError("Throttling")), store.ErrRetryable},
		{"400 RequestLimitExceeded", sdkError(400, apiError("RequestLimitExceeded")), store.ErrRetryable},
		{"429 without a code", sdkError(429, nil), store.ErrRetryable},
		{"409 ConditionalRequestConflict", sdkError(409, apiError("ConditionalRequestConflict")), store.ErrRetryable},
		{"409 OperationAborted", sdkError(409, apiError("OperationAborted")), store.ErrRetryable},
		{"409 ExistingObjectIsDirectory is not retryable", sdkError(409, apiError("ExistingObjectIsDirectory")), nil},
		{"500 InternalError", sdkError(500, apiError("InternalError")), store.ErrRetryable},
		{"502 without a code", sdkError(502, nil), store.ErrRetryable},
		{"400 RequestTimeout", sdkError(400, apiError("RequestTimeout")), store.ErrRetryable},
		{"SlowDown after the retries ran out", &retry.MaxAttemptsError{Attempt: 8, Err: sdkError(503, apiError("SlowDown"))}, store.ErrRetryable},
		{"403 AccessDenied", sdkError(403, apiError("AccessDenied")), nil},
		{"400 InvalidArgument", sdkError(400, apiError("InvalidArgument")), nil},
		{"connection refused", sendErr, store.ErrRetryable},
		{"body cut short", fmt.Errorf("read body: %w", io.ErrUnexpectedEOF), store.ErrRetryable},
		{"cancelled context", canceled, nil},
		{"deadline exceeded", fmt.Errorf("wait: %w", context.DeadlineExceeded), nil},
		{"anything else", errors.New("boom"), nil},
	}
	sentinels := []error{store.ErrNotFound, store.ErrPrecondition, store.ErrRetryable}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := mapError(tt.err)
			for _, s := range sentinels {
				if errors.Is(got, s) != (s == tt.want) {
					t.Errorf("mapError(%v) = %v; errors.Is(_, %v) = %v", tt.err, got, s, !(s == tt.want))
				}
			}
			// Unexpected errors keep the SDK error, for its message and for
			// errors.As; the two expected outcomes are bare sentinels.
			if tt.want != store.ErrNotFound && tt.want != store.ErrPrecondition && !errors.Is(got, tt.err) {
				t.Errorf("mapError(%v) = %v, which lost the original error", tt.err, got)
			}
		})
	}
	if mapError(nil) != nil {
		t.Errorf("mapError(nil) != nil")
	}
	if !errors.Is(mapError(canceled), context.Canceled) {
		t.Errorf("mapError of a cancelled request is not context.Canceled")
	}
}
