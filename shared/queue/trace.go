package queue

import (
	crand "crypto/rand"
	"encoding/hex"
	"strings"
)

// Trace context. A submit may carry a W3C trace context
// (https://www.w3.org/TR/trace-context/): traceparent and tracestate, as
// the HTTP headers of those names or the fields of a batch item. The task
// keeps them as they were given, every attempt hands them to its handler
// (the Go worker's context, a push delivery's headers, s3q worker --exec's
// TRACEPARENT and TRACESTATE), and status shows them: the handler's work
// continues the trace that submitted the task. They are not part of a
// submit's identity: a retried submit with the same id and another
// trace context replays the task, whose trace context is the first's.

// MaxTracestateBytes is the longest tracestate kept (the W3C limit is 32
// list members; 512 bytes is what the recommendation says to propagate
// at least).
const MaxTracestateBytes = 512

// ValidateTraceparent checks a W3C traceparent given in field: version 00
// as "00-{32 hex}-{16 hex}-{2 hex}" (a later version is read by its first
// four fields, as the recommendation asks, its further fields printable
// ASCII without spaces), lowercase hex, neither id all zeros: what is
// accepted can be sent on as an HTTP header and set as an environment
// variable as it is.
func ValidateTraceparent(field, tp string) error {
	bad := func(why string) error {
		return invalid(field, "is not a W3C traceparent (version-traceid-parentid-flags, as 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01): %s", why)
	}
	if len(tp) < 55 || len(tp) > 256 {
		return bad("wrong length")
	}
	parts := strings.SplitN(tp, "-", 5)
	if len(parts) < 4 || len(parts[0]) != 2 || len(parts[1]) != 32 || len(parts[2]) != 16 || len(parts[3]) != 2 {
		return bad("wrong fields")
	}
	for _, p := range parts[:4] {
		if !lowerHex(p) {
			return bad("not lowercase hex")
		}
	}
	if len(parts) == 5 {
		// A later version's extra fields are kept and handed on as they
		// are (a push delivery's header, --exec's environment): nothing
		// there may end a header line or hide in one.
		for i := 0; i < len(parts[4]); i++ {
			if c := parts[4][i]; c <= 0x20 || c > 0x7e {
				return bad("a later version's fields hold a character that is not printable ASCII")
			}
		}
	}
	switch {
	case parts[0] == "ff":
		return bad("version ff is invalid")
	case parts[0] == "00" && len(tp) != 55:
		return bad("version 00 has exactly four fields")
	case strings.Trim(parts[1], "0") == "":
		return bad("the trace id is all zeros")
	case strings.Trim(parts[2], "0") == "":
		return bad("the parent id is all zeros")
	}
	return nil
}

// ValidateTracestate checks a tracestate given in field: printable ASCII,
// at most MaxTracestateBytes, and only with a traceparent.
func ValidateTracestate(field, ts, traceparent string) error {
	if ts == "" {
		return nil
	}
	if traceparent == "" {
		return invalid(field, "needs a traceparent")
	}
	if len(ts) > MaxTracestateBytes {
		return invalid(field, "is longer than %d bytes", MaxTracestateBytes)
	}
	for i := 0; i < len(ts); i++ {
		if ts[i] < 0x20 || ts[i] > 0x7e {
			return invalid(field, "holds a character that is not printable ASCII")
		}
	}
	return nil
}

func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// validTrace checks the trace context of a submit request.
func validTrace(req *SubmitRequest) error {
	if req.Traceparent != "" {
		if err := ValidateTraceparent("traceparent", req.Traceparent); err != nil {
			return err
		}
	}
	return ValidateTracestate("tracestate", req.Tracestate, req.Traceparent)
}

// NewTraceparent returns the traceparent of a new trace: a random trace
// id and parent id, sampled. A schedule's fire starts one, so each fire
// is a trace of its own.
func NewTraceparent() string {
	var b [24]byte
	_, _ = crand.Read(b[:])
	return "00-" + hex.EncodeToString(b[:16]) + "-" + hex.EncodeToString(b[16:]) + "-01"
}
