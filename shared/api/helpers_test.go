package api_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/api"
	"github.com/s3q/s3q/shared/artifacts"
	"github.com/s3q/s3q/shared/internal/jsonpath"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/reqcount"
	"github.com/s3q/s3q/shared/s3local/s3localtest"
	"github.com/s3q/s3q/shared/schedule"
	"github.com/s3q/s3q/shared/store"
	"github.com/s3q/s3q/shared/store/memstore"
)

// The servers every test of the package shares, started once by TestMain.
var servers s3localtest.Servers

// After a full run, every property the OpenAPI document promises in an
// answer must have been carried by some answer the tests checked
// (checkOpenAPICoverage).
func TestMain(m *testing.M) {
	code := s3localtest.Main(m, &servers)
	if code == 0 {
		code = checkOpenAPICoverage()
	}
	os.Exit(code)
}

// t0 is the fixed, microsecond-aligned time tests start at.
var t0 = time.Date(2026, 1, 28, 9, 0, 0, 0, time.UTC)

// backend is a store to run a test on.
type backend struct {
	name string
	new  func(t *testing.T) store.Store
}

// backends are the stores the route tests run on: mem always, and the
// two real servers.
func backends() []backend {
	return []backend{
		{"mem", func(*testing.T) store.Store { return memstore.New() }},
		{"gofakes3", func(t *testing.T) store.Store { return s3localtest.NewStore(t, servers.GoFakeS3) }},
		{"versitygw", func(t *testing.T) store.Store { return s3localtest.NewStore(t, servers.VersityGW) }},
	}
}

// clock is a settable test clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

func (c *clock) Advance(d time.Duration) { c.Set(c.Now().Add(d)) }

// env is an API over a queue on one store, with a test clock.
type env struct {
	t     *testing.T
	store store.Store
	q     *queue.Queue
	decls *queues.Registry
	api   *api.API
	clock *clock
	logs  *bytes.Buffer
}

func newEnv(t *testing.T, s store.Store, opts api.Options) *env {
	t.Helper()
	if s == nil {
		s = memstore.New()
	}
	e := &env{t: t, store: s, clock: &clock{now: t0}, logs: &bytes.Buffer{}}
	e.q, e.decls = queues.New(reqcount.Wrap(s), queues.Options{Core: queue.Options{ListCacheFor: -1}})
	if opts.Now == nil {
		opts.Now = e.clock.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewJSONHandler(&lockedWriter{w: e.logs}, nil))
	}
	e.api = api.New(e.q, e.decls, opts)
	return e
}

// newEnvEveryRoute is newEnv on the mem store with every route served:
// schedules, and artifacts (presigned for a server that is never sent a
// request).
func newEnvEveryRoute(t *testing.T) *env {
	t.Helper()
	e := newEnv(t, nil, api.Options{})
	e.api = api.New(e.q, e.decls, api.Options{
		Now: e.clock.Now, Logger: discard(),
		Schedules: schedule.New(e.q.Store(), e.q, schedule.Options{}),
		Artifacts: artifacts.New(e.q, presigner, "bucket", "", artifacts.Options{}),
	})
	return e
}

// lockedWriter serialises writes to a buffer shared by goroutines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// response is a recorded answer.
type response struct {
	status int
	header http.Header
	raw    []byte
	body   map[string]any
}

// do sends one request to the API and decodes a JSON answer.
func (e *env) do(method, path, body string) response {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, path, rd)
	rec := httptest.NewRecorder()
	e.api.ServeHTTP(rec, req)
	checkAnswer(e.t, req, body, rec.Code, rec.Header(), rec.Body.Bytes())
	r := response{status: rec.Code, header: rec.Header(), raw: rec.Body.Bytes()}
	if len(r.raw) > 0 {
		if err := json.Unmarshal(r.raw, &r.body); err != nil {
			e.t.Fatalf("%s %s: answer is not JSON: %v: %s", method, path, err, r.raw)
		}
	}
	return r
}

// submit submits a task and returns its id.
func (e *env) submit(body string) string {
	e.t.Helper()
	r := e.do("POST", "/queues/default/tasks", body)
	if r.status != http.StatusCreated {
		e.t.Fatalf("submit %s: %d %s", body, r.status, r.raw)
	}
	return str(r.body, "task.id")
}

// claim claims one task of the default queue and returns its id and token.
func (e *env) claim() (string, string) {
	e.t.Helper()
	r := e.do("POST", "/queues/default/claim", `{"lease_for":"1m","worker_id":"w1"}`)
	if r.status != http.StatusOK {
		e.t.Fatalf("claim: %d %s", r.status, r.raw)
	}
	return str(r.body, "tasks.0.task.id"), str(r.body, "tasks.0.lease.token")
}

// running submits a task and claims it.
func (e *env) running() (string, string) {
	e.t.Helper()
	e.submit(`{"task_type":"t"}`)
	return e.claim()
}

// keys returns every key in the store with its ETag.
func keys(t *testing.T, s store.Store) map[string]string {
	t.Helper()
	out := map[string]string{}
	for it, err := range store.All(t.Context(), s, "") {
		if err != nil {
			t.Fatal(err)
		}
		out[it.Key] = it.ETag
	}
	return out
}

// get walks a decoded JSON value by a dotted path ("tasks.0.task.id").
func get(v any, path string) any { return jsonpath.Get(v, path) }

func str(v any, path string) string {
	s, _ := get(v, path).(string)
	return s
}
