// Package pushsig signs and verifies HTTPS push deliveries. A delivery
// carries
//
//	S3q-Signature: t=1769590800,v1=5257a869e7ecebeda32affa62cdca3fa51cad7e77a0e56ff536d0ce8e108d8bd
//	S3q-Queue: orders
//	S3q-Task-Id: 01943a5e-...
//	S3q-Attempt: 1
//
// where v1 is the hex HMAC-SHA256, keyed with the target's secret, of the
// signed string (version 1):
//
//	v1 \n t \n METHOD \n target URL \n queue \n task id \n attempt \n body
//
// So a delivery verifies only at the URL it was sent to, for the queue it
// was sent for, for that task and attempt, within the time window: a
// delivery captured at one target (or for one queue) is refused by
// another, even one holding the same secret. Within the window a delivery
// may still be sent again (by the dispatcher after a lost answer, or by
// whoever captured it): receivers treat (task id, attempt) as the
// idempotency key. The header may carry several v1 values (one per
// secret while a secret is rotated); one matching is enough. Versions
// other than v1 are ignored, so a later version can be added beside it.
//
// The dispatcher signs (package dispatch); targets verify
// (worker.VerifySignature, or Verify). The package also holds the one
// other word of the push protocol both sides share: PermanentErrorType.
package pushsig

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// PermanentErrorType is the errorType of a Lambda target's function error
// that must not be retried: worker.LambdaHandler returns it for a
// worker.Permanent error, and the dispatcher then fails the task without
// retry. A function in any language says the same with "retryable": false
// in its error payload.
const PermanentErrorType = "s3q.Permanent"

// The headers of a push delivery.
const (
	HeaderSignature = "S3q-Signature"
	HeaderQueue     = "S3q-Queue"
	HeaderTaskID    = "S3q-Task-Id"
	HeaderAttempt   = "S3q-Attempt"
)

// Version is the signature scheme's version, the key of its value in the
// header.
const Version = "v1"

// DefaultTolerance is the time window of Verify when none is given.
const DefaultTolerance = 5 * time.Minute

// Errors of Verify.
var (
	ErrMissing   = errors.New("pushsig: missing or malformed S3q-Signature (one t= and a v1=), S3q-Queue, S3q-Task-Id or S3q-Attempt (a canonical positive decimal)")
	ErrBadTime   = errors.New("pushsig: timestamp outside the tolerance")
	ErrSignature = errors.New("pushsig: signature mismatch")
	ErrNoSecret  = errors.New("pushsig: no secret to verify with")
	ErrTarget    = errors.New("pushsig: the target's URL and queue are required to verify")
	ErrQueue     = errors.New("pushsig: delivery for another queue")
)

// Delivery is what a signature binds besides the body.
type Delivery struct {
	Timestamp int64  // Unix seconds
	Method    string // POST
	URL       string // the target URL exactly as declared (target.url)
	Queue     string
	TaskID    string
	Attempt   int
}

// signed returns the MAC of d and body under secret.
func signed(secret string, d Delivery, body []byte) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	for _, s := range []string{Version, strconv.FormatInt(d.Timestamp, 10), d.Method, d.URL, d.Queue, d.TaskID, strconv.Itoa(d.Attempt)} {
		m.Write([]byte(s))
		m.Write([]byte("\n"))
	}
	m.Write(body)
	return m.Sum(nil)
}

// Sign returns the S3q-Signature header value of a delivery:
// "t=<timestamp>,v1=<hex HMAC-SHA256>".
func Sign(secret string, d Delivery, body []byte) string {
	return "t=" + strconv.FormatInt(d.Timestamp, 10) + "," + Version + "=" + hex.EncodeToString(signed(secret, d, body))
}

// Headers sets the headers of a delivery on h: the signature, the queue,
// the task id and the attempt.
func Headers(h http.Header, secret string, d Delivery, body []byte) {
	h.Set(HeaderSignature, Sign(secret, d, body))
	h.Set(HeaderQueue, d.Queue)
	h.Set(HeaderTaskID, d.TaskID)
	h.Set(HeaderAttempt, strconv.Itoa(d.Attempt))
}

