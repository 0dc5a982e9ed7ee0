package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/schedule"
	"github.com/s3q/s3q/shared/store"
)

// Error codes, the "code" of an error body. Each goes with one HTTP status.
const (
	CodeInvalidInput         = "invalid_input"          // 400: a bad field, bad JSON, an unknown field or query parameter
	CodeInvalidLeaseDuration = "invalid_lease_duration" // 400: lease_for negative or over 12h
	CodeNotFound             = "not_found"              // 404: no such task, or no such route
	CodeQueueNotFound        = "queue_not_found"        // 404: the queue is not declared
	CodeMethodNotAllowed     = "method_not_allowed"     // 405: the path is served, not with this method
	CodeNotRunning           = "not_running"            // 409: a lease operation on a task that is not running
	CodeLeaseMismatch        = "lease_mismatch"         // 409: a lease token that is not the task's
	CodeLeaseExpired         = "lease_expired"          // 409: a lease that has expired
	CodeInvalidState         = "invalid_state"          // 409: the task's status does not allow the operation
	CodeConflict             = "conflict"               // 409: lost a race too often (retrying later is safe), or an id another request made (field id)
	CodeAlreadyExists        = "already_exists"         // 409: a schedule with that id exists
	CodeQueueNotEmpty        = "queue_not_empty"        // 409: a queue to delete still holds live tasks
	CodeTooManyQueues        = "too_many_queues"        // 409: declaring the queue would pass max_queues
	CodeTooLarge             = "too_large"              // 413: a body, input, output or batch over its limit
	CodeInternal             = "internal"               // 500: a bug or a configuration problem, never bad input
	CodeThrottled            = "throttled"              // 503: S3 throttled or failed transiently; see Retry-After
	CodeDeadlineExceeded     = "deadline_exceeded"      // 504: the task's deadline passed while waiting, or the request ran out of time
)

// codeStatus is the HTTP status of each error code: apiError sets it,
// the OpenAPI document lists it.
var codeStatus = map[string]int{
	CodeInvalidInput:         http.StatusBadRequest,
	CodeInvalidLeaseDuration: http.StatusBadRequest,
	CodeNotFound:             http.StatusNotFound,
	CodeQueueNotFound:        http.StatusNotFound,
	CodeMethodNotAllowed:     http.StatusMethodNotAllowed,
	CodeNotRunning:           http.StatusConflict,
	CodeLeaseMismatch:        http.StatusConflict,
	CodeLeaseExpired:         http.StatusConflict,
	CodeInvalidState:         http.StatusConflict,
	CodeConflict:             http.StatusConflict,
	CodeAlreadyExists:        http.StatusConflict,
	CodeQueueNotEmpty:        http.StatusConflict,
	CodeTooManyQueues:        http.StatusConflict,
	CodeTooLarge:             http.StatusRequestEntityTooLarge,
	CodeInternal:             http.StatusInternalServerError,
	CodeThrottled:            http.StatusServiceUnavailable,
	CodeDeadlineExceeded:     http.StatusGatewayTimeout,
}

// apiError is the error response of code, with the status codeStatus
// gives it.
func apiError(code, field, message string) *Error {
	return &Error{Status: codeStatus[code], Code: code, Field: field, Message: message}
}

// retryAfterSeconds is the Retry-After of a 503.
const retryAfterSeconds = "2"

// Error is an error response: the HTTP status and the body
// {"error": {"code", "message", "field"}}.
type Error struct {
	Status  int    `json:"-"`
	Code    string `json:"code"`
	Message string `json:"message"`
	// Field names the request field at fault, in its JSON spelling, when
	// one is.
	Field string `json:"field,omitempty"`

	allow string // the Allow header of a 405
}

// Error returns the status, code, field and message in one line.
func (e *Error) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("%d %s (%s): %s", e.Status, e.Code, e.Field, e.Message)
	}
	return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message)
}

// errorBody is the JSON of an error response. Task is set by a sync wait
// whose task passed its deadline (504), so the caller sees where it ended.
type errorBody struct {
	Error *Error    `json:"error"`
	Task  *taskView `json:"task,omitempty"`
}

func badInput(field, format string, args ...any) *Error {
	return apiError(CodeInvalidInput, field, fmt.Sprintf(format, args...))
}

func tooLarge(field, format string, args ...any) *Error {
	return apiError(CodeTooLarge, field, fmt.Sprintf(format, args...))
}

func notFound(format string, args ...any) *Error {
	return apiError(CodeNotFound, "", fmt.Sprintf(format, args...))
}

// toError maps an error from the core, the store or this package to the
// error response it gets. Anything it does not recognise is a 500: bad
// input never gets there, because every validation failure of the core is
// a *queue.ValidationError.
func toError(err error) *Error {
	var (
		e  *Error
		ve *queue.ValidationError
		se *queue.StateError
		ce *queue.ConflictError
	)
	switch {
	case errors.As(err, &e):
		return e
	case errors.As(err, &ve):
		if errors.Is(err, queue.ErrTooLarge) {
			return apiError(CodeTooLarge, ve.Field, ve.Error())
		}
		return apiError(CodeInvalidInput, ve.Field, ve.Error())
	case errors.Is(err, queue.ErrInvalidLeaseDuration):
		return apiError(CodeInvalidLeaseDuration, "lease_for",
			"lease_for must be more than 0 and at most "+queue.FormatDuration(queue.MaxLease)+" (0 or absent means the task's timeout)")
	case errors.Is(err, queue.ErrQueueNotFound):
		return apiError(CodeQueueNotFound, "queue", err.Error()+": declare it with PUT /queues/{queue}")
	case errors.Is(err, queue.ErrQueueNotEmpty):
		return apiError(CodeQueueNotEmpty, "", err.Error())
	case errors.Is(err, queue.ErrTooManyQueues):
		return apiError(CodeTooManyQueues, "", err.Error()+" (max_queues)")
	case errors.Is(err, queue.ErrNotFound), errors.Is(err, schedule.ErrNotFound):
		return apiError(CodeNotFound, "", err.Error())
	case errors.Is(err, schedule.ErrExists):
		return apiError(CodeAlreadyExists, "id", err.Error())
	case errors.Is(err, queue.ErrNotRunning):
		return apiError(CodeNotRunning, "", err.Error())
	case errors.Is(err, queue.ErrLeaseMismatch):
		return apiError(CodeLeaseMismatch, "", err.Error())
	case errors.Is(err, queue.ErrLeaseExpired):
		return apiError(CodeLeaseExpired, "", err.Error())
	case errors.As(err, &se):
		return apiError(CodeInvalidState, "", se.Error())
	case errors.As(err, &ce):
		return apiError(CodeConflict, ce.Field, ce.Error())
	case errors.Is(err, queue.ErrConflict):
		return apiError(CodeConflict, "", err.Error())
	case errors.Is(err, store.ErrPrecondition):
		// A compare-and-swap the core could not resolve: someone else
		// wrote first. Never a bug, so never a 500.
		return apiError(CodeConflict, "", "another writer changed the same object first; retrying is safe")
	case errors.Is(err, store.ErrRetryable):
		return apiError(CodeThrottled, "", "the store is busy or briefly unavailable; retry after a moment")
	case errors.Is(err, context.DeadlineExceeded):
		return apiError(CodeDeadlineExceeded, "", "the request ran out of time")
	case errors.Is(err, context.Canceled):
		// The caller went away; nobody reads this answer.
		return apiError(CodeThrottled, "", "the request was cancelled")
	}
	return apiError(CodeInternal, "", "internal error")
}
