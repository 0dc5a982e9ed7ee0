package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3q/s3q/shared/api"
	"github.com/s3q/s3q/shared/artifacts"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/reqcount"
	"github.com/s3q/s3q/shared/store/memstore"
)

// FuzzAPI feeds the API random methods, paths, bodies and headers against
// a store holding a pending task and a running one. In path and body,
// {{pending}}, {{running}} and {{token}} become the pending task's id, the
// running task's id and its lease token, so the fuzzer reaches past id
// validation. Every answer must be a success or a 4xx (or the 504 of a
// sync wait whose task's deadline passed: a contract answer, not a
// failure), never a 5xx or a panic; a 4xx must write nothing; every answer
// but a 204 is JSON, an error names its code, and a 400 its field.
//
// Run it briefly with: go test -run '^$' -fuzz FuzzAPI -fuzztime 10s -fuzzminimizetime 0s ./shared/api
// (make fuzz; the Makefile says why without minimization).
func FuzzAPI(f *testing.F) {
	f.Add("POST", "/queues/default/tasks", []byte(`{"task_type":"t","ttl":"1h"}`), "Content-Type: application/json")
	f.Add("POST", "/queues/default/tasks/{{running}}/complete", []byte(`{"lease_token":"{{token}}","output":{"a":1}}`), "")
	f.Add("GET", "/queues/default/tasks?status=pending&limit=5", []byte(nil), "")
	f.Add("POST", "/queues/default/tasks/{{pending}}/artifacts", []byte(`{"name":"report.pdf"}`), "")
	f.Add("GET", "/queues/default/tasks/{{running}}/artifacts/out.bin", []byte(nil), "")
	// The queue operations and the waits routes.
	f.Add("POST", "/queues/default/purge", []byte(`{"status":"pending","older_than":"1h","task_type":"t","limit":5,"dry_run":true}`), "")
	f.Add("POST", "/queues/q2/bulk/cancel", []byte(`{"status":"running","cursor":"x"}`), "")
	f.Add("POST", "/queues/default/pause", []byte(`{}`), "")
	f.Add("GET", "/queues/q2/stats", []byte(nil), "")
	f.Add("POST", "/queues/default/tasks/wait", []byte(`{"task_type":"t","wait":"1s"}`), "")
	f.Add("POST", "/queues/default/claim/wait", []byte(`{"wait":0.05,"max_tasks":2}`), "")
	f.Fuzz(func(t *testing.T, method, target string, body []byte, header string) {
		s := memstore.New()
		q, decls := queues.New(reqcount.Wrap(s), queues.Options{Core: queue.Options{ListCacheFor: -1}})
		ctx := context.Background()
		pend, err := q.Submit(ctx, queue.SubmitRequest{TaskType: "t", TTL: ptr(queue.Duration(time.Hour))}, t0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := q.Submit(ctx, queue.SubmitRequest{TaskType: "t", Queue: "q2", DedupKey: "k"}, t0); err != nil {
			t.Fatal(err)
		}
		claimed, err := q.Claim(ctx, queue.ClaimRequest{Queue: "q2", LeaseFor: time.Minute}, t0)
		if err != nil || len(claimed) != 1 {
			t.Fatal(claimed, err)
		}
		run := claimed[0]
		sub := strings.NewReplacer("{{pending}}", pend.Task.ID, "{{running}}", run.Task.ID, "{{token}}", run.Lease.Token)

		u, err := url.ParseRequestURI(sub.Replace(target))
		if err != nil {
			return // not a request target a client could send; nothing to check
		}
		body = []byte(sub.Replace(string(body)))
		req := httptest.NewRequest("GET", "/", bytes.NewReader(body))
		req.Method, req.URL, req.RequestURI = method, u, u.RequestURI()
		for _, line := range strings.Split(header, "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok {
				req.Header.Add(strings.TrimSpace(k), strings.TrimSpace(v))
			}
		}
		if n, err := strconv.ParseInt(req.Header.Get("Content-Length"), 10, 64); err == nil {
			req.ContentLength = n
		}

		h := api.New(q, decls, api.Options{
			Now:          func() time.Time { return t0 },
			Logger:       slog.New(slog.NewJSONHandler(io.Discard, nil)),
			MaxBodyBytes: 64 << 10,
			MaxWait:      100 * time.Millisecond,
			// Presigning makes no request: a client of nowhere will do.
			Artifacts: artifacts.New(q, presigner, "bucket", "", artifacts.Options{}),
		})
		before := keys(t, s)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		checkAnswer(t, req, string(body), rec.Code, rec.Header(), rec.Body.Bytes())

		var out struct {
			Error *struct {
				Code    string `json:"code"`
				Message string `json:"message"`
				Field   string `json:"field"`
			} `json:"error"`
		}
		if rec.Code == http.StatusNoContent {
			if rec.Body.Len() != 0 {
				t.Fatalf("204 with a body: %s", rec.Body)
			}
		} else if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
			t.Fatalf("%d answer is not JSON: %v: %q", rec.Code, err, rec.Body)
		}
		switch {
		case rec.Code == http.StatusGatewayTimeout && out.Error != nil && out.Error.Code == api.CodeDeadlineExceeded:
		case rec.Code >= 500 || rec.Code < 200:
			t.Fatalf("%s %s %q: %d %s", method, target, body, rec.Code, rec.Body)
		case rec.Code >= 400:
			if out.Error == nil || out.Error.Code == "" || out.Error.Message == "" {
				t.Fatalf("a %d without an error code and message: %s", rec.Code, rec.Body)
			}
			if rec.Code == http.StatusBadRequest && out.Error.Field == "" {
				t.Fatalf("%s %s %q: a 400 without a field: %s", method, target, body, rec.Body)
			}
			if after := keys(t, s); !maps.Equal(before, after) {
				t.Fatalf("%s %s %q: a %d wrote to the store:\nbefore %v\nafter  %v", method, target, body, rec.Code, before, after)
			}
		}
	})
}

func ptr[T any](v T) *T { return &v }

// presigner signs artifact URLs in the fuzz test; it is never sent a request.
var presigner = s3.New(s3.Options{
	Region: "us-east-1", BaseEndpoint: aws.String("http://127.0.0.1:1"), UsePathStyle: true,
	Credentials: credentials.NewStaticCredentialsProvider("AKID", "SECRET", ""),
})
