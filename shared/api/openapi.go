package api

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// The OpenAPI 3.1 document of the API, generated from the route table:
// every route with its path and query parameters, request body, answers
// and error codes. shared/api/openapi.json is this document committed;
// a test fails when it differs, and the API tests validate every answer
// they receive against it.

// obj is a JSON object of the document.
type obj = map[string]any

// commonErrors are the error codes every route may answer: a bad path
// value or query parameter (400), a route this function does not serve or
// an unknown id (404), a bug (500), a throttled or failing store (503), a
// request out of time (504).
var commonErrors = []string{CodeInvalidInput, CodeNotFound, CodeInternal, CodeThrottled, CodeDeadlineExceeded}

// queryDocs describes each query parameter a route may accept.
var queryDocs = map[string]obj{
	"status":    {"description": "only tasks in this status", "schema": ref("Status")},
	"queue":     {"description": "only tasks of this queue", "schema": obj{"type": "string"}},
	"task_type": {"description": "only tasks of this type", "schema": obj{"type": "string"}},
	"priority":  {"description": "only tasks of this priority, 1 (highest) to 5 (lowest)", "schema": obj{"type": "integer", "minimum": 1, "maximum": 5}},
	"limit":     {"description": "at most this many results", "schema": obj{"type": "integer", "minimum": 1}},
	"cursor":    {"description": "the next_cursor of the previous page", "schema": obj{"type": "string"}},
	"counts":    {"description": "with each queue's counts (default true)", "schema": obj{"type": "boolean"}},
	"since":     {"description": "only fires at or after this time", "schema": dateTime()},
}

// pathDocs describes each path wildcard.
var pathDocs = map[string]obj{
	"queue": {"description": "the queue's name", "schema": obj{"type": "string"}},
	"id":    {"description": "the task's id (a UUID) or the schedule's id", "schema": obj{"type": "string"}},
	"name":  {"description": "the artifact's name", "schema": obj{"type": "string"}},
}

func ref(name string) obj { return obj{"$ref": "#/components/schemas/" + name} }
func str() obj            { return obj{"type": "string"} }
func integer() obj        { return obj{"type": "integer"} }
func boolean() obj        { return obj{"type": "boolean"} }
func dateTime() obj       { return obj{"type": "string", "format": "date-time"} }
func nullTime() obj       { return obj{"type": []string{"string", "null"}, "format": "date-time"} }
func duration() obj {
	return obj{"type": "string", "description": "a duration such as 90s, 30m, 1h or 7d"}
}
func durationOrSeconds() obj {
	return obj{"type": []string{"string", "number"}, "description": "a duration such as 90s, 30m, 1h or 7d, or a number of seconds"}
}
func anyJSON() obj { return obj{"description": "any JSON value"} }
func arrayOf(items obj) obj {
	return obj{"type": "array", "items": items}
}

// object is a JSON object schema: its properties, those it always has, and
// whether it may hold others.
func object(props obj, required []string, closed bool) obj {
	o := obj{"type": "object", "properties": props}
	if len(required) > 0 {
		o["required"] = required
	}
	if closed {
		o["additionalProperties"] = false
	}
	return o
}

