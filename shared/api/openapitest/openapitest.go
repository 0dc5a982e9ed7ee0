// Package openapitest is test support: it checks the answers of the API
// against its OpenAPI document (api.Document) with kin-openapi's
// openapi3filter.ValidateResponse, so that an answer the document does not
// describe fails the test that received it, and so does a request the API
// accepted that the document does not describe (ValidateRequest). The
// API's tests check every answer of their request helpers with it;
// lambdafn's and the emulator runs' every answer of a function to an HTTP
// event; the client's, worker's, CLI's, console's and README's tests
// every answer they receive (Transport, Proxy, Handler); the dispatcher's
// every push delivery (CheckDelivery). It records what the checked
// answers covered (coverage.go): the API's tests fail on a promised
// property or successful answer never seen.
package openapitest

import (
	"bytes"
	"context"
	"encoding/json"
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

// Load returns api.Document loaded and validated as OpenAPI 3.1 (see
// Document), or why it is not valid.
func Load() (*openapi3.T, error) { return load() }

var load = sync.OnceValues(func() (*openapi3.T, error) {
	// The document, with the answers of no route (api.UnroutedResponses)
	// among its components.
	var raw map[string]any
	if err := json.Unmarshal(api.Document(), &raw); err != nil {
		return nil, err
	}
	components, _ := raw["components"].(map[string]any)
	responses, _ := components["responses"].(map[string]any)
	if responses == nil {
		return nil, fmt.Errorf("the document has no components.responses")
	}
	for k, v := range api.UnroutedResponses() {
		responses[k] = v
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return nil, err
	}
	doc, err := openapi3.NewLoader().LoadFromData(b)
	if err != nil {
		return nil, err
	}
	return doc, doc.Validate(context.Background())
})

// Check fails t when the document does not describe the answer status,
// header and body to req (see Describe) or, when the API accepted it
// (2xx), does not describe req with its body reqBody (see DescribeRequest).
func Check(t testing.TB, req *http.Request, reqBody []byte, status int, header http.Header, body []byte) {
	t.Helper()
	doc := Document(t)
	fail := func(what string, err error, b []byte) {
		t.Helper()
		why, _, _ := strings.Cut(err.Error(), "\n") // the reason, without the schema and value
		if len(b) > 400 {
			b = append(b[:400:400], "..."...)
		}
		t.Errorf("%s %s %s, which the OpenAPI document does not describe: %s\n%s", req.Method, req.URL.Path, what, why, b)
	}
	if err := Describe(doc, req, status, header, body); err != nil {
		fail(fmt.Sprintf("answered %d", status), err, body)
	} else {
		key, s := answerSchema(doc, req, status)
		recordAnswer(key, status, s, body)
	}
	if status >= 200 && status < 300 && !partlyRefused(body) {
		if err := DescribeRequest(doc, req, reqBody); err != nil {
			fail("was accepted", err, reqBody)
		}
	}
}

// partlyRefused reports whether body is a batch's answer with an item
// refused: the API accepted the batch, not each of its items, so the
// request is not one the document describes.
func partlyRefused(body []byte) bool {
	var b struct {
		Results []struct {
			Error json.RawMessage `json:"error"`
		} `json:"results"`
	}
	if json.Unmarshal(body, &b) != nil {
		return false
	}
	for _, r := range b.Results {
		if len(r.Error) > 0 {
			return true
		}
	}
	return false
}

// answerSchema returns the key of the operation that answers req ("(no
// route)" when none does) and the schema of its answer with status.
func answerSchema(doc *openapi3.T, req *http.Request, status int) (string, *openapi3.SchemaRef) {
	rt, _, err := route(doc, req)
	var r *openapi3.ResponseRef
	key := "(no route)"
	if err == nil && rt != nil {
		key = req.Method + " " + rt.Path
		r = rt.Operation.Responses.Status(status)
	} else if err == nil {
		r = doc.Components.Responses["NoRoute"]
		if status == http.StatusMethodNotAllowed {
			r = doc.Components.Responses["MethodNotAllowed"]
		}
	}
	if r == nil || r.Value == nil {
		return key, nil
	}
	mt := r.Value.Content.Get("application/json")
	if mt == nil {
		return key, nil
	}
	return key, mt.Schema
}

// route returns the document's route for req (the one the API matches,
// api.Match) with its path parameters; nil when the API has none.
func route(doc *openapi3.T, req *http.Request) (*routers.Route, map[string]string, error) {
	key, ok := api.Match(req.Method, req.URL.Path)
	if !ok {
		return nil, nil, nil
	}
	_, pattern, _ := strings.Cut(key, " ")
	item := doc.Paths.Value(pattern)
	if item == nil || item.GetOperation(req.Method) == nil {
		return nil, nil, fmt.Errorf("the document has no operation %s", key)
	}
	params := map[string]string{}
	segs := strings.Split(req.URL.Path, "/")
	for i, p := range strings.Split(pattern, "/") {
		if name, ok := strings.CutPrefix(p, "{"); ok && i < len(segs) {
			params[strings.TrimSuffix(name, "}")] = segs[i]
		}
	}
	return &routers.Route{Spec: doc, Path: pattern, PathItem: item, Method: req.Method, Operation: item.GetOperation(req.Method)}, params, nil
}

// DescribeRequest returns why doc does not describe req with its body,
// or nil: its path and query parameters and its JSON body must be those of
// its route's operation. It is meant for requests the API accepted.
func DescribeRequest(doc *openapi3.T, req *http.Request, body []byte) error {
	rt, params, err := route(doc, req)
	if err != nil || rt == nil {
		return err
	}
	r := req.Clone(context.Background())
	r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	r.Header.Del("Content-Type")
	if len(body) > 0 {
		r.Header.Set("Content-Type", "application/json") // the API reads every body as JSON, whatever its Content-Type
	}
	return openapi3filter.ValidateRequest(context.Background(), &openapi3filter.RequestValidationInput{
		Request: r, PathParams: params, Route: rt,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc},
	})
}

