package schedule

import (
	"errors"
	"fmt"
	"unicode"

	"github.com/s3q/s3q/shared/queue"
)

// Sentinels. Bad input is a *queue.ValidationError (it wraps
// queue.ErrInvalidInput, or queue.ErrTooLarge for an oversize input), the
// same type the queue returns, so an API maps both to 400 the same way.
var (
	// ErrNotFound means no schedule has the given id.
	ErrNotFound = errors.New("schedule: not found")
	// ErrExists means a create named an id that is already taken.
	ErrExists = errors.New("schedule: already exists")
	// ErrTooMany means a create would pass the most schedules its queue
	// may hold (Scheduler.Bounded; a queue's max_schedules).
	ErrTooMany = errors.New("schedule: too many schedules in the queue")
	// ErrConflict means an operation kept losing compare-and-swap races
	// within its retry budget. Retrying later is safe. It wraps
	// queue.ErrConflict, so code that maps the queue's conflict maps it too.
	ErrConflict = fmt.Errorf("schedule: conflict, retry: %w", queue.ErrConflict)
)

func invalid(field, format string, args ...any) error {
	return &queue.ValidationError{Field: field, Message: fmt.Sprintf(format, args...), Err: queue.ErrInvalidInput}
}

func tooLarge(field, format string, args ...any) error {
	return &queue.ValidationError{Field: field, Message: fmt.Sprintf(format, args...), Err: queue.ErrTooLarge}
}

func hasControl(s string) bool {
	for _, r := range s {
		if unicode.IsControl(r) {
			return true
		}
	}
	return false
}
