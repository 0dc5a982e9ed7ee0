package client

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/s3q/s3q/shared/queue"
)

// Error is an error answer of the API: {"error":{"code","message","field"}}.
// errors.Is matches it against the queue's sentinels by its code, so a
// worker can test errors.Is(err, queue.ErrLeaseExpired) whether it talks
// to the core in-process or through the API.
type Error struct {
	Status     int    // HTTP status
	Code       string // e.g. "invalid_input", "lease_expired"
	Message    string
	Field      string        // the request field at fault, when known
	RetryAfter time.Duration // from Retry-After on a 503
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("s3q: %d %s: %s", e.Status, e.Code, e.Message)
	if e.Field != "" {
		msg += " (field " + e.Field + ")"
	}
	return msg
}

// Is maps API error codes to the queue's sentinel errors.
func (e *Error) Is(target error) bool {
	switch target {
	case queue.ErrNotFound:
		return e.Code == "not_found"
	case queue.ErrNotRunning:
		return e.Code == "not_running"
	case queue.ErrLeaseMismatch:
		return e.Code == "lease_mismatch"
	case queue.ErrLeaseExpired:
		return e.Code == "lease_expired"
	case queue.ErrInvalidLeaseDuration:
		return e.Code == "invalid_lease_duration"
	case queue.ErrInvalidInput:
		return e.Code == "invalid_input"
	case queue.ErrTooLarge:
		return e.Code == "too_large"
	case queue.ErrLeaseEnded:
		return e.Code == "conflict" && e.Field == "lease_token"
	case queue.ErrConflict:
		return e.Code == "conflict" && e.Field != "lease_token"
	case queue.ErrInvalidState:
		return e.Code == "invalid_state"
	case queue.ErrQueueNotFound:
		return e.Code == "queue_not_found"
	case queue.ErrQueueNotEmpty:
		return e.Code == "queue_not_empty"
	case queue.ErrTooManyQueues:
		return e.Code == "too_many_queues"
	}
	return false
}

// Temporary reports whether repeating the request later may succeed
// (throttling, a lost race, a server error). A conflict naming a field
// never does: lease_token (the lease already ended, or the token was
// used for another request) or id (an id another request made).
func (e *Error) Temporary() bool {
	if e.Code == "conflict" {
		return e.Field == ""
	}
	return e.Status == http.StatusServiceUnavailable || e.Status == http.StatusTooManyRequests ||
		e.Status >= 500 && e.Status != http.StatusGatewayTimeout
}

func decodeError(resp *http.Response, raw []byte) error {
	var body struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
			Field   string `json:"field"`
		} `json:"error"`
	}
	e := &Error{Status: resp.StatusCode}
	if json.Unmarshal(raw, &body) == nil && body.Error.Code != "" {
		e.Code, e.Message, e.Field = body.Error.Code, body.Error.Message, body.Error.Field
	} else {
		e.Code = http.StatusText(resp.StatusCode)
		e.Message = string(raw)
		if len(e.Message) > 200 {
			e.Message = e.Message[:200]
		}
	}
	if s := resp.Header.Get("Retry-After"); s != "" {
		if secs, err := strconv.Atoi(s); err == nil {
			e.RetryAfter = time.Duration(secs) * time.Second
		}
	}
	return e
}
