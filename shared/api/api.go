// Package api is the HTTP API of s3q: the
// queue declarations (PUT|GET|DELETE /queues/{queue}, GET /queues) and,
// under /queues/{queue}, the task routes: submit (one and batch, with an
// optional synchronous wait), get, list, history, cancel, retry, expire,
// claim (with an optional long-poll), the lease operations heartbeat,
// complete, fail and reschedule, presigned artifact URLs (when
// Options.Artifacts is set) and the schedules (when Options.Schedules is
// set). A task or schedule addressed under a queue that is not its own is
// 404, as if it did not exist; GET /tasks lists across queues.
//
// An *API is an http.Handler over a *queue.Queue. It knows nothing about
// Lambda: package lambdafn turns API Gateway events into requests for it,
// and the dev server and tests serve it with net/http directly.
//
// Wire format: JSON in and out, snake_case. One task is {"task": {...}},
// many are {"tasks": [...], "next_cursor": "..."}. A task is the queue.Task
// record without its lease token (a token only ever appears in a lease
// object, {"task_id", "token", "expires_at"}) and without its internal
// index key, with expires_at always present (null when none) and
// expires_in_seconds (whole seconds, rounded down, negative once passed)
// when it has a deadline. Errors are {"error": {"code", "message",
// "field"}}, with the codes in errors.go.
//
// The route table (routes.go) is the one description of the routes: it
// feeds the http.ServeMux that matches requests, the routes of each Lambda
// function (RoutesOf), and the OpenAPI 3.1 document (Document, served at
// GET /openapi.json and committed as openapi.json), which the stack's route
// keys are checked against.
package api

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/s3q/s3q/shared/artifacts"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/reqcount"
	"github.com/s3q/s3q/shared/schedule"
	"github.com/s3q/s3q/shared/store"
)

// Defaults of Options.
const (
	DefaultMaxBodyBytes = 6 << 20          // Lambda's synchronous payload limit
	DefaultMaxWait      = 25 * time.Second // API Gateway's limit is 30s
)

// Options tune an API. The zero value is ready to use.
type Options struct {
	// Now is the clock the API reads for every core call and for
	// expires_in_seconds. Waits and long-polls sleep in real time but
	// decide deadlines by this clock. Defaults to time.Now.
	Now func() time.Time

	// Logger receives one line per request (route, method, status, task
	// ids, duration, and the S3 requests made when the queue's store is
	// wrapped by reqcount.Wrap) and the details of any 5xx. Defaults to
	// slog.Default().
	Logger *slog.Logger

	// MaxBodyBytes is the largest request body accepted; a larger one is
	// answered 413 too_large without being read further. Defaults to
	// DefaultMaxBodyBytes (6 MiB).
	MaxBodyBytes int64

	// MaxWait caps the "wait" of a submit and of a claim long-poll; a
	// longer wait is a 400. Defaults to DefaultMaxWait (25s).
	MaxWait time.Duration

	// WaitsPerQueue is the most waits (submits that wait for their outcome
	// and claims that long-poll, together) one queue may hold at once,
	// across every process on the bucket (Queue.HoldWait): the next is
	// 429 too_many_waits at once, without holding anything. So one
	// queue's callers cannot take every wait the deployment can hold
	// (the waits function's reserved concurrency). Defaults to 0: no
	// bound.
	WaitsPerQueue int

	// Routes limits the API to these route keys (see Routes, e.g.
	// "POST /queues/{queue}/claim"); any other route answers 404
	// not_found, as an HTTP function does for a route that is not its own.
	// Unknown keys never match. Defaults to every route.
	Routes []string

	// Artifacts hands out the presigned URLs of
	// POST /queues/{queue}/tasks/{id}/artifacts and
	// GET /queues/{queue}/tasks/{id}/artifacts/{name} (*artifacts.Service). Defaults
	// to none: those routes answer 404 not_found.
	Artifacts Artifacts

	// OnSubmit, when set, is called after every successful
	// POST /queues/{queue}/tasks and POST /queues/{queue}/tasks/batch with the tasks it created (not those a dedup
	// key returned) and the time they were submitted at: the submit
	// function writes the TTL-at-submit metric from it. It must not block.
	// Defaults to none.
	OnSubmit func(created []queue.Task, now time.Time)

	// OnRequest, when set, is called after every request is answered,
	// with its route key ("unmatched" when none), its status and the S3
	// requests it made (zero when the store is not counted): the HTTP
	// functions write their activity metrics from it. It must not block.
	// Defaults to none.
	OnRequest func(route string, status int, s3 store.Counts)

	// Schedules serves the /queues/{queue}/schedules routes. Defaults to
	// none: those routes answer 404 not_found.
	Schedules *schedule.Scheduler

	// TracerProvider records an OpenTelemetry span per request (otel.go):
	// a server span named by the route, continuing the request's W3C
	// traceparent header; the tasks a submit makes then carry the trace
	// context of that span (a task whose body names another keeps it), so
	// a worker's span of their run is its child. Defaults to the global
	// provider (otel.GetTracerProvider), a no-op until the program sets
	// one: nothing is recorded then, and a task keeps the trace context
	// its submit gave.
	TracerProvider trace.TracerProvider
}

// Artifacts issues presigned artifact URLs; *artifacts.Service is one.
// Errors: a bad task id or artifact name is a *queue.ValidationError, an
// unknown task queue.ErrNotFound, a missing artifact artifacts.ErrNoArtifact,
// an upload to a finished or past-deadline task a *queue.StateError.
type Artifacts interface {
	// PutURL returns a URL to upload the artifact name of a task at now,
	// for a body of exactly size bytes.
	PutURL(ctx context.Context, taskID, name string, size int64, now time.Time) (artifacts.URL, error)
	// GetURL returns a URL to download the artifact name of a task at now.
	GetURL(ctx context.Context, taskID, name string, now time.Time) (artifacts.URL, error)
}

var _ Artifacts = (*artifacts.Service)(nil)

// API serves the task routes over one queue. It is safe for concurrent use.
type API struct {
	q      *queue.Queue
	decls  *queues.Registry
	opts   Options
	now    func() time.Time
	log    *slog.Logger
	tracer trace.Tracer
	routes []*route
	// counted is true when the queue's store is wrapped by reqcount.Wrap,
	// so that each request can log the S3 requests it made.
	counted bool
}

var _ http.Handler = (*API)(nil)

// New returns the API over q and the registry of its declared queues,
// made together (queues.Open or queues.New; config.Config.Queue in a deployment).
func New(q *queue.Queue, decls *queues.Registry, opts Options) *API {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.MaxWait <= 0 {
		opts.MaxWait = DefaultMaxWait
	}
	a := &API{q: q, decls: decls, opts: opts, now: opts.Now, log: opts.Logger, tracer: tracerOf(opts.TracerProvider), routes: table}
	if len(opts.Routes) > 0 {
		a.routes = selectRoutes(opts.Routes)
	}
	a.counted = reqcount.Wrapped(q.Store())
	return a
}
