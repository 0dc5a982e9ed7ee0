// Package check holds the assertions and literals the conformance suites
// (queuetest, scheduletest) and the core's own tests share, written once.
package check

import (
	"errors"
	"testing"

	"github.com/s3q/s3q/shared/queue"
)

// Err fails t unless errors.Is(err, want).
func Err(t testing.TB, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("err = %v, want %v", err, want)
	}
}

// Field fails t unless err is a *queue.ValidationError on field, wrapping
// queue.ErrInvalidInput or queue.ErrTooLarge.
func Field(t testing.TB, err error, field string) {
	t.Helper()
	var ve *queue.ValidationError
	if !errors.As(err, &ve) || !errors.Is(err, queue.ErrInvalidInput) && !errors.Is(err, queue.ErrTooLarge) {
		t.Fatalf("err = %v, want a *queue.ValidationError on %q", err, field)
	}
	if ve.Field != field {
		t.Fatalf("validation error on field %q (%v), want field %q", ve.Field, err, field)
	}
}

// Dur parses a duration literal ("90s", "7d") of a test and panics on a
// bad one.
func Dur(s string) *queue.Duration {
	d, err := queue.ParseDuration(s)
	if err != nil {
		panic(err)
	}
	v := queue.Duration(d)
	return &v
}
