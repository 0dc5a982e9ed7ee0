package store

import (
	"errors"
	"fmt"
)

var (
	// ErrNotFound means the key (or version) does not exist.
	ErrNotFound = errors.New("store: not found")

	// ErrPrecondition means a conditional write lost: the key existed for
	// PutIfAbsent, or its ETag differed (or it was missing) for PutIfMatch.
	// Nothing was written. Someone else won; re-read and decide again.
	ErrPrecondition = errors.New("store: precondition failed")

	// ErrRetryable means the request failed in a way that may succeed if
	// repeated after a re-read: throttling (503 SlowDown), a 409
	// ConditionalRequestConflict, a 5xx, or a transport error. A write that
	// returns it may or may not have been applied.
	ErrRetryable = errors.New("store: retryable")
)

// Retryable wraps err so that errors.Is(err, ErrRetryable) holds, keeping
// the original error in the message and in the chain.
func Retryable(err error) error {
	if err == nil || errors.Is(err, ErrRetryable) {
		return err
	}
	return &retryableError{err: err}
}

type retryableError struct{ err error }

func (e *retryableError) Error() string { return fmt.Sprintf("%v (retryable)", e.err) }

func (e *retryableError) Unwrap() []error { return []error{ErrRetryable, e.err} }