// schemas are the document's components: the bodies routes take and answer.
func schemas() obj {
	priority := obj{"type": "integer", "minimum": 1, "maximum": 5, "description": "1 (highest) to 5 (lowest); a claim takes the highest due first. Default: the queue's, else 3"}
	taskProps := obj{
		"id": str(), "queue": str(), "task_type": str(), "status": ref("Status"), "input": anyJSON(), "output": anyJSON(),
		"created_at": dateTime(), "updated_at": dateTime(), "available_at": dateTime(),
		"expires_at": nullTime(), "expires_in_seconds": obj{"type": "integer", "description": "whole seconds to expires_at, rounded down; negative once passed"},
		"expired_at": dateTime(), "expiry_reason": obj{"type": "string", "enum": []string{"ttl", "parent_expired", "manual"}},
		"ttl": duration(), "ttl_from": ref("TTLFrom"),
		"dedup_key": str(), "parent_id": str(), "on_parent_expired": str(),
		"attempt": integer(), "max_attempts": integer(), "timeout": duration(), "priority": priority,
		"traceparent": obj{"type": "string", "description": "the W3C trace context the task was submitted in, handed to its handler"}, "tracestate": str(),
		"lease_expires_at": dateTime(), "worker_id": str(), "started_at": dateTime(),
		"last_error": str(), "failed_at": dateTime(), "ended_by": obj{"type": "string", "description": "the lease operation that ended the last lease (complete, fail, reschedule, cancel)"}, "completed_at": dateTime(), "cancelled_at": dateTime(), "cancel_requested": boolean(),
		"expiry_event_sent_at": dateTime(), "dead_letter_event_sent_at": dateTime(), "artifacts_expire_at": dateTime(),
		"heartbeats": obj{"type": "integer", "description": "heartbeats of the current attempt, at most 1000"}, "artifact_names": arrayOf(str()),
		"purged_at": obj{"type": "string", "format": "date-time", "description": "the task was purged then (only in the last version of a purged task's history)"},
	}
	lease := obj{"lease_token": obj{"type": "string", "description": "the token of the lease, from the claim"}}
	withLease := func(props obj, required ...string) obj {
		p := obj{"lease_token": lease["lease_token"]}
		for k, v := range props {
			p[k] = v
		}
		return object(p, append([]string{"lease_token"}, required...), false)
	}
	submitProps := obj{
		"id":        obj{"type": "string", "description": "a lowercase UUIDv7 the caller makes: one id is one task (exactly-once submits)"},
		"task_type": str(), "queue": str(), "input": anyJSON(),
		"ttl": durationOrSeconds(), "ttl_seconds": integer(), "expires_at": dateTime(), "ttl_from": ref("TTLFrom"),
		"schedule_at": dateTime(), "delay": durationOrSeconds(), "dedup_key": str(), "max_attempts": integer(),
		"timeout": durationOrSeconds(), "parent_id": str(), "on_parent_expired": str(), "priority": priority,
		"traceparent": obj{"type": "string", "description": "a W3C traceparent (00-{trace id}-{parent id}-{flags}); the traceparent header gives it too. Kept on the task and handed to its handler"},
		"tracestate":  obj{"type": "string", "description": "a W3C tracestate, with traceparent; the tracestate header gives it too"},
	}
	submit := object(submitProps, []string{"task_type"}, false)
	submit["properties"].(obj)["wait"] = obj{"type": []string{"string", "number"}, "description": "a duration or a number of seconds: wait up to this long for the outcome: 200 finished, 202 still going, 504 deadline passed. Only POST /queues/{queue}/tasks/wait waits; the plain route refuses a wait over 0 (400 naming wait)"}
	queueProps := obj{
		"name": str(), "ttl": duration(), "ttl_from": ref("TTLFrom"), "max_attempts": integer(), "timeout": duration(),
		"shards": integer(), "max_concurrency": integer(), "priority": priority, "target": ref("Target"), "auto_declared": boolean(),
		"created_at": dateTime(), "updated_at": dateTime(),
		"paused": obj{"type": "boolean", "description": "claims and push deliveries take nothing from a paused queue; submits go on"}, "paused_at": dateTime(),
		"counts": ref("Counts"),
	}
	counts := object(obj{
		"live": obj{"type": "integer", "description": "pending or running"}, "delayed": obj{"type": "integer", "description": "live, not available yet"},
		"running": obj{"type": "integer", "description": "slots held (queues with max_concurrency)"},
		"failed":  integer(), "cancelled": integer(), "expired": integer(),
		"completed": obj{"type": "integer", "description": "completed or archived: present where the bucket layout keeps each queue's records apart"},
		"at_least":  obj{"type": "boolean", "description": "a count stopped at 10 LIST pages: there are at least this many"},
	}, []string{"live", "delayed", "failed", "cancelled", "expired"}, false)
	stats := object(obj{
		"queue": str(), "paused": boolean(), "paused_at": dateTime(), "counts": ref("Counts"),
		"oldest_pending_at":          obj{"type": "string", "format": "date-time", "description": "when the oldest due pending task became available"},
		"oldest_pending_age_seconds": obj{"type": "integer", "description": "how long it has waited since"},
		"recent": object(obj{"window_seconds": integer(), "failed": integer(), "cancelled": integer(), "expired": integer()},
			[]string{"window_seconds", "failed", "cancelled", "expired"}, true),
		"at": dateTime(),
	}, []string{"queue", "paused", "counts", "recent", "at"}, true)
	bulkRequest := object(obj{
		"status":    ref("Status"),
		"task_type": obj{"type": "string", "description": "only tasks of this type"},
		"older_than": obj{"type": []string{"string", "number"},
			"description": "only tasks last changed (updated_at) at least this long ago: a duration such as 90s, 30m, 1h or 7d, or a number of seconds"},
		"limit":   obj{"type": "integer", "minimum": 1, "maximum": 100, "description": "most tasks changed by this call (default 100)"},
		"cursor":  obj{"type": "string", "description": "the next_cursor of the previous call"},
		"dry_run": obj{"type": "boolean", "description": "report what would change, write nothing"},
	}, nil, true)
	bulkReply := object(obj{
		"op": obj{"type": "string", "enum": []string{"purge", "retry", "cancel", "expire"}}, "queue": str(), "status": ref("Status"), "dry_run": boolean(),
		"matched":     obj{"type": "integer", "description": "tasks the filter chose in this call"},
		"changed":     obj{"type": "integer", "description": "tasks changed (on a dry run: that would be)"},
		"task_ids":    arrayOf(str()),
		"skipped":     arrayOf(object(obj{"id": str(), "reason": str()}, []string{"id", "reason"}, true)),
		"next_cursor": obj{"type": "string", "description": "continue with it; absent once every task of the status was examined"},
	}, []string{"op", "queue", "status", "dry_run", "matched", "changed", "task_ids"}, true)
	taskResult := obj{"task": ref("Task"), "deduplicated": boolean(), "replayed": boolean()}
	return obj{
		"Status":   obj{"type": "string", "enum": []string{"pending", "running", "completed", "failed", "cancelled", "expired", "archived"}},
		"TTLFrom":  obj{"type": "string", "enum": []string{"submission", "first_attempt"}},
		"Task":     object(taskProps, []string{"id", "queue", "task_type", "status", "created_at", "updated_at", "available_at", "expires_at", "attempt", "max_attempts", "timeout"}, true),
		"Lease":    object(obj{"task_id": str(), "token": str(), "expires_at": dateTime()}, []string{"task_id", "token", "expires_at"}, true),
		"Claimed":  object(obj{"task": ref("Task"), "lease": ref("Lease")}, []string{"task", "lease"}, true),
		"Error":    object(obj{"code": str(), "message": str(), "field": obj{"type": "string", "description": "the request field at fault, in its JSON spelling (tasks[3].ttl for a batch item's); body for the body as a whole (not JSON, not an object, too large), query for the query string; always present on a 400"}}, []string{"code", "message"}, true),
		"Target":   object(obj{"lambda": str(), "url": str(), "secret": str()}, nil, false),
		"Queue":    object(queueProps, []string{"name", "created_at", "updated_at"}, false),
		"Counts":   counts,
		"Schedule": object(obj{"id": str(), "task_type": str(), "queue": str(), "priority": priority, "cron": str(), "last_run_at": nullTime(), "next_run_at": nullTime(), "next_runs": arrayOf(dateTime())}, []string{"id", "task_type", "cron"}, false),
		"Fire": object(obj{"schedule_id": str(), "fire_time": dateTime(), "task_id": str(), "fired_at": dateTime(),
			"skipped": str(), "running_task_id": str(), "error": str()}, []string{"schedule_id", "fire_time", "fired_at"}, false),
		"Artifact": object(obj{"task_id": str(), "name": str(), "upload_url": str(), "download_url": str(),
			"headers": obj{"type": "object", "additionalProperties": arrayOf(str()), "description": "headers to send as they are"}, "expires_at": dateTime()},
			[]string{"task_id", "name", "expires_at"}, true),

		"TaskReply":       object(taskResult, []string{"task"}, true),
		"TaskList":        object(obj{"tasks": arrayOf(ref("Task")), "next_cursor": str()}, []string{"tasks"}, true),
		"BatchReply":      object(obj{"results": arrayOf(object(obj{"task": ref("Task"), "deduplicated": boolean(), "replayed": boolean(), "error": ref("Error")}, nil, true))}, []string{"results"}, true),
		"ClaimReply":      object(obj{"tasks": arrayOf(ref("Claimed"))}, []string{"tasks"}, true),
		"History":         object(obj{"versions": arrayOf(object(obj{"version_id": str(), "modified_at": dateTime(), "task": ref("Task")}, []string{"version_id", "modified_at", "task"}, true)), "next_cursor": str()}, []string{"versions"}, true),
		"QueueReply":      object(obj{"queue": ref("Queue")}, []string{"queue"}, true),
		"QueueList":       object(obj{"queues": arrayOf(ref("Queue")), "next_cursor": str()}, []string{"queues"}, true),
		"StatsReply":      object(obj{"stats": stats}, []string{"stats"}, true),
		"BulkReply":       bulkReply,
		"BulkRequest":     bulkRequest,
		"ScheduleReply":   object(obj{"schedule": ref("Schedule")}, []string{"schedule"}, true),
		"ScheduleList":    object(obj{"schedules": arrayOf(ref("Schedule")), "next_cursor": str()}, []string{"schedules"}, true),
		"FireReply":       object(obj{"fire": ref("Fire")}, []string{"fire"}, true),
		"ScheduleHistory": object(obj{"fires": arrayOf(ref("Fire")), "next_cursor": str()}, []string{"fires"}, true),
		"ArtifactReply":   object(obj{"artifact": ref("Artifact")}, []string{"artifact"}, true),
		"OpenAPI":         obj{"type": "object", "description": "an OpenAPI 3.1 document"},

		"Empty":         object(obj{}, nil, true),
		"SubmitRequest": submit,
		"BatchRequest": object(obj{"tasks": obj{"type": "array", "minItems": 1, "maxItems": 500, "items": obj{
			"description": "a task as POST /queues/{queue}/tasks takes it (a SubmitRequest object, without wait); an invalid one, even one that is not an object, gets an error in its result (field tasks[i]), the others are still submitted"}}},
			[]string{"tasks"}, true),
		"ClaimRequest":      object(obj{"queue": str(), "task_types": arrayOf(str()), "lease_for": durationOrSeconds(), "worker_id": str(), "max_tasks": integer(), "wait": obj{"type": []string{"string", "number"}, "description": "a duration or a number of seconds to long-poll for; only POST /queues/{queue}/claim/wait waits, the plain route refuses a wait over 0 (400 naming wait)"}}, nil, true),
		"CancelAckRequest":  withLease(obj{}),
		"HeartbeatRequest":  withLease(obj{"lease_for": durationOrSeconds()}),
		"CompleteRequest":   withLease(obj{"output": anyJSON()}),
		"FailRequest":       withLease(obj{"error": str(), "retryable": boolean()}),
		"RescheduleRequest": withLease(obj{"delay": durationOrSeconds(), "extend_expiration": durationOrSeconds()}),
		"ArtifactRequest":   object(obj{"name": str(), "size": obj{"type": "integer", "minimum": 1}}, []string{"name", "size"}, true),
		"QueueRequest":      object(obj{"ttl": durationOrSeconds(), "ttl_from": ref("TTLFrom"), "max_attempts": integer(), "timeout": durationOrSeconds(), "shards": integer(), "max_concurrency": integer(), "priority": priority, "target": ref("Target")}, nil, true),
		"ScheduleRequest":   object(obj{"id": str(), "task_type": str(), "input": anyJSON(), "queue": str(), "cron": str(), "timezone": str(), "ttl": durationOrSeconds(), "ttl_from": ref("TTLFrom"), "max_attempts": integer(), "priority": priority}, []string{"task_type", "cron"}, false),
	}
}

