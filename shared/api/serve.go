package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/reqcount"
	"github.com/s3q/s3q/shared/store"
)

// request is what a route handler gets: the parts of the HTTP request it
// may use, already checked against the route.
type request struct {
	ctx   context.Context
	route *route // the route it matched
	// waits is set by the handlers of the wait routes: a wait may hold
	// this request.
	waits bool
	// q is the API's queue, or its view limited to the {queue} of the
	// path (queue.Queue.In) for the routes that name one.
	q     *queue.Queue
	queue string            // the {queue} path segment, validated; "" when none
	id    string            // the {id} path segment, not yet validated
	name  string            // the {name} path segment, not yet validated
	query map[string]string // accepted query parameters
	body  []byte
	hdr   http.Header // the request's headers
	log   *requestLog
	at    time.Time // the request's time, once read (now)
}

// now returns the time of the request: Options.Now read once, at its
// first use, so that the core and the answer see the same time (a
// heartbeat's new lease and the expires_in_seconds of its answer). Only
// the later polls of a wait read the clock again.
func (rq *request) now(a *API) time.Time {
	if rq.at.IsZero() {
		rq.at = a.now()
	}
	return rq.at
}

// reply is what a handler answers: a status and a body to encode as JSON
// (none for a nil body). code is the error code a non-error reply stands
// for, for the log (a 504 of a sync wait).
type reply struct {
	status int
	body   any
	code   string
	// header holds headers the answer carries besides the usual ones.
	header http.Header
}

// ServeHTTP serves one request. It never panics: a panic in a handler is
// logged with its stack and answered 500 internal.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	if r.Method == "" { // net/http's meaning of an empty method
		r.Method = http.MethodGet
	}
	rl := &requestLog{method: r.Method, path: r.URL.Path}
	ctx, span := a.startSpan(r.Context(), r)
	defer span.End()
	var counts *reqcount.Counter
	if a.counted {
		ctx, counts = reqcount.Start(ctx)
	}
	sw := &statusWriter{ResponseWriter: w}
	if counts != nil {
		// The answer says what it cost: written with the header, once the
		// handler has made its store requests.
		sw.beforeHeader = func(h http.Header) { h.Set(HeaderS3Requests, strconv.FormatInt(counts.Counts().Total(), 10)) }
	}
	defer func() {
		if p := recover(); p != nil {
			a.log.ErrorContext(ctx, "panic serving request", "route", rl.route, "method", rl.method, "path", rl.path,
				"panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			if !sw.wroteHeader {
				a.writeError(sw, apiError(CodeInternal, "", "internal error"), nil)
			}
			rl.code = CodeInternal
		}
		endSpan(span, rl, sw.status)
		a.logRequest(ctx, rl, sw.status, time.Since(start), counts)
		if a.opts.OnRequest != nil {
			var c store.Counts
			if counts != nil {
				c = counts.Counts()
			}
			a.opts.OnRequest(rl.route, sw.status, c)
		}
	}()

	rp, err := a.serve(ctx, r, rl)
	if err != nil {
		e := toError(err)
		if e.Status >= 500 {
			rl.err = err
		}
		rl.code = e.Code
		a.writeError(sw, e, nil)
		return
	}
	rl.code = rp.code
	a.writeReply(sw, rp)
}

// serve routes r, reads and checks what the route takes, and runs its
// handler.
func (a *API) serve(ctx context.Context, r *http.Request, rl *requestLog) (reply, error) {
	rt, ps := match(r)
	if rt == nil || !slices.Contains(a.routes, rt) {
		rl.route = "unmatched"
		if rt != nil {
			// A route of the API, but not of this one (Options.Routes).
			return reply{}, notFound("route %s is not served here", rt.key())
		}
		if allow := allowed(r, a.routes); len(allow) > 0 {
			return reply{}, methodNotAllowed(r.Method, allow)
		}
		return reply{}, notFound("no route %s %s", clip(r.Method), clip(r.URL.Path))
	}
	rl.route = rt.key()
	if ps.id != "" && strings.Contains(rt.pattern, "/tasks/{id}") {
		rl.ids = append(rl.ids, ps.id) // a task id; schedule ids are not logged as such
	}
	q := a.q
	if ps.queue != "" {
		if err := queue.ValidateQueueName(ps.queue); err != nil {
			return reply{}, err
		}
		q = a.q.In(ps.queue)
	}
	rawQuery, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return reply{}, badInput("query", "the query string is malformed: %v", err)
	}
	query, err := queryParams(rawQuery, rt.query)
	if err != nil {
		return reply{}, err
	}
	var body []byte
	if rt.method != http.MethodGet {
		if body, err = readBody(r, a.opts.MaxBodyBytes); err != nil {
			return reply{}, err
		}
	}
	rp, err := rt.serve(a, &request{ctx: ctx, route: rt, q: q, queue: ps.queue, id: ps.id, name: ps.name, query: query, body: body, hdr: r.Header, log: rl})
	if err != nil && ps.queue != "" {
		if e := toError(err); e.Code == CodeNotFound && strings.HasPrefix(e.Message, "task ") && strings.HasSuffix(e.Message, " not found") {
			// Say which queue, when the core did not: a task addressed
			// under the wrong queue is a 404 too.
			c := *e
			c.Message += " in queue " + ps.queue
			return rp, &c
		}
	}
	return rp, err
}

// writeReply writes a reply: JSON, or no body at all when it has none.
func (a *API) writeReply(w http.ResponseWriter, rp reply) {
	for k, v := range rp.header {
		w.Header()[k] = v
	}
	if rp.body == nil {
		w.WriteHeader(rp.status)
		return
	}
	a.writeJSON(w, rp.status, rp.body)
}

// writeError writes an error response, with the task when there is one.
func (a *API) writeError(w http.ResponseWriter, e *Error, task *taskView) {
	if e.Status == http.StatusServiceUnavailable || e.Status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", retryAfterSeconds)
	}
	if e.allow != "" {
		w.Header().Set("Allow", e.allow)
	}
	a.writeJSON(w, e.Status, errorBody{Error: e, Task: task})
}

func (a *API) writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		// Only a bug gets here: every body is made of plain types.
		a.log.Error("encode response", "error", err)
		status = http.StatusInternalServerError
		b = []byte(`{"error":{"code":"internal","message":"internal error"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", fmt.Sprint(len(b)+1))
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// HeaderS3Requests is the header of every answer of an API over a
// counted store (reqcount.Wrap, as every function's is): the number of S3
// requests the call made, the same figure as its log line's s3.requests.
// The console sums it to show what a page view cost.
const HeaderS3Requests = "S3q-S3-Requests"

// statusWriter remembers the status written through it, and calls
// beforeHeader, when set, with the headers just before they are written.
type statusWriter struct {
	http.ResponseWriter
	status       int
	wroteHeader  bool
	beforeHeader func(http.Header)
}

func (w *statusWriter) WriteHeader(status int) {
	if !w.wroteHeader {
		w.status, w.wroteHeader = status, true
		if w.beforeHeader != nil {
			w.beforeHeader(w.Header())
		}
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}
