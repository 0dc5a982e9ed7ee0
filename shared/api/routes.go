package api

import (
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/s3q/s3q/shared/queue"
)

// handler serves one route: it reads rq and returns what to answer, or an
// error that errors.go turns into an error response.
type handler func(a *API, rq *request) (reply, error)

// route is one entry of the route table: a method and path pattern in
// http.ServeMux syntax ("POST /queues/{queue}/tasks/{id}/fail"), the HTTP
// function that serves it, what it takes and answers, and its handler.
// The route table is the one description of the API: it feeds the
// ServeMux that matches requests, the route keys of each Lambda function
// (RoutesOf) and of the stack, and the OpenAPI document (Document).
type route struct {
	method  string
	pattern string
	// function is the HTTP Lambda function that serves the route:
	// "submit", "claim", "waits", "tasks" or "schedules".
	function string
	summary  string
	query    []string // the query parameters it accepts (queryParams in openapi.go describes each)
	body     string   // the schema of its request body, "" for none
	answers  []answer // its successful answers
	errors   []string // the error codes it answers besides every route's (see openapi.go)
	serve    handler
}

// answer is a successful answer of a route: a status and the schema of its
// body, "" for none.
type answer struct {
	status int
	schema string
}

// key is the route key, as API Gateway spells it:
// "POST /queues/{queue}/tasks/{id}/fail".
func (rt *route) key() string { return rt.method + " " + rt.pattern }

// answers200 and answers201 are the one successful answer of most routes.
func answers200(schema string) []answer { return []answer{{http.StatusOK, schema}} }
func answers201(schema string) []answer { return []answer{{http.StatusCreated, schema}} }

// Error codes that many routes answer.
var (
	leaseErrors = []string{CodeNotRunning, CodeLeaseMismatch, CodeLeaseExpired, CodeConflict}
	taskErrors  = []string{CodeInvalidState, CodeConflict}
)

