package s3store

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/s3q/s3q/shared/store"
)

// mapError translates an error from the SDK (or from reading a response
// body) into the store's error contract. It is the only place that looks
// inside SDK errors:
//
//   - 412, or the code PreconditionFailed, is store.ErrPrecondition;
//   - NoSuchKey, NotFound, NoSuchVersion, or a 404 without a code, is
//     store.ErrNotFound (NoSuchBucket is a configuration error and is not);
//   - throttling (503, 429, SlowDown and the SDK's throttle codes), a 409
//     ConditionalRequestConflict, any other 5xx, RequestTimeout and transport
//     failures are store.Retryable;
//   - a cancelled or expired context, and anything else, is returned as is.
//
// ErrPrecondition and ErrNotFound are expected outcomes and come back as
// the bare sentinels; the others keep the SDK error in their chain.
func mapError(err error) error {
	if err == nil {
		return nil
	}
	code, status := "", 0
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		code = apiErr.ErrorCode()
	}
	var respErr *awshttp.ResponseError
	if errors.As(err, &respErr) {
		status = respErr.HTTPStatusCode()
	}

	switch {
	case code == "PreconditionFailed" || status == http.StatusPreconditionFailed:
		return store.ErrPrecondition
	case notFoundCodes[code] || (status == http.StatusNotFound && code == ""):
		return store.ErrNotFound
	case retryableCodes[code],
		status == http.StatusTooManyRequests,
		status == http.StatusConflict && (code == "" || code == "ConditionalRequestConflict"),
		status >= 500:
		return store.Retryable(err)
	case status != 0 || code != "":
		// The server answered and refused: a bug or a configuration problem.
		return err
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	case isTransport(err):
		return store.Retryable(err)
	}
	return err
}

// notFoundCodes are the error codes of a missing key or version.
var notFoundCodes = map[string]bool{
	"NoSuchKey":     true,
	"NotFound":      true,
	"NoSuchVersion": true,
}

// retryableCodes are the error codes of a request that may succeed if
// repeated: throttling, a conflicting concurrent conditional write, and
// server-side timeouts and faults.
var retryableCodes = map[string]bool{
	"SlowDown":                   true,
	"Throttling":                 true,
	"ThrottlingException":        true,
	"ThrottledException":         true,
	"RequestThrottled":           true,
	"RequestThrottledException":  true,
	"TooManyRequestsException":   true,
	"RequestLimitExceeded":       true,
	"BandwidthLimitExceeded":     true,
	"ServiceUnavailable":         true,
	"ConditionalRequestConflict": true,
	"OperationAborted":           true,
	"RequestTimeout":             true,
	"InternalError":              true,
}

// isTransport reports whether err is a failure to send a request or to read
// its response, rather than an answer from the server.
// mapCallError is mapError for a request made under ctx: a transport
// failure that ended in a deadline or a cancellation while ctx is still
// live is the store's own bound on an attempt (attemptTimeout), not the
// caller's: store.Retryable.
func mapCallError(ctx context.Context, err error) error {
	if err != nil && ctx.Err() == nil && isTransport(err) &&
		(errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)) {
		return store.Retryable(err)
	}
	return mapError(err)
}

func isTransport(err error) bool {
	var sendErr *smithyhttp.RequestSendError
	var netErr net.Error
	return errors.As(err, &sendErr) ||
		errors.As(err, &netErr) ||
		errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, io.EOF)
}
