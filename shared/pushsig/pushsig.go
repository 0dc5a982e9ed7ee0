// Package pushsig signs and verifies the body of an HTTPS push delivery:
// S3q-Signature is the hex HMAC-SHA256, keyed with the target's secret, of
// the S3q-Timestamp header (Unix seconds), a ".", and the body. The
// dispatcher signs (package dispatch); targets verify (worker.VerifySignature).
package pushsig

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"time"
)

// The headers of a push delivery.
const (
	HeaderSignature = "S3q-Signature"
	HeaderTimestamp = "S3q-Timestamp"
	HeaderTaskID    = "S3q-Task-Id"
	HeaderAttempt   = "S3q-Attempt"
)

// Errors of Verify.
var (
	ErrMissing   = errors.New("pushsig: missing S3q-Signature or S3q-Timestamp")
	ErrBadTime   = errors.New("pushsig: timestamp outside the tolerance")
	ErrSignature = errors.New("pushsig: signature mismatch")
	ErrNoSecret  = errors.New("pushsig: no secret to verify with")
)

// Sign returns the hex HMAC-SHA256 of timestamp + "." + body under secret.
func Sign(secret, timestamp string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(timestamp))
	m.Write([]byte("."))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// Verify checks the S3q-Signature and S3q-Timestamp headers of a delivery
// against its body: the signature must be Sign(secret, timestamp, body)
// (compared in constant time) and the timestamp within tolerance of now
// either way, which bounds replays. A tolerance <= 0 means 5 minutes.
// An empty secret verifies nothing (ErrNoSecret): anyone can sign with
// the empty key.
func Verify(secret string, h http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	if secret == "" {
		return ErrNoSecret
	}
	sig, ts := h.Get(HeaderSignature), h.Get(HeaderTimestamp)
	if sig == "" || ts == "" {
		return ErrMissing
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return ErrBadTime
	}
	if tolerance <= 0 {
		tolerance = 5 * time.Minute
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return ErrBadTime
	}
	want := Sign(secret, ts, body)
	if !hmac.Equal([]byte(want), []byte(sig)) {
		return ErrSignature
	}
	return nil
}