// table is every route, in the order Routes lists them. Every route that
// touches a queue's tasks names the queue in its path, so
// that IAM policies on execute-api:Invoke scope a principal to queues;
// GET /tasks, across queues, is the one operator route.
var table = []*route{
	{method: "GET", pattern: "/queues", function: "tasks", summary: "List the declared queues, with their counts unless counts=false",
		query: []string{"limit", "cursor", "counts"}, answers: answers200("QueueList"), serve: (*API).queueList},
	{method: "PUT", pattern: "/queues/{queue}", function: "tasks", summary: "Declare a queue (201) or replace its settings (200)",
		body: "QueueRequest", answers: []answer{{200, "QueueReply"}, {201, "QueueReply"}},
		errors: []string{CodeTooManyQueues, CodeConflict}, serve: (*API).queueDeclare},
	{method: "GET", pattern: "/queues/{queue}", function: "tasks", summary: "Read a queue's declaration and counts",
		answers: answers200("QueueReply"), errors: []string{CodeQueueNotFound}, serve: (*API).queueGet},
	{method: "DELETE", pattern: "/queues/{queue}", function: "tasks", summary: "Delete a queue that holds no live tasks",
		answers: []answer{{http.StatusNoContent, ""}}, errors: []string{CodeQueueNotFound, CodeQueueNotEmpty, CodeConflict}, serve: (*API).queueDelete},
	{method: "POST", pattern: "/queues/{queue}/tasks", function: "submit", summary: "Submit a task (a wait goes to POST /queues/{queue}/tasks/wait)",
		body: "SubmitRequest", answers: []answer{{200, "TaskReply"}, {201, "TaskReply"}},
		errors: []string{CodeQueueNotFound, CodeConflict, CodeTooManyQueues}, serve: (*API).submit},
	{method: "POST", pattern: "/queues/{queue}/tasks/wait", function: "waits", summary: "Submit a task and wait up to wait for its outcome (the waits function: its concurrency is capped apart)",
		body: "SubmitRequest", answers: []answer{{200, "TaskReply"}, {201, "TaskReply"}, {202, "TaskReply"}},
		errors: []string{CodeQueueNotFound, CodeConflict, CodeTooManyQueues, CodeDeadlineExceeded, CodeTooManyWaits}, serve: (*API).submitWait},
	{method: "POST", pattern: "/queues/{queue}/tasks/batch", function: "submit", summary: "Submit up to 500 tasks, one result per task",
		body: "BatchRequest", answers: answers200("BatchReply"), errors: []string{CodeQueueNotFound, CodeConflict, CodeTooManyQueues}, serve: (*API).submitBatch},
	{method: "GET", pattern: "/queues/{queue}/tasks", function: "tasks", summary: "List a queue's tasks",
		query: []string{"status", "task_type", "priority", "limit", "cursor"}, answers: answers200("TaskList"), serve: (*API).list},
	{method: "GET", pattern: "/tasks", function: "tasks", summary: "List tasks across queues (the operator's listing)",
		query: []string{"status", "queue", "task_type", "priority", "limit", "cursor"}, answers: answers200("TaskList"), serve: (*API).list},
	{method: "GET", pattern: "/queues/{queue}/tasks/{id}", function: "tasks", summary: "Read a task",
		answers: answers200("TaskReply"), serve: (*API).get},
	{method: "GET", pattern: "/queues/{queue}/tasks/{id}/history", function: "tasks", summary: "List the stored versions of a task, newest first",
		query: []string{"limit", "cursor"}, answers: answers200("History"), serve: (*API).history},
	{method: "POST", pattern: "/queues/{queue}/tasks/{id}/cancel", function: "tasks", summary: "Cancel a pending task, or ask a running one's worker to stop",
		body: "Empty", answers: answers200("TaskReply"), errors: taskErrors, serve: (*API).cancel},
	{method: "POST", pattern: "/queues/{queue}/tasks/{id}/retry", function: "tasks", summary: "Make a failed, expired or cancelled task pending again",
		body: "Empty", answers: answers200("TaskReply"), errors: taskErrors, serve: (*API).retry},
	{method: "POST", pattern: "/queues/{queue}/tasks/{id}/expire", function: "tasks", summary: "Expire a pending task by hand",
		body: "Empty", answers: answers200("TaskReply"), errors: taskErrors, serve: (*API).expire},
	{method: "POST", pattern: "/queues/{queue}/claim", function: "claim", summary: "Claim tasks under leases (204 when none; a long-poll goes to POST /queues/{queue}/claim/wait)",
		body: "ClaimRequest", answers: []answer{{200, "ClaimReply"}, {http.StatusNoContent, ""}},
		errors: []string{CodeInvalidLeaseDuration, CodeQueueNotFound, CodeConflict}, serve: (*API).claim},
	{method: "POST", pattern: "/queues/{queue}/claim/wait", function: "waits", summary: "Claim tasks, long-polling up to wait when none is available (the waits function: its concurrency is capped apart)",
		body: "ClaimRequest", answers: []answer{{200, "ClaimReply"}, {http.StatusNoContent, ""}},
		errors: []string{CodeInvalidLeaseDuration, CodeQueueNotFound, CodeConflict, CodeTooManyWaits}, serve: (*API).claimWait},
	{method: "POST", pattern: "/queues/{queue}/tasks/{id}/heartbeat", function: "tasks", summary: "Extend a lease",
		body: "HeartbeatRequest", answers: answers200("Claimed"), errors: append([]string{CodeInvalidLeaseDuration}, leaseErrors...), serve: (*API).heartbeat},
	{method: "POST", pattern: "/queues/{queue}/tasks/{id}/complete", function: "tasks", summary: "Complete a task with its output",
		body: "CompleteRequest", answers: answers200("TaskReply"), errors: leaseErrors, serve: (*API).complete},
	{method: "POST", pattern: "/queues/{queue}/tasks/{id}/fail", function: "tasks", summary: "Fail an attempt: retried with backoff, or dead-lettered",
		body: "FailRequest", answers: answers200("TaskReply"), errors: leaseErrors, serve: (*API).fail},
	{method: "POST", pattern: "/queues/{queue}/tasks/{id}/reschedule", function: "tasks", summary: "Give a claim back and run the task later",
		body: "RescheduleRequest", answers: answers200("TaskReply"), errors: leaseErrors, serve: (*API).reschedule},
	{method: "POST", pattern: "/queues/{queue}/tasks/{id}/cancel-ack", function: "tasks", summary: "The lease holder acknowledges a cancel request: the running task is cancelled",
		body: "CancelAckRequest", answers: answers200("TaskReply"), errors: leaseErrors, serve: (*API).cancelAck},
	{method: "POST", pattern: "/queues/{queue}/tasks/{id}/artifacts", function: "tasks", summary: "Get a presigned URL to upload an artifact of exactly size bytes",
		body: "ArtifactRequest", answers: answers201("ArtifactReply"), errors: []string{CodeInvalidState}, serve: (*API).artifactUpload},
	{method: "GET", pattern: "/queues/{queue}/tasks/{id}/artifacts/{name}", function: "tasks", summary: "Get a presigned URL to download an artifact",
		answers: answers200("ArtifactReply"), serve: (*API).artifactDownload},
	{method: "POST", pattern: "/queues/{queue}/schedules", function: "schedules", summary: "Create a schedule",
		body: "ScheduleRequest", answers: answers201("ScheduleReply"), errors: []string{CodeQueueNotFound, CodeAlreadyExists, CodeTooManySchedules, CodeConflict}, serve: (*API).scheduleCreate},
	{method: "GET", pattern: "/queues/{queue}/schedules", function: "schedules", summary: "List a queue's schedules",
		query: []string{"limit", "cursor"}, answers: answers200("ScheduleList"), serve: (*API).scheduleList},
	{method: "GET", pattern: "/queues/{queue}/schedules/{id}", function: "schedules", summary: "Read a schedule and its next fire times",
		answers: answers200("ScheduleReply"), serve: (*API).scheduleGet},
	{method: "PUT", pattern: "/queues/{queue}/schedules/{id}", function: "schedules", summary: "Replace a schedule",
		body: "ScheduleRequest", answers: answers200("ScheduleReply"), errors: []string{CodeQueueNotFound, CodeConflict}, serve: (*API).scheduleUpdate},
	{method: "DELETE", pattern: "/queues/{queue}/schedules/{id}", function: "schedules", summary: "Delete a schedule",
		answers: []answer{{http.StatusNoContent, ""}}, errors: []string{CodeConflict}, serve: (*API).scheduleDelete},
	{method: "POST", pattern: "/queues/{queue}/schedules/{id}/pause", function: "schedules", summary: "Pause a schedule",
		body: "Empty", answers: answers200("ScheduleReply"), errors: []string{CodeConflict}, serve: (*API).schedulePause},
	{method: "POST", pattern: "/queues/{queue}/schedules/{id}/resume", function: "schedules", summary: "Resume a schedule",
		body: "Empty", answers: answers200("ScheduleReply"), errors: []string{CodeConflict}, serve: (*API).scheduleResume},
	{method: "POST", pattern: "/queues/{queue}/schedules/{id}/trigger", function: "schedules", summary: "Fire a schedule now",
		body: "Empty", answers: answers200("FireReply"), errors: []string{CodeQueueNotFound, CodeConflict}, serve: (*API).scheduleTrigger},
	{method: "GET", pattern: "/queues/{queue}/schedules/{id}/history", function: "schedules", summary: "List a schedule's fires",
		query: []string{"since", "limit", "cursor"}, answers: answers200("ScheduleHistory"), serve: (*API).scheduleHistory},
	{method: "POST", pattern: "/queues/{queue}/pause", function: "tasks", summary: "Pause a queue: claims and push deliveries take nothing from it; submits go on",
		body: "Empty", answers: answers200("QueueReply"), errors: []string{CodeQueueNotFound, CodeConflict}, serve: (*API).queuePause},
	{method: "POST", pattern: "/queues/{queue}/resume", function: "tasks", summary: "Resume a paused queue",
		body: "Empty", answers: answers200("QueueReply"), errors: []string{CodeQueueNotFound, CodeConflict}, serve: (*API).queueResume},
	{method: "GET", pattern: "/queues/{queue}/stats", function: "tasks", summary: "Counts by status, the oldest due pending task, the failures, cancels and expiries of the last hour",
		answers: answers200("StatsReply"), errors: []string{CodeQueueNotFound}, serve: (*API).queueStats},
	{method: "POST", pattern: "/queues/{queue}/purge", function: "tasks", summary: "Delete up to 100 pending or finished tasks chosen by status, type and age (dry_run to count), resumable by cursor",
		body: "BulkRequest", answers: answers200("BulkReply"), errors: []string{CodeQueueNotFound}, serve: bulk(queue.OpPurge)},
	{method: "POST", pattern: "/queues/{queue}/bulk/retry", function: "tasks", summary: "Retry up to 100 failed or cancelled tasks chosen by status, type and age, resumable by cursor",
		body: "BulkRequest", answers: answers200("BulkReply"), errors: []string{CodeQueueNotFound}, serve: bulk(queue.OpRetry)},
	{method: "POST", pattern: "/queues/{queue}/bulk/cancel", function: "tasks", summary: "Cancel up to 100 pending (or running) tasks chosen by status, type and age, resumable by cursor",
		body: "BulkRequest", answers: answers200("BulkReply"), errors: []string{CodeQueueNotFound}, serve: bulk(queue.OpCancel)},
	{method: "POST", pattern: "/queues/{queue}/bulk/expire", function: "tasks", summary: "Expire up to 100 pending tasks chosen by type and age, resumable by cursor",
		body: "BulkRequest", answers: answers200("BulkReply"), errors: []string{CodeQueueNotFound}, serve: bulk(queue.OpExpire)},
	{method: "GET", pattern: "/openapi.json", function: "tasks", summary: "This document: the OpenAPI 3.1 description of the API",
		answers: answers200("OpenAPI"), serve: (*API).openAPI},
}

