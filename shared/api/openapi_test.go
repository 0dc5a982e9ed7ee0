package api_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"

	"github.com/s3q/s3q/shared/api"
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

var (
	docOnce sync.Once
	docT    *openapi3.T
	docErr  error
)

// openAPI loads and validates the document.
func openAPI(t *testing.T) *openapi3.T {
	t.Helper()
	docOnce.Do(func() {
		docT, docErr = openapi3.NewLoader().LoadFromData(api.Document())
		if docErr == nil {
			docErr = docT.Validate(t.Context())
		}
	})
	if docErr != nil {
		t.Fatalf("the OpenAPI document: %v", docErr)
	}
	return docT
}

// checkAnswer fails t when the document does not describe an answer of
// the API to req (see answerError).
func checkAnswer(t *testing.T, req *http.Request, status int, header http.Header, body []byte) {
	t.Helper()
	if err := answerError(openAPI(t), req, status, header, body); err != nil {
		why, _, _ := strings.Cut(err.Error(), "\n") // the reason, without the schema and value
		t.Errorf("%s %s answered %d, which the OpenAPI document does not describe: %s\n%s", req.Method, req.URL.Path, status, why, clipBytes(body))
	}
}

// answerError returns why doc does not describe an answer to req, or nil:
// the status must be one of the route's, the body of that status's schema
// (kin-openapi's openapi3filter.ValidateResponse). An answer of no route
// must be the document's NoRoute (404) or MethodNotAllowed (405).
func answerError(doc *openapi3.T, req *http.Request, status int, header http.Header, body []byte) error {
	var op *openapi3.Operation
	item, pattern := &openapi3.PathItem{}, ""
	if key, ok := api.Match(req.Method, req.URL.Path); ok {
		_, pattern, _ = strings.Cut(key, " ")
		if item = doc.Paths.Value(pattern); item != nil {
			op = item.GetOperation(req.Method)
		}
		if op == nil {
			return fmt.Errorf("the document has no operation %s", key)
		}
	} else {
		name := "NoRoute"
		if status == http.StatusMethodNotAllowed {
			name = "MethodNotAllowed"
		}
		op = &openapi3.Operation{Responses: openapi3.NewResponses(openapi3.WithStatus(status, doc.Components.Responses[name]))}
		op.Responses.Delete("default")
	}
	if status == http.StatusNoContent && len(body) == 0 {
		header = header.Clone()
		header.Del("Content-Type")
	}
	return openapi3filter.ValidateResponse(context.Background(), &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{
			Request: req,
			Route:   &routers.Route{Spec: doc, Path: pattern, PathItem: item, Method: req.Method, Operation: op},
		},
		Status:  status,
		Header:  header,
		Body:    io.NopCloser(bytes.NewReader(body)),
		Options: &openapi3filter.Options{IncludeResponseStatus: true},
	})
}

// The check catches what the document does not describe: a status the
// route does not answer, an error code it does not answer, a field a task
// does not have, a 404 of no route with another code.
func TestAnswersTheDocumentDoesNotDescribeAreCaught(t *testing.T) {
	doc := openAPI(t)
	jsonHeader := http.Header{"Content-Type": {"application/json"}}
	task := `{"id":"` + unknownID + `","queue":"q","task_type":"t","status":"pending","created_at":"2026-01-28T09:00:00Z","updated_at":"2026-01-28T09:00:00Z","available_at":"2026-01-28T09:00:00Z","expires_at":null,"attempt":0,"max_attempts":3,"timeout":"5m"}`
	get := httptest.NewRequest("GET", "/queues/q/tasks/"+unknownID, nil)
	if err := answerError(doc, get, 200, jsonHeader, []byte(`{"task":`+task+`}`)); err != nil {
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
	} {
		if answerError(doc, c.req, c.status, jsonHeader, []byte(c.body)) == nil {
			t.Errorf("%s: passed", c.name)
		}
	}
}
