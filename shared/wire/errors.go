package wire

import (
	"errors"
	"time"
)

// Lease errors. A lease operation (heartbeat, complete, fail, reschedule,
// cancel acknowledgement) returns one of these, wrapped, and changes
// nothing, when the lease it names is no longer the task's valid lease.
var (
	// ErrNotRunning means the task is not in status running.
	ErrNotRunning = errors.New("queue: task not running")
	// ErrLeaseMismatch means the token is not the task's current lease token.
	ErrLeaseMismatch = errors.New("queue: lease mismatch")
	// ErrLeaseExpired means the lease had expired at the given now.
	ErrLeaseExpired = errors.New("queue: lease expired")
	// ErrInvalidLeaseDuration means a lease_for that is negative or over the longest lease.
	ErrInvalidLeaseDuration = errors.New("queue: invalid lease duration")
)

// Other sentinels.
var (
	// ErrNotFound means no task has the given id.
	ErrNotFound = errors.New("queue: task not found")
	// ErrInvalidInput is wrapped by every *ValidationError about a bad field.
	ErrInvalidInput = errors.New("queue: invalid input")
	// ErrTooLarge is wrapped by a *ValidationError about an oversize field.
	ErrTooLarge = errors.New("queue: input too large")
	// ErrConflict means the operation lost a race it could not resolve by
	// re-reading within its retry budget, or met another writer half-way
	// (a dedup key claimed a moment ago). Retrying later is safe.
	ErrConflict = errors.New("queue: conflict, retry")
	// ErrInvalidState is wrapped by every *StateError: the task's status
	// does not allow the operation.
	ErrInvalidState = errors.New("queue: invalid state")
	// ErrQueueNotFound means the queue is not declared (and the Queue does
	// not declare queues on submit; see queues.Options.RequireDeclared in the server).
	ErrQueueNotFound = errors.New("queue: queue not found")
	// ErrQueueNotEmpty means a queue still holds live tasks and cannot be
	// deleted.
	ErrQueueNotEmpty = errors.New("queue: queue not empty")
	// ErrTooManyQueues means declaring one more queue would pass
	// queues.Options.MaxQueues.
	ErrTooManyQueues = errors.New("queue: too many queues")
	// ErrLeaseEnded means a lease token's lease was already ended by
	// another operation, or by the same operation with another request:
	// what was asked did not happen, and it never will with that token
	// (unlike ErrConflict, retrying never succeeds). On the wire it is a
	// 409 conflict naming lease_token.
	ErrLeaseEnded = errors.New("queue: lease already ended")
	// ErrTooManyWaits means the queue holds as many waits as it may: wait
	// later, or do not wait (429 too_many_waits on the wire).
	ErrTooManyWaits = errors.New("queue: too many waits")
)

// HeaderRetryAfterMs is the header of a claim held back by its queue's
// rate limit (a 204) that gives the wait in milliseconds, beside
// Retry-After's whole seconds (rounded up).
const HeaderRetryAfterMs = "S3q-Retry-After-Ms"

// ErrRateLimited means a claim started nothing because the queue's rate
// limit (max_per_second) held it back: claim again after the
// *RateLimitedError's RetryAfter (on the wire a 204 with Retry-After).
var ErrRateLimited = errors.New("queue: rate limited")

// RateLimitedError is a claim held back by its queue's rate limit. It
// wraps ErrRateLimited.
type RateLimitedError struct {
	// Queue is the queue whose limit held the claim back.
	Queue string
	// RetryAfter is how long until the limit lets the next task start.
	RetryAfter time.Duration
}

func (e *RateLimitedError) Error() string {
	return "queue " + e.Queue + ": rate limited, retry after " + e.RetryAfter.String()
}

// Unwrap returns ErrRateLimited.
func (e *RateLimitedError) Unwrap() error { return ErrRateLimited }