// Describe returns why doc does not describe an answer to req, or nil:
// the status must be one of the route's, the body of that status's
// schema, the headers those it names. The route is the one the API
// matches (api.Match); an answer of no route must be the document's
// NoRoute (404) or MethodNotAllowed (405) of api.UnroutedResponses.
func Describe(doc *openapi3.T, req *http.Request, status int, header http.Header, body []byte) error {
	rt, _, err := route(doc, req)
	if err != nil {
		return err
	}
	if rt == nil {
		name := "NoRoute"
		if status == http.StatusMethodNotAllowed {
			name = "MethodNotAllowed"
		}
		op := &openapi3.Operation{Responses: openapi3.NewResponses(openapi3.WithStatus(status, doc.Components.Responses[name]))}
		op.Responses.Delete("default")
		rt = &routers.Route{Spec: doc, PathItem: &openapi3.PathItem{}, Method: req.Method, Operation: op}
	}
	if status == http.StatusNoContent && len(body) == 0 {
		header = header.Clone()
		header.Del("Content-Type")
	}
	return openapi3filter.ValidateResponse(context.Background(), &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, Route: rt},
		Status:                 status,
		Header:                 header,
		Body:                   io.NopCloser(bytes.NewReader(body)),
		Options:                &openapi3filter.Options{IncludeResponseStatus: true},
	})
}

// CheckDelivery fails t when the document's push delivery (its webhook
// taskDelivery) does not describe the request r with its body: its
// headers and its JSON body. The dispatch tests check every delivery
// their targets receive with it.
func CheckDelivery(t testing.TB, r *http.Request, body []byte) {
	t.Helper()
	doc := Document(t)
	if err := DescribeDelivery(doc, r, body); err != nil {
		why, _, _ := strings.Cut(err.Error(), "\n")
		if len(body) > 400 {
			body = append(body[:400:400], "..."...)
		}
		t.Errorf("a push delivery the OpenAPI document's webhook does not describe: %s\n%s", why, body)
		return
	}
	var s *openapi3.SchemaRef
	if mt := doc.Webhooks[api.WebhookTaskDelivery].Post.RequestBody.Value.Content.Get("application/json"); mt != nil {
		s = mt.Schema
	}
	recordAnswer("webhook "+api.WebhookTaskDelivery, 0, s, body)
}

// DescribeDelivery returns why doc's push delivery does not describe the
// request r with its body, or nil.
func DescribeDelivery(doc *openapi3.T, r *http.Request, body []byte) error {
	item := doc.Webhooks[api.WebhookTaskDelivery]
	if item == nil || item.Post == nil {
		return fmt.Errorf("the document has no webhook %s", api.WebhookTaskDelivery)
	}
	req := r.Clone(context.Background())
	req.Body, req.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	return openapi3filter.ValidateRequest(context.Background(), &openapi3filter.RequestValidationInput{
		Request: req, Route: &routers.Route{Spec: doc, Path: api.WebhookTaskDelivery, PathItem: item, Method: http.MethodPost, Operation: item.Post},
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc},
	})
}
