package api_test

import (
	"bytes"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/s3q/s3q/shared/api"
	"github.com/s3q/s3q/shared/api/openapitest"
)

var update = flag.Bool("update", false, "rewrite openapi.json from the route table")

// The committed document is the one the route table generates: run
// `go test ./shared/api -run TestOpenAPIDocumentIsCommitted -update` after
// changing a route.
func TestOpenAPIDocumentIsCommitted(t *testing.T) {
	const path = "openapi.json"
	if *update {
		if err := os.WriteFile(path, api.Document(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./shared/api -run TestOpenAPIDocumentIsCommitted -update writes it)", err)
	}
	if !bytes.Equal(b, api.Document()) {
		t.Fatalf("shared/api/openapi.json differs from what the route table generates; run go test ./shared/api -run TestOpenAPIDocumentIsCommitted -update")
	}
}

// The document is valid OpenAPI 3.1 and describes every route of the table.
func TestOpenAPIDocumentDescribesEveryRoute(t *testing.T) {
	doc := openAPI(t)
	for _, key := range api.Routes() {
		method, pattern, _ := strings.Cut(key, " ")
		item := doc.Paths.Value(pattern)
		if item == nil || item.GetOperation(method) == nil {
			t.Errorf("the document has no %s", key)
		}
	}
	e := newEnv(t, nil, api.Options{})
	if r := e.do("GET", "/openapi.json", ""); r.status != 200 || r.body["openapi"] != "3.1.0" {
		t.Errorf("GET /openapi.json: %d %s", r.status, clipBytes(r.raw))
	}
}

// Every answer the document describes, success or error, routed or not,
// names the S3q-S3-Requests header the API sets (api.HeaderS3Requests),
// and an answer whose count is not a whole number is caught.
func TestOpenAPIDocumentDescribesTheS3RequestsHeader(t *testing.T) {
	doc := openAPI(t)
	h := doc.Components.Headers[api.HeaderS3Requests]
	if h == nil || h.Value == nil || h.Value.Description == "" || !h.Value.Schema.Value.Type.Is("integer") {
		t.Fatalf("components.headers has no integer %s", api.HeaderS3Requests)
	}
	answers := 0
	for pattern, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			for status, r := range op.Responses.Map() {
				answers++
				if r.Value == nil || r.Value.Headers[api.HeaderS3Requests] == nil {
					t.Errorf("%s %s: its %s answer does not name %s", method, pattern, status, api.HeaderS3Requests)
				}
			}
		}
	}
	for name, r := range doc.Components.Responses {
		if r.Value.Headers[api.HeaderS3Requests] == nil {
			t.Errorf("components.responses.%s does not name %s", name, api.HeaderS3Requests)
		}
	}
	if answers < 100 {
		t.Fatalf("only %d answers: is the document complete?", answers)
	}

	// The API's own answers carry it; the document checks its value.
	e := newEnv(t, nil, api.Options{})
	for _, path := range []string{"/queues", "/nope"} {
		if r := e.do("GET", path, ""); r.header.Get(api.HeaderS3Requests) == "" {
			t.Errorf("GET %s: %d without %s", path, r.status, api.HeaderS3Requests)
		}
	}
	get := httptest.NewRequest("GET", "/queues/q/tasks/"+unknownID, nil)
	bad := http.Header{"Content-Type": {"application/json"}, api.HeaderS3Requests: {"two"}}
	if openapitest.Describe(doc, get, 404, bad, []byte(`{"error":{"code":"not_found","message":"m"}}`)) == nil {
		t.Errorf("an answer with %s: two passed", api.HeaderS3Requests)
	}
}

// openAPI loads and validates the document.
func openAPI(t *testing.T) *openapi3.T { return openapitest.Document(t) }

// checkAnswer fails t when the document does not describe an answer of
// the API to req, or req with its body reqBody when the API accepted it.
func checkAnswer(t *testing.T, req *http.Request, reqBody string, status int, header http.Header, body []byte) {
	t.Helper()
	openapitest.Check(t, req, []byte(reqBody), status, header, body)
}

// The check catches what the document does not describe: a status the
// route does not answer, an error code it does not answer, a field a task
// does not have, a 404 of no route with another code.
func TestAnswersTheDocumentDoesNotDescribeAreCaught(t *testing.T) {
	doc := openAPI(t)
	jsonHeader := http.Header{"Content-Type": {"application/json"}}
	task := `{"id":"` + unknownID + `","queue":"q","task_type":"t","status":"pending","created_at":"2026-01-28T09:00:00Z","updated_at":"2026-01-28T09:00:00Z","available_at":"2026-01-28T09:00:00Z","expires_at":null,"attempt":0,"max_attempts":3,"timeout":"5m"}`
	get := httptest.NewRequest("GET", "/queues/q/tasks/"+unknownID, nil)
	if err := openapitest.Describe(doc, get, 200, jsonHeader, []byte(`{"task":`+task+`}`)); err != nil {
		t.Fatalf("a task is refused: %v", err)
	}
	for _, c := range []struct {
		name   string
		req    *http.Request
		status int
		body   string
	}{
		{"a_status_the_route_does_not_answer", httptest.NewRequest("DELETE", "/queues/q", nil), 200, `{}`},
		{"an_error_code_the_route_does_not_answer", get, 409, `{"error":{"code":"lease_expired","message":"m"}}`},
		{"an_unknown_error_code", get, 404, `{"error":{"code":"gone","message":"m"}}`},
		{"a_task_with_its_lease_token", get, 200, `{"task":` + strings.Replace(task, `{`, `{"lease_token":"x",`, 1) + `}`},
		{"a_task_without_expires_at", get, 200, `{"task":` + strings.Replace(task, `"expires_at":null,`, ``, 1) + `}`},
		{"no_route_with_another_code", httptest.NewRequest("GET", "/nope", nil), 404, `{"error":{"code":"invalid_input","message":"m"}}`},
		{"a_400_without_its_field", httptest.NewRequest("POST", "/queues/q/tasks", nil), 400, `{"error":{"code":"invalid_input","message":"m"}}`},
	} {
		if openapitest.Describe(doc, c.req, c.status, jsonHeader, []byte(c.body)) == nil {
			t.Errorf("%s: passed", c.name)
		}
	}
}