// errorResponse is the answer of a route with status: an error body whose
// code is one of codes. A 400 always names its field ("body" for the
// body as a whole, "query" for the query string).
func errorResponse(status int, codes []string) obj {
	e := obj{"allOf": []obj{ref("Error")}, "properties": obj{"code": obj{"enum": codes}}}
	if status == http.StatusBadRequest {
		e["required"] = []string{"field"}
	}
	return obj{
		"description": http.StatusText(status) + ": " + strings.Join(codes, ", "),
		"headers":     errorHeaders(status),
		"content": obj{"application/json": obj{"schema": object(obj{
			"error": e,
			"task":  ref("Task"),
		}, []string{"error"}, true)}},
	}
}

func errorHeaders(status int) obj {
	h := answerHeaders()
	switch status {
	case http.StatusServiceUnavailable:
		h["Retry-After"] = obj{"description": "seconds to wait before retrying", "schema": str()}
	case http.StatusMethodNotAllowed:
		h["Allow"] = obj{"description": "the methods the path is served with", "schema": str()}
	}
	return h
}

// answerHeaders are the headers every answer may carry, success or error:
// S3q-S3-Requests (HeaderS3Requests), from components.headers.
func answerHeaders() obj {
	return obj{HeaderS3Requests: obj{"$ref": "#/components/headers/" + HeaderS3Requests}}
}