// Routes returns the key of every route the API serves, as API Gateway
// route keys ("POST /queues/{queue}/tasks", "GET /queues/{queue}/tasks/{id}", ...).
func Routes() []string {
	keys := make([]string, len(table))
	for i, rt := range table {
		keys[i] = rt.key()
	}
	return keys
}

// RoutesOf returns the keys of the routes the HTTP Lambda function named
// function serves ("submit", "claim", "waits", "tasks", "schedules"), in table
// order; none for another name.
func RoutesOf(function string) []string {
	var keys []string
	for _, rt := range table {
		if rt.function == function {
			keys = append(keys, rt.key())
		}
	}
	return keys
}

// Match returns the key of the route that serves method and path (a
// URL path such as "/queues/default/tasks/0190.../complete"), and false when no
// route matches both. It is how a caller in front of several handlers
// (the dev server) picks the one for a request.
func Match(method, path string) (string, bool) {
	r, err := http.NewRequest(method, "http://s3q.local/", nil)
	if err != nil {
		return "", false
	}
	r.URL.Path = path
	rt, _ := match(r)
	if rt == nil {
		return "", false
	}
	return rt.key(), true
}

// Allowed returns the methods that some route serves path with, in route
// order: none when no route has the path.
func Allowed(path string) []string {
	r, err := http.NewRequest(http.MethodGet, "http://s3q.local/", nil)
	if err != nil {
		return nil
	}
	r.URL.Path = path
	return allowed(r, table)
}

