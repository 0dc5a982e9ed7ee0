// Package openapitest is test support: it checks the answers of the API
// against its OpenAPI document (api.Document) with kin-openapi's
// openapi3filter.ValidateResponse, so that an answer the document does not
// describe fails the test that received it. The API's tests check every
// answer of their request helpers with it, and lambdafn's every answer of
// a function to a sample event.
package openapitest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"

	"github.com/s3q/s3q/shared/api"
)

// Document returns api.Document loaded and validated as OpenAPI 3.1; it
// fails t when it is not valid.
func Document(t testing.TB) *openapi3.T {
	t.Helper()
	doc, err := load()
	if err != nil {
		t.Fatalf("the OpenAPI document: %v", err)
	}
	return doc
}

var load = sync.OnceValues(func() (*openapi3.T, error) {
	doc, err := openapi3.NewLoader().LoadFromData(api.Document())
	if err != nil {
		return nil, err
	}
	return doc, doc.Validate(context.Background())
})

// Check fails t when the document does not describe the answer status,
// header and body to req (see Describe).
func Check(t testing.TB, req *http.Request, status int, header http.Header, body []byte) {
	t.Helper()
	if err := Describe(Document(t), req, status, header, body); err != nil {
		why, _, _ := strings.Cut(err.Error(), "\n") // the reason, without the schema and value
		if len(body) > 400 {
			body = append(body[:400:400], "..."...)
		}
		t.Errorf("%s %s answered %d, which the OpenAPI document does not describe: %s\n%s", req.Method, req.URL.Path, status, why, body)
	}
}

// Describe returns why doc does not describe an answer to req, or nil:
// the status must be one of the route's, the body of that status's
// schema, the headers those it names. The route is the one the API
// matches (api.Match); an answer of no route must be the document's
// NoRoute (404) or MethodNotAllowed (405).
func Describe(doc *openapi3.T, req *http.Request, status int, header http.Header, body []byte) error {
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
		item = &openapi3.PathItem{}
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