// headers are the document's components.headers.
func headers() obj {
	return obj{HeaderS3Requests: obj{
		"description": "How many S3 requests (GET, PUT, LIST, DELETE, HEAD, each retry counted) the API made to answer this call: " +
			"what the call cost in S3 requests, the figure its log line gives as s3.requests. " +
			"Every answer carries it, success or error, when the API runs over a counted store, as every Lambda function and s3q dev do; " +
			"an answer from API Gateway itself (a 403 of IAM, a 429 of throttling) does not.",
		"schema":  obj{"type": "integer", "minimum": 0},
		"example": 2,
	}}
}

// errorResponseName is the name in components.responses of the error
// answer with codes: "not_running.lease_mismatch".
func errorResponseName(codes []string) string { return strings.Join(codes, ".") }

// operation is the document's description of one route. Its error answers
// refer to components.responses, which it adds to shared.
func (rt *route) operation(shared obj) obj {
	var params []obj
	for _, seg := range strings.Split(rt.pattern, "/") {
		if name, ok := strings.CutPrefix(seg, "{"); ok {
			name = strings.TrimSuffix(name, "}")
			p := obj{"name": name, "in": "path", "required": true}
			for k, v := range pathDocs[name] {
				p[k] = v
			}
			params = append(params, p)
		}
	}
	for _, name := range rt.query {
		p := obj{"name": name, "in": "query"}
		for k, v := range queryDocs[name] {
			p[k] = v
		}
		params = append(params, p)
	}
	responses := obj{}
	for _, a := range rt.answers {
		r := obj{"description": http.StatusText(a.status), "headers": answerHeaders()}
		if a.schema != "" {
			r["content"] = obj{"application/json": obj{"schema": ref(a.schema)}}
		}
		responses[strconv.Itoa(a.status)] = r
	}
	codes := slices.Clone(commonErrors)
	if rt.method != http.MethodGet {
		codes = append(codes, CodeTooLarge) // a body over the limit
	}
	for _, c := range rt.errors {
		if !slices.Contains(codes, c) {
			codes = append(codes, c)
		}
	}
	byStatus := map[int][]string{}
	for _, c := range codes {
		byStatus[codeStatus[c]] = append(byStatus[codeStatus[c]], c)
	}
	for status, cs := range byStatus {
		slices.Sort(cs)
		name := errorResponseName(cs)
		responses[strconv.Itoa(status)] = obj{"$ref": "#/components/responses/" + name}
		shared[name] = errorResponse(status, cs)
	}
	op := obj{
		"operationId":    strings.ToLower(rt.method) + strings.NewReplacer("/", "_", "{", "", "}", "", ".", "_").Replace(rt.pattern),
		"summary":        rt.summary,
		"responses":      responses,
		"security":       []obj{{"sigv4": []string{}}},
		"x-s3q-function": rt.function,
	}
	if len(params) > 0 {
		op["parameters"] = params
	}
	if rt.body != "" {
		op["requestBody"] = obj{"required": false, "content": obj{"application/json": obj{"schema": ref(rt.body)}}}
	}
	return op
}

