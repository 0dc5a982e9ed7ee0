package api

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/s3q/s3q/shared/wire"
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
	"queue":     {"description": "only tasks of this queue", "schema": queueName()},
	"task_type": {"description": "only tasks of this type", "schema": taskType()},
	"priority":  {"description": "only tasks of this priority, 1 (highest) to 5 (lowest)", "schema": obj{"type": "integer", "minimum": 1, "maximum": 5}},
	"limit":     {"description": "at most this many results", "schema": obj{"type": "integer", "minimum": 1}},
	"cursor":    {"description": "the next_cursor of the previous page", "schema": obj{"type": "string"}},
	"counts":    {"description": "with each queue's counts (default true)", "schema": obj{"type": "boolean"}},
	"since":     {"description": "only fires at or after this time", "schema": dateTime()},
}

// pathDocs describes each path wildcard.
var pathDocs = map[string]obj{
	"queue":       {"description": "the queue's name", "schema": queueName()},
	"id":          {"description": "the task's id (a lowercase UUIDv7)", "schema": taskID()},
	"schedule.id": {"description": "the schedule's id", "schema": scheduleID()},
	"name":        {"description": "the artifact's name", "schema": obj{"type": "string", "pattern": patternArtifact}},
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
	case http.StatusServiceUnavailable, http.StatusTooManyRequests:
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
			key := name
			if name == "id" && strings.Contains(rt.pattern, "/schedules/") {
				key = "schedule.id"
			}
			for k, v := range pathDocs[key] {
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
		if a.status == http.StatusNoContent && (strings.HasSuffix(rt.pattern, "/claim") || strings.HasSuffix(rt.pattern, "/claim/wait")) {
			r["description"] = "No Content: no task is available, or the queue's rate limit (max_per_second) holds the claim back; then Retry-After and " +
				wire.HeaderRetryAfterMs + " say when a task may start"
			h := answerHeaders()
			h["Retry-After"] = obj{"description": "a claim held back by the queue's rate limit: whole seconds (rounded up) until a task may start; claim again then",
				"schema": obj{"type": "integer", "minimum": 0}}
			h[wire.HeaderRetryAfterMs] = obj{"description": "the same wait in milliseconds (rounded up), for rates over one a second",
				"schema": obj{"type": "integer", "minimum": 0}}
			r["headers"] = h
		}
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
	doc := operations[rt.key()]
	op := obj{
		"operationId":    doc.id,
		"tags":           []string{doc.tag},
		"summary":        rt.summary,
		"responses":      responses,
		"security":       []obj{{"sigv4": []string{}}},
		"x-s3q-function": rt.function,
	}
	if doc.description != "" {
		op["description"] = doc.description
	}
	if len(params) > 0 {
		op["parameters"] = params
	}
	if rt.body != "" {
		// A body is required when its schema has a required field; a
		// route whose every field is optional takes no body as {}.
		op["requestBody"] = obj{"required": len(requestRequired[rt.body]) > 0, "content": obj{"application/json": obj{"schema": ref(rt.body)}}}
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
		"tags":     tags,
		"security": []obj{{"sigv4": []string{}}},
		"paths":    paths,
		"webhooks": webhooks(),
		"components": obj{
			"schemas":   schemas(),
			"responses": responses,
			"headers":   headers(),
			"securitySchemes": obj{
				"pushSignature": pushSignatureScheme(),
				"sigv4": obj{"type": "apiKey", "name": "Authorization", "in": "header", "x-amazon-apigateway-authtype": "awsSigv4",
					"description": "API Gateway IAM authorization: requests signed with AWS SigV4 (service execute-api, action execute-api:Invoke) by a principal whose IAM policy allows the route. " +
						"Every operation requires it on a deployment; s3q dev (make dev) does not check it, and listens on loopback only."},
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
