package api

import (
	"net/http"
	"slices"
	"strings"
)

// handler serves one route: it reads rq and returns what to answer, or an
// error that errors.go turns into an error response.
type handler func(a *API, rq *request) (reply, error)

// route is one method and path pattern, such as
// "POST /queues/{queue}/tasks/{id}/fail".
type route struct {
	method  string
	pattern string
	segs    []string // pattern split at "/"; "{queue}", "{id}" and "{name}" are wildcards
	query   []string // the query parameters it accepts
	serve   handler
}

// key is the route key, as API Gateway spells it:
// "POST /queues/{queue}/tasks/{id}/fail".
func (rt *route) key() string { return rt.method + " " + rt.pattern }

// literal counts the pattern's literal segments: the more, the more specific.
func (rt *route) literal() int {
	n := 0
	for _, s := range rt.segs {
		if !isParam(s) {
			n++
		}
	}
	return n
}

func newRoute(key string, query []string, h handler) *route {
	method, pattern, _ := strings.Cut(key, " ")
	return &route{method: method, pattern: pattern, segs: strings.Split(pattern[1:], "/"), query: query, serve: h}
}

// table is every route, in the order Routes lists them. Every route that
// touches a queue's tasks names the queue in its path (DESIGN §12.3), so
// that IAM policies on execute-api:Invoke scope a principal to queues;
// GET /tasks, across queues, is the one operator route.
var table = []*route{
	newRoute("GET /queues", []string{"limit", "cursor", "counts"}, (*API).queueList),
	newRoute("PUT /queues/{queue}", nil, (*API).queueDeclare),
	newRoute("GET /queues/{queue}", nil, (*API).queueGet),
	newRoute("DELETE /queues/{queue}", nil, (*API).queueDelete),
	newRoute("POST /queues/{queue}/tasks", nil, (*API).submit),
	newRoute("POST /queues/{queue}/tasks/batch", nil, (*API).submitBatch),
	newRoute("GET /queues/{queue}/tasks", []string{"status", "task_type", "limit", "cursor"}, (*API).list),
	newRoute("GET /tasks", []string{"status", "queue", "task_type", "limit", "cursor"}, (*API).list),
	newRoute("GET /queues/{queue}/tasks/{id}", nil, (*API).get),
	newRoute("GET /queues/{queue}/tasks/{id}/history", nil, (*API).history),
	newRoute("POST /queues/{queue}/tasks/{id}/cancel", nil, (*API).cancel),
	newRoute("POST /queues/{queue}/tasks/{id}/retry", nil, (*API).retry),
	newRoute("POST /queues/{queue}/tasks/{id}/expire", nil, (*API).expire),
	newRoute("POST /queues/{queue}/claim", nil, (*API).claim),
	newRoute("POST /queues/{queue}/tasks/{id}/heartbeat", nil, (*API).heartbeat),
	newRoute("POST /queues/{queue}/tasks/{id}/complete", nil, (*API).complete),
	newRoute("POST /queues/{queue}/tasks/{id}/fail", nil, (*API).fail),
	newRoute("POST /queues/{queue}/tasks/{id}/reschedule", nil, (*API).reschedule),
	newRoute("POST /queues/{queue}/tasks/{id}/artifacts", nil, (*API).artifactUpload),
	newRoute("GET /queues/{queue}/tasks/{id}/artifacts/{name}", nil, (*API).artifactDownload),
	newRoute("POST /queues/{queue}/schedules", nil, (*API).scheduleCreate),
	newRoute("GET /queues/{queue}/schedules", []string{"limit", "cursor"}, (*API).scheduleList),
	newRoute("GET /queues/{queue}/schedules/{id}", nil, (*API).scheduleGet),
	newRoute("PUT /queues/{queue}/schedules/{id}", nil, (*API).scheduleUpdate),
	newRoute("DELETE /queues/{queue}/schedules/{id}", nil, (*API).scheduleDelete),
	newRoute("POST /queues/{queue}/schedules/{id}/pause", nil, (*API).schedulePause),
	newRoute("POST /queues/{queue}/schedules/{id}/resume", nil, (*API).scheduleResume),
	newRoute("POST /queues/{queue}/schedules/{id}/trigger", nil, (*API).scheduleTrigger),
	newRoute("GET /queues/{queue}/schedules/{id}/history", []string{"since", "limit", "cursor"}, (*API).scheduleHistory),
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

// Match returns the key of the route that serves method and path (a
// decoded URL path such as "/queues/default/tasks/0190.../complete"), and false when no
// route matches both. It is how a caller in front of several handlers
// (the dev server) picks the one for a request.
func Match(method, path string) (string, bool) {
	rt, _, _ := match(table, method, path)
	if rt == nil {
		return "", false
	}
	return rt.key(), true
}

// Allowed returns the methods that some route serves path with, in route
// order: none when no route has the path.
func Allowed(path string) []string {
	_, _, allow := match(table, "", path)
	return allow
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

// params are the wildcard segments of a matched path: {queue}, {id} and {name}.
type params struct{ queue, id, name string }

// isParam reports whether a pattern segment is a wildcard.
func isParam(seg string) bool { return seg == "{id}" || seg == "{name}" || seg == "{queue}" }

// match finds the route for method and path among routes. It returns the
// route and its path parameters; or nil and the methods that the path
// does allow (none: 404; some: 405).
func match(routes []*route, method, path string) (*route, params, []string) {
	if !strings.HasPrefix(path, "/") {
		return nil, params{}, nil
	}
	segs := strings.Split(path[1:], "/")
	var best *route
	var bestParams params
	var allow []string
	for _, rt := range routes {
		ps, ok := matchSegs(rt.segs, segs)
		if !ok {
			continue
		}
		if rt.method != method {
			if !slices.Contains(allow, rt.method) {
				allow = append(allow, rt.method)
			}
			continue
		}
		if best == nil || rt.literal() > best.literal() {
			best, bestParams = rt, ps
		}
	}
	if best != nil {
		return best, bestParams, nil
	}
	return nil, params{}, allow
}

// matchSegs matches a path's segments against a pattern's and returns the
// wildcard segments, none of which may be empty.
func matchSegs(pattern, segs []string) (params, bool) {
	if len(pattern) != len(segs) {
		return params{}, false
	}
	var ps params
	for i, p := range pattern {
		switch {
		case isParam(p):
			if segs[i] == "" {
				return params{}, false
			}
			switch p {
			case "{queue}":
				ps.queue = segs[i]
			case "{id}":
				ps.id = segs[i]
			default:
				ps.name = segs[i]
			}
		case p != segs[i]:
			return params{}, false
		}
	}
	return ps, true
}

// methodNotAllowed is the error of a path served with other methods.
func methodNotAllowed(method string, allow []string) *Error {
	return &Error{Status: http.StatusMethodNotAllowed, Code: CodeMethodNotAllowed,
		Message: clip(method) + " is not allowed here; use " + strings.Join(allow, ", "), allow: strings.Join(allow, ", ")}
}
