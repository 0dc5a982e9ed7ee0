package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"

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
	CodeTooManySchedules     = "too_many_schedules"     // 409: creating the schedule would pass its queue's max_schedules
	CodeTooManyWaits         = "too_many_waits"         // 429: the queue holds as many waits as it may (WaitsPerQueue); see Retry-After
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
	CodeTooManyWaits:         http.StatusTooManyRequests,
	CodeTooManySchedules:     http.StatusConflict,
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

// badInput is a 400 about field; its message is made one sentence
// naming the field (see fieldSentence): badInput("limit", "must be at
// least 1") says "limit must be at least 1".
func badInput(field, format string, args ...any) *Error {
	return apiError(CodeInvalidInput, field, fieldSentence(field, fmt.Sprintf(format, args...)))
}

// tooLarge is a 413 about field, worded as badInput's.
func tooLarge(field, format string, args ...any) *Error {
	return apiError(CodeTooLarge, field, fieldSentence(field, fmt.Sprintf(format, args...)))
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
		msg := fieldSentence(ve.Field, ve.Message)
		if errors.Is(err, queue.ErrTooLarge) {
			return apiError(CodeTooLarge, ve.Field, msg)
		}
		return apiError(CodeInvalidInput, ve.Field, msg)
	case errors.Is(err, queue.ErrInvalidLeaseDuration):
		return apiError(CodeInvalidLeaseDuration, "lease_for",
			"lease_for must be more than 0 and at most "+queue.FormatDuration(queue.MaxLease)+" (0 or absent means the task's timeout)")
	case errors.Is(err, queue.ErrQueueNotFound):
		return apiError(CodeQueueNotFound, "queue", subject(err)+" is not declared (declare it with PUT /queues/{queue})")
	case errors.Is(err, queue.ErrQueueNotEmpty):
		return apiError(CodeQueueNotEmpty, "", queueNotEmptyMessage(subject(err)))
	case errors.Is(err, queue.ErrTooManyQueues):
		return apiError(CodeTooManyQueues, "", tooManyQueuesMessage(subject(err)))
	case errors.Is(err, queue.ErrNotFound), errors.Is(err, schedule.ErrNotFound):
		return apiError(CodeNotFound, "", notFoundMessage(subject(err)))
	case errors.Is(err, queue.ErrTooManyWaits):
		return apiError(CodeTooManyWaits, "wait", subject(err)+": retry later, or call without wait")
	case errors.Is(err, schedule.ErrTooMany):
		return apiError(CodeTooManySchedules, "", subject(err)+" (max_schedules of PUT /queues/{queue}); delete one, or raise it")
	case errors.Is(err, schedule.ErrExists):
		return apiError(CodeAlreadyExists, "id", subject(err)+" already exists")
	case errors.Is(err, queue.ErrNotRunning):
		return apiError(CodeNotRunning, "", subject(err)+", not running")
	case errors.Is(err, queue.ErrLeaseMismatch):
		return apiError(CodeLeaseMismatch, "", "the lease token is not the current lease of "+subject(err))
	case errors.Is(err, queue.ErrLeaseExpired):
		return apiError(CodeLeaseExpired, "", leaseExpiredMessage(subject(err)))
	case errors.As(err, &se):
		return apiError(CodeInvalidState, "", se.Error())
	case errors.As(err, &ce):
		return apiError(CodeConflict, ce.Field, ce.Message)
	case errors.Is(err, queue.ErrConflict):
		return apiError(CodeConflict, "", subject(err)+" met a concurrent change it could not settle; retrying is safe")
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

// subject is what the core said about err before the sentinel it wraps:
// "task X" of "task X: queue: task not found". The sentinels' own words
// (prefixed by their package, "queue: ", "schedule: ") are left out, so a
// message built on it names the thing once, without the chain.
func subject(err error) string {
	msg := err.Error()
	if isSentinelText(msg) {
		return "" // the bare sentinel: nothing but its own words
	}
	for e := err; e != nil; e = errors.Unwrap(e) {
		text := e.Error()
		if e != err && isSentinelText(text) {
			return strings.TrimSuffix(strings.TrimSuffix(msg, text), ": ")
		}
	}
	return msg
}

// isSentinelText reports whether text is the message of a package's
// sentinel error: "queue: task not found", "schedule: not found".
func isSentinelText(text string) bool {
	for _, p := range []string{"queue: ", "schedule: ", "artifacts: ", "store: "} {
		if strings.HasPrefix(text, p) {
			return true
		}
	}
	return false
}

var (
	reTaskInQueue    = regexp.MustCompile(`^task (\S+) in queue (\S+)$`)
	reScheduleRef    = regexp.MustCompile(`^schedule ([^/\s]+)/(\S+)$`)
	reLeaseExpiredAt = regexp.MustCompile(`^task (\S+) lease expired at (\S+)$`)
	reNotEmpty       = regexp.MustCompile(`^queue (\S+): (.+)$`)
	reTooMany        = regexp.MustCompile(`^declare queue (\S+): (\d+) queues exist$`)
)

// notFoundMessage is the message of a 404 whose context (see subject) is
// what, "task X", "task X in queue Q" or "schedule Q/ID": "task X not found
// in queue Q".
func notFoundMessage(what string) string {
	if m := reTaskInQueue.FindStringSubmatch(what); m != nil {
		return "task " + m[1] + " not found in queue " + m[2]
	}
	if m := reScheduleRef.FindStringSubmatch(what); m != nil {
		return "schedule " + m[2] + " not found in queue " + m[1]
	}
	if head, detail, ok := strings.Cut(what, ": "); ok {
		return head + " not found (" + detail + ")"
	}
	if what == "" {
		return "not found"
	}
	return what + " not found"
}

func leaseExpiredMessage(what string) string {
	if m := reLeaseExpiredAt.FindStringSubmatch(what); m != nil {
		return "the lease of task " + m[1] + " expired at " + m[2]
	}
	return what
}

func queueNotEmptyMessage(what string) string {
	if m := reNotEmpty.FindStringSubmatch(what); m != nil {
		return "queue " + m[1] + " still holds live tasks (" + m[2] + ")"
	}
	return what
}

func tooManyQueuesMessage(what string) string {
	if m := reTooMany.FindStringSubmatch(what); m != nil {
		return "queue " + m[1] + " cannot be declared: " + m[2] + " queues exist, the most max_queues allows"
	}
	return what + " (max_queues)"
}

// fieldSentence makes the message of a bad field one sentence that names
// the field once: "must not be negative" of ttl is "ttl must not be
// negative"; one that starts with the value it refuses is prefixed with
// the field unless it names the field itself (`"a.b" is not a queue
// name` of queue stays as it is).
func fieldSentence(field, msg string) string {
	if field == "" || strings.HasPrefix(msg, field+" ") {
		return msg
	}
	if strings.HasPrefix(msg, `"`) && !regexp.MustCompile(`\b`+regexp.QuoteMeta(field)+`\b`).MatchString(msg) {
		return field + " " + msg // `"nope" is not one of ...` of status
	}
	for _, verb := range []string{"is ", "must ", "may ", "has ", "cannot ", "contains ", "needs ", "takes ", "was ", "are "} {
		if strings.HasPrefix(msg, verb) {
			return field + " " + msg
		}
	}
	return msg
}
