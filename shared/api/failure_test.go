package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/s3q/s3q/shared/api"
	"github.com/s3q/s3q/shared/store"
	"github.com/s3q/s3q/shared/store/memstore"
)

// failingStore is a mem store whose Get fails with err, or panics when
// err is nil.
type failingStore struct {
	store.Store
	err error
}

func (f failingStore) Get(ctx context.Context, key string) (store.Object, error) {
	if f.err == nil {
		panic("the store broke")
	}
	return store.Object{}, f.err
}

func TestStoreFailures(t *testing.T) {
	cases := []struct {
		name   string
		err    error
		status int
		code   string
	}{
		{"s3_throttling_is_503_throttled_with_retry_after", store.Retryable(errors.New("SlowDown")), 503, "throttled"},
		{"an_unclassified_store_error_is_500_internal", errors.New("AccessDenied"), 500, "internal"},
		{"a_panic_is_500_internal", nil, 500, "internal"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, failingStore{Store: memstore.New(), err: c.err}, api.Options{})
			r := e.do("GET", "/queues/default/tasks/"+unknownID, "")
			if r.status != c.status || str(r.body, "error.code") != c.code {
				t.Fatalf("want %d %s: %d %s", c.status, c.code, r.status, r.raw)
			}
			if c.status == 503 && r.header.Get("Retry-After") == "" {
				t.Errorf("a 503 without Retry-After")
			}
			if strings.Contains(str(r.body, "error.message"), "AccessDenied") {
				t.Errorf("a 500 leaks its cause: %s", r.raw)
			}
			if c.status == 500 && !strings.Contains(e.logs.String(), `"level":"ERROR"`) {
				t.Errorf("a 500 is not logged as an error: %s", e.logs)
			}
		})
	}
}

func TestLogLine(t *testing.T) {
	e := newEnv(t, memstore.New(), api.Options{})
	id := e.submit(`{"task_type":"t"}`)
	e.do("GET", "/nope", "")
	lines := logLines(t, e.logs)
	if len(lines) != 2 {
		t.Fatalf("want one line per request, got %d: %s", len(lines), e.logs)
	}
	first := lines[0]
	for k, want := range map[string]any{
		"msg": "request", "route": "POST /queues/{queue}/tasks", "method": "POST", "status": float64(201), "task_id": id,
	} {
		if got := get(first, k); got != want {
			t.Errorf("%s = %v, want %v in %v", k, got, want, first)
		}
	}
	// A submit writes at least its marker and its record.
	if n, _ := get(first, "s3.put").(float64); n < 2 || get(first, "s3.requests").(float64) < n {
		t.Errorf("s3 = %v, want the submit's PUTs counted", first["s3"])
	}
	if _, ok := first["duration_ms"].(float64); !ok {
		t.Errorf("no duration_ms in %v", first)
	}
	if lines[1]["route"] != "unmatched" || lines[1]["path"] != "/nope" || lines[1]["code"] != "not_found" {
		t.Errorf("the 404 line is %v", lines[1])
	}
}

func logLines(t *testing.T, b *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b.Bytes()))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("log line is not JSON: %s", sc.Bytes())
		}
		out = append(out, m)
	}
	return out
}

// The zero Options serve, as the client's tests use them.
func TestZeroOptions(t *testing.T) {
	e := newEnv(t, memstore.New(), api.Options{})
	h := api.New(e.q, e.decls, api.Options{})
	var _ http.Handler = h
	if got := api.Routes(); len(got) != 40 || got[0] != "GET /queues" || got[4] != "POST /queues/{queue}/tasks" {
		t.Errorf("Routes() = %v", got)
	}
	if k, ok := api.Match("POST", "/queues/default/tasks/"+unknownID+"/complete"); !ok || k != "POST /queues/{queue}/tasks/{id}/complete" {
		t.Errorf("Match = %q %v", k, ok)
	}
	if _, ok := api.Match("PUT", "/queues/default/tasks"); ok {
		t.Errorf("Match(PUT /queues/default/tasks) matched")
	}
}