// Document returns the OpenAPI 3.1 document of the API, as JSON (keys
// sorted, indented, ending in a newline): the document GET /openapi.json
// answers and shared/api/openapi.json holds.
func Document() []byte { return document() }

// document is buildDocument, once. It is set by init: the table refers to
// the handler that serves the document, which the table describes.
var document func() []byte

func init() { document = sync.OnceValue(buildDocument) }

// UnroutedResponses are the answers to a request no route matches, keyed
// NoRoute (404 not_found) and MethodNotAllowed (405 method_not_allowed,
// with Allow), as components.responses entries: the document describes
// them in words only (a response no operation refers to is an unused
// component), and openapitest adds them to check such answers.
func UnroutedResponses() map[string]any {
	return map[string]any{
		"NoRoute":          errorResponse(http.StatusNotFound, []string{CodeNotFound}),
		"MethodNotAllowed": errorResponse(http.StatusMethodNotAllowed, []string{CodeMethodNotAllowed}),
	}
}

func buildDocument() []byte {
	paths := obj{}
	responses := obj{}
	for _, rt := range table {
		item, _ := paths[rt.pattern].(obj)
		if item == nil {
			item = obj{}
			paths[rt.pattern] = item
		}
		item[strings.ToLower(rt.method)] = rt.operation(responses)
	}
	doc := obj{
		"openapi": "3.1.0",
		"info": obj{
			"title":   "s3q",
			"version": "1",
			"description": "s3q, a serverless task queue whose only state is one S3 bucket. " +
				"JSON in and out; errors are {\"error\":{\"code\",\"message\",\"field\"}}. A request no route matches answers " +
				"404 not_found, or 405 method_not_allowed with an Allow header when its path is served with other methods. " +
				"Unknown JSON fields and query parameters are 400 invalid_input naming them. " +
				"The server below is `s3q dev` (`make dev`); a deployment serves the same paths at its API Gateway URL, " +
				"https://{api-id}.execute-api.{region}.amazonaws.com (the stack's ApiUrl output), every request signed with AWS SigV4.",
			// No license is granted yet: an SPDX LicenseRef says so until the
			// owners choose one (then its SPDX identifier goes here).
			"license": obj{"name": "Proprietary (no license granted yet)", "identifier": "LicenseRef-s3q-proprietary"},
		},
		"servers": []obj{
			{"url": "http://127.0.0.1:8080", "description": "s3q dev (make dev): no authentication, loopback only"},
			{"url": "https://{apiId}.execute-api.{region}.amazonaws.com", "description": "a deployment: the stack's API Gateway URL, IAM (SigV4) auth",
				"variables": obj{"apiId": obj{"default": "abc123defg", "description": "the HTTP API's id"}, "region": obj{"default": "us-east-1", "description": "the AWS region of the stack"}}},
		},
		"paths": paths,
		"components": obj{
			"schemas":   schemas(),
			"responses": responses,
			"headers":   headers(),
			"securitySchemes": obj{
				"sigv4": obj{"type": "apiKey", "name": "Authorization", "in": "header", "x-amazon-apigateway-authtype": "awsSigv4",
					"description": "API Gateway IAM authorization: requests signed with AWS SigV4 (execute-api:Invoke)"},
			},
		},
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		panic("api: encode the OpenAPI document: " + err.Error()) // only plain maps and strings: a bug
	}
	return append(b, '\n')
}

// openAPI serves GET /openapi.json.
func (a *API) openAPI(*request) (reply, error) {
	return reply{status: http.StatusOK, body: json.RawMessage(Document())}, nil
}
