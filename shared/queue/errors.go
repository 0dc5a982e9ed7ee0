package queue

import (
	"fmt"

	"github.com/s3q/s3q/shared/wire"
)

// The sentinels are the API's error words, declared in package wire so
// that the Go client's errors match them too (errors.Is(err,
// queue.ErrNotFound) holds for an API answer as for a core call). See
// wire for each one's meaning.
var (
	ErrNotRunning           = wire.ErrNotRunning
	ErrLeaseMismatch        = wire.ErrLeaseMismatch
	ErrLeaseExpired         = wire.ErrLeaseExpired
	ErrInvalidLeaseDuration = wire.ErrInvalidLeaseDuration
	ErrNotFound             = wire.ErrNotFound
	ErrInvalidInput         = wire.ErrInvalidInput
	ErrTooLarge             = wire.ErrTooLarge
	ErrConflict             = wire.ErrConflict
	ErrInvalidState         = wire.ErrInvalidState
	ErrQueueNotFound        = wire.ErrQueueNotFound
	ErrQueueNotEmpty        = wire.ErrQueueNotEmpty
	ErrTooManyQueues        = wire.ErrTooManyQueues
	ErrLeaseEnded           = wire.ErrLeaseEnded
	ErrTooManyWaits         = wire.ErrTooManyWaits
	ErrRateLimited          = wire.ErrRateLimited
)

// RateLimitedError is a claim held back by its queue's rate limit
// (ratelimit.go). It wraps ErrRateLimited.
type RateLimitedError = wire.RateLimitedError

// ConflictError reports a request that conflicts with what is stored
// under a name it gives, such as a submit whose id names a task made by a
// different request. Retrying the same request will not help. It wraps
// ErrConflict, or Err (ErrLeaseEnded).
type ConflictError struct {
	Field   string // the request field, in its JSON spelling (e.g. "id")
	Message string // what conflicts, for a person
	// Err is what it wraps: ErrLeaseEnded for a lease token whose lease
	// already ended; nil for ErrConflict.
	Err error
}

func (e *ConflictError) Error() string { return fmt.Sprintf("conflicting %s: %s", e.Field, e.Message) }

// Unwrap returns Err, or ErrConflict when it is nil.
func (e *ConflictError) Unwrap() error {
	if e.Err != nil {
		return e.Err
	}
	return ErrConflict
}

// ValidationError reports one bad field of a request. Nothing was written.
// It wraps ErrInvalidInput, or ErrTooLarge for a size limit.
type ValidationError struct {
	Field   string // the request field, in its JSON spelling (e.g. "ttl")
	Message string // what is wrong, for a person
	Err     error  // ErrInvalidInput or ErrTooLarge
}

func (e *ValidationError) Error() string {
	if e.Field == "" {
		return "invalid input: " + e.Message
	}
	return fmt.Sprintf("invalid %s: %s", e.Field, e.Message)
}

// Unwrap returns ErrInvalidInput or ErrTooLarge.
func (e *ValidationError) Unwrap() error {
	if e.Err == nil {
		return ErrInvalidInput
	}
	return e.Err
}

func invalid(field, format string, args ...any) error {
	return &ValidationError{Field: field, Message: fmt.Sprintf(format, args...), Err: ErrInvalidInput}
}

// StateError reports an operation the task's status does not allow, such
// as cancelling a completed task or retrying an expired one. Nothing was
// written.
type StateError struct {
	ID     string
	Op     string // "cancel", "retry", "expire", ...
	Status Status // the status the task was in
	Reason string // optional detail
}

func (e *StateError) Error() string {
	msg := fmt.Sprintf("cannot %s task %s in status %s", e.Op, e.ID, e.Status)
	if e.Reason != "" {
		msg += ": " + e.Reason
	}
	return msg
}

// Unwrap returns ErrInvalidState.
func (e *StateError) Unwrap() error { return ErrInvalidState }
