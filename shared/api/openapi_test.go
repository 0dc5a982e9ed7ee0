package api_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/s3q/s3q/shared/api"
	"github.com/s3q/s3q/shared/api/openapitest"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
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

// rareProperties are the properties of answers that the API's tests do
// not see, each with why: shown only in states the tests of this package
// do not reach.
var rareProperties = map[string]string{
	"Counts.at_least": "a count stops at 10 LIST pages of a prefix (10,000 keys): a queue that large is not made in a unit test; queue's count cases cover it",
}

// checkOpenAPICoverage returns 1, saying which, when a property the
// document promises in an answer was carried by no answer the package's
// tests checked (rareProperties aside), or a successful answer a route
// promises was never received, after a run of every test (a run
// narrowed by -run or -skip, or a fuzzing run, checks nothing). It
// writes what was checked to $S3Q_OPENAPI_COVERAGE, when set.
func checkOpenAPICoverage() int {
	if err := openapitest.WriteReport(); err != nil {
		fmt.Fprintln(os.Stderr, "openapi coverage:", err)
		return 1
	}
	for _, name := range []string{"test.run", "test.skip", "test.fuzz"} {
		if f := flag.Lookup(name); f != nil && f.Value.String() != "" {
			return 0
		}
	}
	doc, err := openapitest.Load()
	if err != nil {
		fmt.Fprintln(os.Stderr, "openapi coverage:", err)
		return 1
	}
	if unseen := openapitest.Unseen(doc, openapitest.AnswerComponents(doc), rareProperties); len(unseen) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: the OpenAPI document promises properties in answers that no answer of the tests carried "+
			"(send them in some test, remove them from the document, or add them to rareProperties saying why):\n\t%s\n",
			strings.Join(unseen, "\n\t"))
		return 1
	}
	if unseen := openapitest.UnseenSuccesses(doc, nil); len(unseen) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: the OpenAPI document promises successful answers that no test received "+
			"(answer them in some test, or remove them from the route table):\n\t%s\n", strings.Join(unseen, "\n\t"))
		return 1
	}
	return 0
}

// Every operation has a camelCase operationId of its own, one tag of the
// document's, and requires sigv4.
func TestOpenAPIOperationsHaveIDsTagsAndSecurity(t *testing.T) {
	doc := openAPI(t)
	tags := map[string]bool{}
	for _, tag := range doc.Tags {
		tags[tag.Name] = true
	}
	camel := regexp.MustCompile(`^[a-z][a-zA-Z]+$`)
	ids := map[string]string{}
	for pattern, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			key := method + " " + pattern
			if !camel.MatchString(op.OperationID) {
				t.Errorf("%s: operationId %q is not camelCase", key, op.OperationID)
			}
			if other, ok := ids[op.OperationID]; ok {
				t.Errorf("%s and %s share the operationId %s", key, other, op.OperationID)
			}
			ids[op.OperationID] = key
			if len(op.Tags) != 1 || !tags[op.Tags[0]] {
				t.Errorf("%s: tags %v, want one of the document's", key, op.Tags)
			}
			if op.Security == nil || len(*op.Security) != 1 || (*op.Security)[0]["sigv4"] == nil {
				t.Errorf("%s: security %v, want sigv4", key, op.Security)
			}
		}
	}
	if len(ids) != len(api.Routes()) {
		t.Errorf("%d operationIds for %d routes", len(ids), len(api.Routes()))
	}
}

// The patterns the document gives names and ids are those the API
// checks: a value the API takes matches, one it refuses does not.
func TestOpenAPIPatternsAreTheAPIs(t *testing.T) {
	doc := openAPI(t)
	e := newEnv(t, nil, api.Options{})
	prop := func(schema, name string) *regexp.Regexp {
		s := doc.Components.Schemas[schema].Value.Properties[name].Value
		return regexp.MustCompile(s.Pattern)
	}
	for _, c := range []struct {
		value string
		ok    bool
	}{{"emails", true}, {"a_b-C9", true}, {strings.Repeat("q", 64), true}, {strings.Repeat("q", 65), false}, {"a.b", false}, {"a b", false}} {
		if got := prop("Task", "queue").MatchString(c.value); got != c.ok {
			t.Errorf("queue pattern on %q: %v, want %v", c.value, got, c.ok)
		}
		if r := e.do("PUT", "/queues/"+url.PathEscape(c.value), ""); (r.status < 300) != c.ok {
			t.Errorf("PUT /queues/%s: %d, want ok=%v", c.value, r.status, c.ok)
		}
	}
	id := queue.NewID(t0)
	for _, c := range []struct {
		value string
		ok    bool
	}{{id, true}, {strings.ToUpper(id), false}, {"0190a1b2-c3d4-4e5f-8a9b-0c1d2e3f4a5b", false}, {"x", false}} {
		if got := prop("Task", "id").MatchString(c.value); got != c.ok {
			t.Errorf("task id pattern on %q: %v, want %v", c.value, got, c.ok)
		}
		r := e.do("POST", "/queues/default/tasks", `{"id":"`+c.value+`","task_type":"t"}`)
		if (r.status < 300) != c.ok {
			t.Errorf("submit with id %q: %d, want ok=%v", c.value, r.status, c.ok)
		}
	}
	for _, c := range []struct {
		value string
		ok    bool
	}{{"t", true}, {"email.send:v2", true}, {"a/b", false}, {strings.Repeat("t", 129), false}} {
		if got := prop("Task", "task_type").MatchString(c.value); got != c.ok {
			t.Errorf("task type pattern on %q: %v, want %v", c.value, got, c.ok)
		}
		if r := e.do("POST", "/queues/default/tasks", `{"task_type":"`+c.value+`"}`); (r.status < 300) != c.ok {
			t.Errorf("submit with task_type %q: %d, want ok=%v", c.value, r.status, c.ok)
		}
	}
}

