package dispatch

// How an answer becomes a Result: the status, Retry-After and body of an
// HTTP answer, the function error and payload of a Lambda one, mapped
// without a server; dispatch_test delivers to real ones.

import (
	"net/http"
	"testing"
	"time"
)

func TestHTTPAnswersDecideTheOutcome(t *testing.T) {
	now := time.Date(2026, 1, 28, 9, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		status     int
		retryAfter string
		outcome    Outcome
		retryable  bool
		after      time.Duration
	}{
		{200, "", Complete, false, 0},
		{204, "", Complete, false, 0},
		{503, "7", Fail, true, 7 * time.Second},
		{429, now.Add(90 * time.Second).Format(http.TimeFormat), Fail, true, 90 * time.Second},
		{500, "soon", Fail, true, 0},
		{503, "999999999", Fail, true, maxRetryAfter},
		{302, "", Fail, false, 0},
		{400, "", Fail, false, 0},
		{404, "5", Fail, false, 0},
	} {
		r := decideHTTP(c.status, c.retryAfter, []byte("x"), now)
		if r.Outcome != c.outcome || r.Retryable != c.retryable || (c.outcome == Fail && c.retryable && r.RetryAfter != c.after) {
			t.Errorf("%d Retry-After %q: %+v", c.status, c.retryAfter, r)
		}
	}
}

func TestOutputKeepsJSONAndQuotesText(t *testing.T) {
	for in, want := range map[string]string{``: ``, `null`: ``, ` {"a":1} `: `{"a":1}`, `ok`: `"ok"`} {
		if got := string(asOutput([]byte(in))); got != want {
			t.Errorf("asOutput(%q) = %q, want %q", in, got, want)
		}
	}
}

// Retry-After is honoured within bounds whatever its form: a number too
// large for int64 is the cap, not "absent"; negative, fractional, past
// dates and garbage are absent (the queue's backoff).
func TestRetryAfterIsBoundedWhateverItsForm(t *testing.T) {
	now := time.Date(2026, 1, 28, 9, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"99999999999999999999999":  maxRetryAfter,
		"43201":                    maxRetryAfter,
		"-5":                       0,
		"-99999999999999999999999": 0,
		"1.5":                      0,
		"0":                        0,
		now.Add(-time.Hour).Format(http.TimeFormat):     0,
		now.Add(48 * time.Hour).Format(http.TimeFormat): maxRetryAfter,
		"Wed, 28 Jan 2026 09:00:30 GMT":                 30 * time.Second,
	} {
		if got := parseRetryAfter(v, now); got != want {
			t.Errorf("Retry-After %q: %s, want %s", v, got, want)
		}
	}
}

func TestLambdaErrorPayloadsDecideRetry(t *testing.T) {
	for _, c := range []struct {
		payload   string
		retryable bool
	}{
		{`{"errorMessage":"x","errorType":"Error"}`, true},
		{`{"errorMessage":"x","errorType":"s3q.Permanent"}`, false},
		{`{"errorMessage":"x","errorType":"Error","retryable":false}`, false},
		{`not json`, true},
	} {
		r := decideLambda(200, "Unhandled", []byte(c.payload))
		if r.Outcome != Fail || r.Retryable != c.retryable {
			t.Errorf("%s: %+v", c.payload, r)
		}
	}
	if r := decideLambda(200, "", []byte(`{"a":1}`)); r.Outcome != Complete || string(r.Output) != `{"a":1}` {
		t.Errorf("success: %+v", r)
	}
}
