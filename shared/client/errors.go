package client

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/s3q/s3q/shared/wire"
)

// Error is an error answer of the API: {"error":{"code","message","field"}}.
// errors.Is matches it against the sentinels of package wire by its code
// (wire.ErrNotFound, ...; the server's queue package names the same
// values), so a program can test errors.Is(err, wire.ErrLeaseExpired)
// whether it talks to the core in-process or through the API.
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

// Is maps API error codes to the sentinel errors of package wire.
func (e *Error) Is(target error) bool {
	switch target {
	case wire.ErrNotFound:
		return e.Code == "not_found"
	case wire.ErrNotRunning:
		return e.Code == "not_running"
	case wire.ErrLeaseMismatch:
		return e.Code == "lease_mismatch"
	case wire.ErrLeaseExpired:
		return e.Code == "lease_expired"
	case wire.ErrInvalidLeaseDuration:
		return e.Code == "invalid_lease_duration"
	case wire.ErrInvalidInput:
		return e.Code == "invalid_input"
	case wire.ErrTooLarge:
		return e.Code == "too_large"
	case wire.ErrLeaseEnded:
		return e.Code == "conflict" && e.Field == "lease_token"
	case wire.ErrConflict:
		return e.Code == "conflict" && e.Field != "lease_token"
	case wire.ErrInvalidState:
		return e.Code == "invalid_state"
	case wire.ErrQueueNotFound:
		return e.Code == "queue_not_found"
	case wire.ErrQueueNotEmpty:
		return e.Code == "queue_not_empty"
	case wire.ErrTooManyQueues:
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
