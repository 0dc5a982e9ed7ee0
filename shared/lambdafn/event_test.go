package lambdafn_test

import (
	"encoding/base64"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/s3q/s3q/shared/api"
	"github.com/s3q/s3q/shared/lambdafn"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/store/memstore"
)

func TestEventConversion(t *testing.T) {
	q, decls := queues.New(memstore.New(), queues.Options{})
	t.Run("a_base64_body_is_decoded", func(t *testing.T) {
		ev := events.APIGatewayV2HTTPRequest{
			RawPath: "/queues/default/tasks", Body: base64.StdEncoding.EncodeToString([]byte(`{"task_type":"t"}`)), IsBase64Encoded: true,
			RequestContext: events.APIGatewayV2HTTPRequestContext{HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "POST"}},
		}
		if resp, _ := invoke(t, "submit", deps(q, decls), mustJSON(t, ev)); resp.StatusCode != 201 {
			t.Errorf("%d %s", resp.StatusCode, resp.Body)
		}
	})
	t.Run("the_method_comes_from_the_route_key_when_the_context_has_none", func(t *testing.T) {
		ev := events.APIGatewayV2HTTPRequest{RouteKey: "GET /tasks", RawPath: "/tasks", RawQueryString: "limit=5"}
		if resp, _ := invoke(t, "tasks", deps(q, decls), mustJSON(t, ev)); resp.StatusCode != 200 {
			t.Errorf("%d %s", resp.StatusCode, resp.Body)
		}
	})
	t.Run("query_parameters_are_read_when_there_is_no_raw_query", func(t *testing.T) {
		ev := events.APIGatewayV2HTTPRequest{RouteKey: "GET /tasks", RawPath: "/tasks", QueryStringParameters: map[string]string{"limit": "x"}}
		if resp, body := invoke(t, "tasks", deps(q, decls), mustJSON(t, ev)); resp.StatusCode != 400 || dig(body, "error.field") != "limit" {
			t.Errorf("%d %s", resp.StatusCode, resp.Body)
		}
	})
	for name, c := range map[string]struct {
		ev    events.APIGatewayV2HTTPRequest
		field string
	}{
		"an_event_without_method_or_path_is_400_naming_rawPath": {events.APIGatewayV2HTTPRequest{}, "rawPath"},
		"a_body_that_is_not_base64_is_400_naming_body":          {events.APIGatewayV2HTTPRequest{RouteKey: "POST /tasks", RawPath: "/tasks", Body: "%%%", IsBase64Encoded: true}, "body"},
		"a_path_that_is_not_a_url_path_is_400_naming_rawPath":   {events.APIGatewayV2HTTPRequest{RouteKey: "GET /tasks", RawPath: "tasks"}, "rawPath"},
		"a_method_that_is_not_a_token_is_400_naming_it": {events.APIGatewayV2HTTPRequest{RawPath: "/tasks", RequestContext: events.APIGatewayV2HTTPRequestContext{HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "GE T"}}},
			"requestContext.http.method"},
	} {
		t.Run(name, func(t *testing.T) {
			resp, body := invoke(t, "tasks", deps(q, decls), mustJSON(t, c.ev))
			if resp.StatusCode != 400 || dig(body, "error.code") != "invalid_input" || dig(body, "error.field") != c.field || dig(body, "error.message") == "" {
				t.Errorf("%d %s, want 400 invalid_input naming %s", resp.StatusCode, resp.Body, c.field)
			}
		})
	}
	t.Run("a_payload_that_is_not_an_event_is_an_invoke_error", func(t *testing.T) {
		h, _ := lambdafn.New("tasks", deps(q, decls))
		if _, err := h.Invoke(t.Context(), []byte(`[1,2]`)); err == nil {
			t.Error("no error")
		}
	})
	t.Run("event_from_request_round_trips_through_a_handler", func(t *testing.T) {
		r := httptest.NewRequest("POST", "/queues/default/tasks?x=1", strings.NewReader(`{"task_type":"t"}`))
		r.Header.Set("Cookie", "a=1; b=2")
		ev, err := lambdafn.EventFromRequest(r, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if ev.RouteKey != "POST /queues/{queue}/tasks" || ev.PathParameters["queue"] != "default" || ev.RawQueryString != "x=1" || ev.RequestContext.HTTP.Method != "POST" || len(ev.Cookies) != 2 {
			t.Errorf("event %+v", ev)
		}
		// The unknown query parameter x comes back as a 400 naming it.
		if resp, body := invoke(t, "submit", deps(q, decls), mustJSON(t, ev)); resp.StatusCode != 400 || dig(body, "error.field") != "x" {
			t.Errorf("%d %s", resp.StatusCode, resp.Body)
		}
	})
	t.Run("event_from_request_sets_the_path_parameters", func(t *testing.T) {
		id := "01900000-0000-7000-8000-000000000000"
		ev, _ := lambdafn.EventFromRequest(httptest.NewRequest("GET", "/queues/a/tasks/"+id+"/artifacts/r.pdf", nil), 1<<20)
		if ev.RouteKey != "GET /queues/{queue}/tasks/{id}/artifacts/{name}" || ev.PathParameters["id"] != id ||
			ev.PathParameters["queue"] != "a" || ev.PathParameters["name"] != "r.pdf" {
			t.Errorf("event %+v", ev)
		}
	})
}

func TestNew(t *testing.T) {
	if _, err := lambdafn.New("nope", lambdafn.Deps{}); err == nil || !strings.Contains(err.Error(), "sweep-expired") {
		t.Errorf("an unknown function: %v", err)
	}
	if _, err := lambdafn.New("claim", lambdafn.Deps{}); err == nil {
		t.Errorf("an HTTP function without a queue: no error")
	}
	q, decls := queues.New(memstore.New(), queues.Options{})
	if _, err := lambdafn.New("claim", lambdafn.Deps{Queue: q}); err == nil {
		t.Errorf("an HTTP function without the queue's declarations: no error")
	}
	for _, name := range lambdafn.Names() {
		if _, err := lambdafn.New(name, lambdafn.Deps{Queue: q, Queues: decls}); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if fn, ok := lambdafn.FunctionFor("POST /queues/{queue}/tasks/{id}/fail"); !ok || fn != "tasks" {
		t.Errorf("FunctionFor = %q %v", fn, ok)
	}
	// Every route of the API's table has its function.
	for _, key := range api.Routes() {
		if _, ok := lambdafn.FunctionFor(key); !ok {
			t.Errorf("no function serves %s", key)
		}
	}
	for _, c := range []struct{ method, path, want string }{
		{"POST", "/queues/a/tasks", "submit"},
		{"POST", "/queues/a/tasks/batch", "submit"},
		{"GET", "/queues/a/claim", "claim"}, // the owner of the path answers 405
		{"GET", "/queues/a/tasks", "tasks"},
		{"GET", "/tasks", "tasks"},
		{"PUT", "/queues/a", "tasks"},
		{"POST", "/queues/a/schedules", "schedules"},
		{"POST", "/tasks", "tasks"}, // the unscoped routes are gone: 405 from the owner of GET /tasks
		{"GET", "/nope", "tasks"},   // nobody's: tasks answers 404
		{"GET", "/openapi.json", "tasks"},
	} {
		if got := lambdafn.FunctionForRequest(c.method, c.path); got != c.want {
			t.Errorf("FunctionForRequest(%s %s) = %s, want %s", c.method, c.path, got, c.want)
		}
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
