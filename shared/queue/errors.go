package queue

import (
	"errors"
	"fmt"
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
	// ErrInvalidLeaseDuration means a lease_for that is negative or over MaxLease.
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
	// ErrLeaseEnded means a lease token's lease was already ended by
	// another operation, or by the same operation with another request:
	// what was asked did not happen, and it never will with that token
	// (unlike ErrConflict, retrying never succeeds). It comes as a
	// *ConflictError naming lease_token (409 conflict on the wire).
	ErrLeaseEnded = errors.New("queue: lease already ended")
	// ErrInvalidState is wrapped by every *StateError: the task's status
	// does not allow the operation.
	ErrInvalidState = errors.New("queue: invalid state")
	// ErrQueueNotFound means the queue is not declared (and the Queue does
	// not declare queues on submit; see queues.Options.RequireDeclared).
	ErrQueueNotFound = errors.New("queue: queue not found")
	// ErrQueueNotEmpty means a queue still holds live tasks and cannot be
	// deleted.
	ErrQueueNotEmpty = errors.New("queue: queue not empty")
	// ErrTooManyQueues means declaring one more queue would pass
	// queues.Options.MaxQueues.
	ErrTooManyQueues = errors.New("queue: too many queues")
	// ErrTooManyWaits means the queue holds as many waits as it may
	// (Queue.HoldWait): wait later, or do not wait.
	ErrTooManyWaits = errors.New("queue: too many waits")
)

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
