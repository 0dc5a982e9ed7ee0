package pushsig_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/pushsig"
	"github.com/s3q/s3q/shared/worker"
)

// vectors is contract/push-signature-vectors.json, the cases every
// language's signer and verifier pass (its "about" says what each field
// means).
type vectors struct {
	About []string `json:"about"`
	Sign  []struct {
		Name         string  `json:"name"`
		Secret       string  `json:"secret"`
		Timestamp    int64   `json:"timestamp"`
		Method       string  `json:"method"`
		URL          string  `json:"url"`
		Queue        string  `json:"queue"`
		TaskID       string  `json:"task_id"`
		Attempt      int     `json:"attempt"`
		Body         *string `json:"body"`
		BodyBase64   string  `json:"body_base64"`
		SignedBase64 string  `json:"signed_string_base64"`
		Signature    string  `json:"signature"`
	} `json:"sign"`
	Verify []struct {
		Name       string            `json:"name"`
		Method     string            `json:"method"`
		Headers    map[string]string `json:"headers"`
		Body       *string           `json:"body"`
		BodyBase64 string            `json:"body_base64"`
		Receiver   struct {
			URL              string   `json:"url"`
			Queue            string   `json:"queue"`
			Secrets          []string `json:"secrets"`
			ToleranceSeconds int      `json:"tolerance_seconds"`
		} `json:"receiver"`
		Now     int64  `json:"now"`
		OK      bool   `json:"ok"`
		TaskID  string `json:"task_id"`
		Attempt int    `json:"attempt"`
		Error   string `json:"error"`
	} `json:"verify"`
}

// errorNames are the vectors' language-neutral names of Verify's errors.
var errorNames = map[string]error{
	"no_secret": pushsig.ErrNoSecret,
	"target":    pushsig.ErrTarget,
	"missing":   pushsig.ErrMissing,
	"bad_time":  pushsig.ErrBadTime,
	"queue":     pushsig.ErrQueue,
	"signature": pushsig.ErrSignature,
}

func readVectors(t *testing.T) vectors {
	t.Helper()
	raw, err := os.ReadFile("../../contract/push-signature-vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var v vectors
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	if len(v.About) == 0 || len(v.Sign) == 0 || len(v.Verify) == 0 {
		t.Fatalf("vectors file incomplete: %d about lines, %d sign, %d verify", len(v.About), len(v.Sign), len(v.Verify))
	}
	return v
}

// body decodes a vector's body: the base64 is the exact bytes, and the
// string, when given, must be the same bytes.
func body(t *testing.T, name string, s *string, b64 string) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatalf("%s: body_base64: %v", name, err)
	}
	if s != nil && *s != string(b) {
		t.Fatalf("%s: body and body_base64 differ", name)
	}
	return b
}

func TestTheSigningVectors(t *testing.T) {
	for _, v := range readVectors(t).Sign {
		t.Run(v.Name, func(t *testing.T) {
			b := body(t, v.Name, v.Body, v.BodyBase64)
			d := pushsig.Delivery{Timestamp: v.Timestamp, Method: v.Method, URL: v.URL, Queue: v.Queue, TaskID: v.TaskID, Attempt: v.Attempt}
			if got := pushsig.Sign(v.Secret, d, b); got != v.Signature {
				t.Fatalf("Sign = %s\nwant   %s", got, v.Signature)
			}
			// The header the dispatcher sends verifies at the receiver the
			// vector describes.
			h := http.Header{}
			pushsig.Headers(h, v.Secret, d, b)
			if h.Get(pushsig.HeaderSignature) != v.Signature {
				t.Fatalf("Headers wrote %q", h.Get(pushsig.HeaderSignature))
			}
			got, err := pushsig.Verify(v.Secret, pushsig.Expect{URL: v.URL, Queue: v.Queue}, v.Method, h, b, time.Unix(v.Timestamp, 0))
			if err != nil || got != d {
				t.Fatalf("Verify = %+v, %v", got, err)
			}
			if _, err := base64.StdEncoding.DecodeString(v.SignedBase64); err != nil {
				t.Fatalf("signed_string_base64: %v", err)
			}
		})
	}
}

func TestTheVerifyingVectors(t *testing.T) {
	for _, v := range readVectors(t).Verify {
		t.Run(v.Name, func(t *testing.T) {
			b := body(t, v.Name, v.Body, v.BodyBase64)
			if v.OK == (v.Error != "") {
				t.Fatalf("a vector is ok or has an error: ok=%v error=%q", v.OK, v.Error)
			}
			want, named := errorNames[v.Error]
			if !v.OK && !named {
				t.Fatalf("unknown error name %q", v.Error)
			}
			rc := v.Receiver
			if len(rc.Secrets) < 1 || len(rc.Secrets) > 2 {
				t.Fatalf("receiver has %d secrets, want 1 or 2", len(rc.Secrets))
			}
			target := worker.PushTarget{Secret: rc.Secrets[0], URL: rc.URL, Queue: rc.Queue, Tolerance: time.Duration(rc.ToleranceSeconds) * time.Second}
			if len(rc.Secrets) == 2 {
				target.PreviousSecret = rc.Secrets[1]
			}
			r := httptest.NewRequest(v.Method, "http://receiver.invalid/anywhere", bytes.NewReader(b))
			for k, val := range v.Headers {
				r.Header.Add(k, val)
			}
			now := time.Unix(v.Now, 0)
			check := func(via string, d pushsig.Delivery, err error) {
				t.Helper()
				if v.OK {
					if err != nil || d.TaskID != v.TaskID || d.Attempt != v.Attempt {
						t.Fatalf("%s = %+v, %v; want ok with task %s attempt %d", via, d, err, v.TaskID, v.Attempt)
					}
					return
				}
				if !errors.Is(err, want) {
					t.Fatalf("%s = %+v, %v; want %s (%v)", via, d, err, v.Error, want)
				}
			}
			d, err := pushsig.Verify(target.Secret, pushsig.Expect{URL: rc.URL, Queue: rc.Queue, Tolerance: target.Tolerance, PreviousSecret: target.PreviousSecret}, v.Method, r.Header, b, now)
			check("pushsig.Verify", d, err)
			d, err = worker.VerifySignature(target, r, b, now)
			check("worker.VerifySignature", d, err)
		})
	}
}