// selectRoutes returns the routes of table whose keys are in keys.
func selectRoutes(keys []string) []*route {
	var out []*route
	for _, rt := range table {
		if slices.Contains(keys, rt.key()) {
			out = append(out, rt)
		}
	}
	return out
}

// params are the wildcards of a matched path: {queue}, {id} and {name}.
type params struct{ queue, id, name string }

// mux matches requests to the routes of the table: http.ServeMux does the
// matching, its handlers only report which route matched and with which
// path values (see matchWriter). Built on first use.
var mux = sync.OnceValue(func() *http.ServeMux {
	m := http.NewServeMux()
	for _, rt := range table {
		m.Handle(rt.key(), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if mw, ok := w.(*matchWriter); ok {
				mw.rt = rt
				mw.ps = params{queue: r.PathValue("queue"), id: r.PathValue("id"), name: r.PathValue("name")}
			}
		}))
	}
	return m
})

// matchWriter is the ResponseWriter match hands the ServeMux: a route's
// handler fills in rt and ps; whatever the ServeMux itself would answer
// (its plain-text 404 and 405, a redirect to a clean path) is dropped.
type matchWriter struct {
	rt     *route
	ps     params
	header http.Header
}

func (w *matchWriter) Header() http.Header {
	if w.header == nil {
		w.header = http.Header{}
	}
	return w.header
}
func (w *matchWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *matchWriter) WriteHeader(int)             {}

// match finds the route of r among every route of the table, and its path
// values; nil when none matches both its method and its path. A wildcard
// never holds a "/" (an encoded %2F): such a path matches nothing. A path
// that is not clean ("/queues/a/../b", "//tasks") matches nothing either,
// where the ServeMux would redirect.
func match(r *http.Request) (*route, params) {
	mw := &matchWriter{}
	mux().ServeHTTP(mw, r)
	if mw.rt == nil || mw.rt.method != r.Method { // a GET pattern also matches HEAD
		return nil, params{}
	}
	if strings.Contains(mw.ps.queue+mw.ps.id+mw.ps.name, "/") {
		return nil, params{}
	}
	return mw.rt, mw.ps
}

// allowed returns the methods that some route of routes serves r's path
// with, in route order: none when no route has the path. A method counts
// when the route the ServeMux picks for it is one of routes.
func allowed(r *http.Request, routes []*route) []string {
	var allow []string
	for _, rt := range routes {
		if slices.Contains(allow, rt.method) {
			continue
		}
		probe := r.WithContext(r.Context())
		probe.Method = rt.method
		if m, _ := match(probe); m == rt {
			allow = append(allow, rt.method)
		}
	}
	return allow
}

// methodNotAllowed is the error of a path served with other methods.
func methodNotAllowed(method string, allow []string) *Error {
	return &Error{Status: http.StatusMethodNotAllowed, Code: CodeMethodNotAllowed,
		Message: clip(method) + " is not allowed here; use " + strings.Join(allow, ", "), allow: strings.Join(allow, ", ")}
}
