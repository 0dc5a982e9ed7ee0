package s3store

import (
	"math/rand/v2"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// retryPolicy is how hard a Store retries a failed request.
type retryPolicy struct {
	// MaxAttempts counts the first attempt.
	MaxAttempts int
	// BaseDelay is the longest wait before the first retry; each retry
	// doubles it, up to MaxDelay. The wait is drawn at random below it
	// ("full jitter").
	BaseDelay, MaxDelay time.Duration
	// AttemptTimeout bounds each attempt, from its send to the end of its
	// answer's body (attemptTimeout).
	AttemptTimeout time.Duration
}

// defaultRetryPolicy allows about ten seconds of throttling before a
// request fails with store.ErrRetryable.
// Each attempt has 30 seconds: well above any answer S3 gives (a LIST of
// 1,000 keys, a 6 MiB GET), well below Lambda's longest run.
var defaultRetryPolicy = retryPolicy{MaxAttempts: 8, BaseDelay: 100 * time.Millisecond, MaxDelay: 5 * time.Second, AttemptTimeout: 30 * time.Second}

// retryers returns the retryer of requests that may be repeated (reads,
// plain puts, deletes), which retries the SDK's retryable errors
// (throttling, 5xx, transport failures), and the retryer of conditional
// writes, which retries throttling only.
//
// A conditional write must not be repeated after a failure that may have
// applied it (a 500, a reset connection): the repeat would meet its own
// write and fail with 412, and ErrPrecondition promises that nothing was
// written. Throttling refuses a request before it runs, so it is safe. A
// 412 is retried by neither.
func (p retryPolicy) retryers() (idempotent, conditional aws.Retryer) {
	backoff := retry.BackoffDelayerFunc(func(attempt int, _ error) (time.Duration, error) {
		d := p.BaseDelay << min(max(attempt-1, 0), 30)
		if d <= 0 || d > p.MaxDelay {
			d = p.MaxDelay
		}
		return rand.N(d) + 1, nil
	})
	base := func(o *retry.StandardOptions) {
		o.MaxAttempts = p.MaxAttempts
		o.MaxBackoff = p.MaxDelay
		o.Backoff = backoff
		// The client-side retry quota would turn sustained throttling into
		// immediate failures; the backoff is the limit instead.
		o.RateLimiter = ratelimit.None
	}
	idempotent = retry.NewStandard(base)
	conditional = retry.NewStandard(base, func(o *retry.StandardOptions) {
		o.Retryables = []retry.IsErrorRetryable{
			retry.NoRetryCanceledError{},
			retry.RetryableErrorCode{Codes: retry.DefaultThrottleErrorCodes},
		}
	})
	return idempotent, conditional
}

// attemptTimeout is the per-request option that bounds each attempt of a
// request by d, from its send to the end of its answer's body, whatever
// the caller's context: the request goes through an HTTP client with that
// timeout. An attempt that takes longer fails as a transport failure,
// which the retryers treat as such (a read, plain put or delete is
// retried; a conditional write is not), and maps to store.ErrRetryable (a
// conditional write MAY have been applied): mapCallError. So a server
// that never answers cannot hold a caller whose context has no deadline.
func attemptTimeout(d time.Duration) func(*s3.Options) {
	client := awshttp.NewBuildableClient().WithTimeout(d)
	return func(o *s3.Options) { o.HTTPClient = client }
}