// Expect is what a target knows of the deliveries meant for it.
type Expect struct {
	// URL is the target URL exactly as the queue declares it
	// (target.url), not as the request arrived (a proxy may change it).
	URL string
	// Queue is the queue whose deliveries the target takes.
	Queue string
	// Tolerance is the time window either side of now. Defaults to
	// DefaultTolerance.
	Tolerance time.Duration
	// PreviousSecret, when set, is also accepted: the secret's old value
	// while it is rotated (the dispatcher caches the value it signs with
	// for up to 5 minutes). Defaults to none.
	PreviousSecret string
}

// Verify checks a delivery's headers against its method and exact body
// bytes: the signature must be that of (timestamp, method, e.URL,
// e.Queue, the task id and attempt of the headers, body) under secret
// (or e.PreviousSecret), compared in constant time, and the timestamp
// within e.Tolerance of now either way. It returns the delivery the
// signature binds. An empty secret verifies nothing (ErrNoSecret): anyone
// can sign with the empty key.
//
// The checks run in this order, each with its error: the secret
// (ErrNoSecret), e's URL and queue (ErrTarget), the headers' presence and
// form (ErrMissing: the attempt and the timestamp are canonical decimals,
// so "02" or "+2" is refused rather than read as 2), the time window
// (ErrBadTime), the queue (ErrQueue), the signature (ErrSignature).
// contract/push-signature-vectors.json holds the cases every language's
// verifier passes.
func Verify(secret string, e Expect, method string, h http.Header, body []byte, now time.Time) (Delivery, error) {
	if secret == "" {
		return Delivery{}, ErrNoSecret
	}
	if e.URL == "" || e.Queue == "" {
		return Delivery{}, ErrTarget
	}
	ts, sigs, ok := parse(h.Get(HeaderSignature))
	d := Delivery{Method: method, URL: e.URL, Queue: h.Get(HeaderQueue), TaskID: h.Get(HeaderTaskID)}
	attempt, okAttempt := canonical(h.Get(HeaderAttempt))
	if !ok || d.Queue == "" || d.TaskID == "" || !okAttempt || attempt > math.MaxInt32 {
		return Delivery{}, ErrMissing
	}
	d.Attempt = int(attempt)
	sec, okTime := canonical(ts)
	if !okTime {
		return Delivery{}, ErrBadTime
	}
	d.Timestamp = sec
	tolerance := e.Tolerance
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return Delivery{}, ErrBadTime
	}
	if d.Queue != e.Queue {
		return Delivery{}, ErrQueue
	}
	for _, key := range []string{secret, e.PreviousSecret} {
		if key == "" {
			continue
		}
		want := []byte(hex.EncodeToString(signed(key, d, body)))
		for _, s := range sigs {
			if hmac.Equal(want, []byte(s)) {
				return d, nil
			}
		}
	}
	return Delivery{}, ErrSignature
}

// canonical reads a positive decimal written canonically ([1-9][0-9]*,
// at most 18 digits): no sign, no leading zero, nothing else.
func canonical(s string) (int64, bool) {
	if s == "" || len(s) > 18 || s[0] == '0' {
		return 0, false
	}
	var n int64
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// parse reads "t=...,v1=...[,v1=...]": the timestamp and the v1 values.
// Spaces around a part are ignored, and so are parts of other keys (a
// later version beside v1); a header with no t=, more than one, or no v1=
// is not ok.
func parse(v string) (ts string, sigs []string, ok bool) {
	times := 0
	for _, part := range strings.Split(v, ",") {
		k, val, found := strings.Cut(strings.TrimSpace(part), "=")
		if !found {
			continue
		}
		switch k {
		case "t":
			ts = val
			times++
		case Version:
			sigs = append(sigs, val)
		}
	}
	return ts, sigs, times == 1 && len(sigs) > 0
}