// The push target the document describes by hand (a oneOf) has exactly
// the fields of queues.Target.
func TestOpenAPITargetHasTheFieldsOfQueuesTarget(t *testing.T) {
	doc := openAPI(t)
	var got []string
	for _, branch := range doc.Components.Schemas["Target"].Value.OneOf {
		for k := range branch.Value.Properties {
			got = append(got, k)
		}
	}
	var want []string
	rt := reflect.TypeFor[queues.Target]()
	for i := range rt.NumField() {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		want = append(want, name)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("Target's properties %v, queues.Target's fields %v", got, want)
	}
}

// docs/api.md lists every operation with its tag, operationId and route.
func TestOpenAPIOperationsAreListedInTheDocs(t *testing.T) {
	b, err := os.ReadFile("../../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := openAPI(t)
	for pattern, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			row := fmt.Sprintf("| %s | `%s` | `%s %s` |", op.Tags[0], op.OperationID, method, pattern)
			if !bytes.Contains(b, []byte(row)) {
				t.Errorf("docs/api.md has no row %s", row)
			}
		}
	}
}

// The webhook describes a push delivery, and the check catches one it
// does not: a header missing or malformed, a field the body should not
// have, a task without its lease.
func TestOpenAPIWebhookDescribesThePushDelivery(t *testing.T) {
	doc := openAPI(t)
	task := `{"id":"` + unknownID + `","queue":"q","task_type":"t","status":"running","created_at":"2026-01-28T09:00:00Z","updated_at":"2026-01-28T09:00:00Z","available_at":"2026-01-28T09:00:00Z","expires_at":null,"attempt":1,"max_attempts":3,"timeout":"5m"}`
	lease := `{"task_id":"` + unknownID + `","token":"tok","expires_at":"2026-01-28T09:05:00Z"}`
	body := `{"task":` + task + `,"lease":` + lease + `,"deadline":"2026-01-28T09:04:58Z"}`
	header := func() http.Header {
		return http.Header{
			"Content-Type":  {"application/json"},
			"S3q-Signature": {"t=1769590800,v1=54b4e83e0d8936f2f22b2101999c9a030fed8540d7b34cebce76a6dd863428d8"},
			"S3q-Queue":     {"q"}, "S3q-Task-Id": {unknownID}, "S3q-Attempt": {"1"},
		}
	}
	deliver := func(h http.Header) *http.Request {
		r := httptest.NewRequest("POST", "https://hooks.example.com/s3q", nil)
		r.Header = h
		return r
	}
	if err := openapitest.DescribeDelivery(doc, deliver(header()), []byte(body)); err != nil {
		t.Fatalf("a delivery is refused: %v", err)
	}
	for name, c := range map[string]struct {
		edit func(http.Header)
		body string
	}{
		"no_signature":          {func(h http.Header) { h.Del("S3q-Signature") }, body},
		"a_signature_without_t": {func(h http.Header) { h.Set("S3q-Signature", "v1=00") }, body},
		"attempt_0":             {func(h http.Header) { h.Set("S3q-Attempt", "0") }, body},
		"no_task_id":            {func(h http.Header) { h.Del("S3q-Task-Id") }, body},
		"a_field_more":          {func(http.Header) {}, strings.Replace(body, `{"task"`, `{"secret":"x","task"`, 1)},
		"no_lease":              {func(http.Header) {}, `{"task":` + task + `,"deadline":"2026-01-28T09:04:58Z"}`},
		"a_task_with_its_token": {func(http.Header) {}, strings.Replace(body, `"task_type":"t"`, `"task_type":"t","lease_token":"tok"`, 1)},
	} {
		h := header()
		c.edit(h)
		if openapitest.DescribeDelivery(doc, deliver(h), []byte(c.body)) == nil {
			t.Errorf("%s: passed", name)
		}
	}
	w := doc.Webhooks[api.WebhookTaskDelivery].Post
	for _, status := range []string{"2XX", "429", "4XX", "5XX"} {
		if w.Responses.Value(status) == nil {
			t.Errorf("the webhook does not say what a %s answer does", status)
		}
	}
}

// Every object the document describes with properties, in a schema, an
// answer or the push delivery, is closed (additionalProperties: false),
// but the document's own open parts (the OpenAPI answer's members).
func TestOpenAPIObjectsAreClosed(t *testing.T) {
	var doc map[string]any
	if err := json.Unmarshal(api.Document(), &doc); err != nil {
		t.Fatal(err)
	}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			if props, ok := v["properties"].(map[string]any); ok && !strings.HasPrefix(path, "/components/schemas/OpenAPI/properties/") {
				if _, narrowing := v["allOf"]; !narrowing && v["additionalProperties"] != false && len(props) > 0 {
					t.Errorf("%s is not closed", path)
				}
			}
			for k, c := range v {
				walk(path+"/"+k, c)
			}
		case []any:
			for i, c := range v {
				walk(fmt.Sprintf("%s/%d", path, i), c)
			}
		}
	}
	for _, part := range []string{"components", "paths", "webhooks"} {
		walk("/"+part, doc[part])
	}
}
