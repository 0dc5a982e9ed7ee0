package api_test

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/api"
	"github.com/s3q/s3q/shared/artifacts"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/reqcount"
	"github.com/s3q/s3q/shared/schedule"
	"github.com/s3q/s3q/shared/store/memstore"
)

// declared declares queue emails.
func declared(e *env) (string, string) {
	if r := e.do("PUT", "/queues/emails", `{"ttl":"1h"}`); r.status != 201 {
		e.t.Fatalf("declare: %d %s", r.status, r.raw)
	}
	return "", ""
}

// The queue routes, in the table every route case runs
// through: an error answer writes nothing.
var queueCases = []routeCase{
	{name: "put_queue_declares_it_201", method: "PUT", path: "/queues/emails",
		body: `{"ttl":"1h","ttl_from":"first_attempt","max_attempts":5,"timeout":"2m","shards":2,"max_concurrency":4,"target":{"lambda":"arn:aws:lambda:eu-west-1:123456789012:function:send"}}`, status: 201,
		check: all(wantField("queue.name", "emails"), wantField("queue.ttl", "1h"), wantField("queue.shards", float64(2)),
			wantField("queue.max_concurrency", float64(4)), wantField("queue.target.lambda", "arn:aws:lambda:eu-west-1:123456789012:function:send"))},
	{name: "put_queue_again_replaces_it_200", setup: declared, method: "PUT", path: "/queues/emails", body: `{"max_attempts":2}`, status: 200,
		check: all(wantField("queue.max_attempts", float64(2)), wantField("queue.ttl", nil))},
	{name: "put_queue_with_a_zero_ttl_is_400_naming_ttl", method: "PUT", path: "/queues/emails", body: `{"ttl":"0s"}`, status: 400, code: "invalid_input", field: "ttl"},
	{name: "put_queue_with_bad_shards_is_400", method: "PUT", path: "/queues/emails", body: `{"shards":-1}`, status: 400, code: "invalid_input", field: "shards"},
	{name: "put_queue_with_bad_max_concurrency_is_400", method: "PUT", path: "/queues/emails", body: `{"max_concurrency":5000}`, status: 400, code: "invalid_input", field: "max_concurrency"},
	{name: "put_queue_with_an_http_target_is_400_naming_target_url", method: "PUT", path: "/queues/emails", body: `{"target":{"url":"http://x.example/","secret":"/s"}}`, status: 400, code: "invalid_input", field: "target.url"},
	{name: "put_queue_with_a_url_target_and_no_secret_is_400_naming_target_secret", method: "PUT", path: "/queues/emails", body: `{"target":{"url":"https://x.example/"}}`, status: 400, code: "invalid_input", field: "target.secret"},
	{name: "put_queue_with_two_targets_is_400", method: "PUT", path: "/queues/emails", body: `{"target":{"lambda":"f","url":"https://x.example/","secret":"/s"}}`, status: 400, code: "invalid_input", field: "target.url"},
	{name: "put_queue_with_a_bad_lambda_is_400_naming_target_lambda", method: "PUT", path: "/queues/emails", body: `{"target":{"lambda":"no spaces"}}`, status: 400, code: "invalid_input", field: "target.lambda"},
	{name: "put_queue_with_an_unknown_target_field_is_400", method: "PUT", path: "/queues/emails", body: `{"target":{"lambda":"f","region":"x"}}`, status: 400, code: "invalid_input", field: "target.region"},
	{name: "put_queue_with_an_unknown_field_is_400", method: "PUT", path: "/queues/emails", body: `{"name":"x"}`, status: 400, code: "invalid_input", field: "name"},
	{name: "put_queue_with_a_bad_name_is_400_naming_queue", method: "PUT", path: "/queues/e.mails", body: `{}`, status: 400, code: "invalid_input", field: "queue"},
	{name: "put_queue_changing_shards_is_400", setup: declared, method: "PUT", path: "/queues/emails", body: `{"shards":3}`, status: 400, code: "invalid_input", field: "shards"},
	{name: "get_queue_shows_counts", setup: pending, method: "GET", path: "/queues/default", status: 200,
		check: all(wantField("queue.name", "default"), wantField("queue.auto_declared", true), wantField("queue.counts.live", float64(1)))},
	{name: "get_an_undeclared_queue_is_404_queue_not_found", method: "GET", path: "/queues/nope", status: 404, code: "queue_not_found", field: "queue"},
	{name: "list_queues_shows_counts", setup: pending, method: "GET", path: "/queues", status: 200,
		check: all(wantField("queues.0.name", "default"), wantField("queues.0.counts.live", float64(1)))},
	{name: "list_queues_without_counts", setup: pending, method: "GET", path: "/queues?counts=false", status: 200, check: wantField("queues.0.counts", nil)},
	{name: "list_queues_of_more_than_100_with_counts_is_400", method: "GET", path: "/queues?limit=101", status: 400, code: "invalid_input", field: "limit"},
	{name: "list_queues_of_1000_without_counts", setup: pending, method: "GET", path: "/queues?limit=1000&counts=false", status: 200, check: wantField("queues.0.name", "default")},
	{name: "list_queues_with_a_bad_counts_is_400", method: "GET", path: "/queues?counts=maybe", status: 400, code: "invalid_input", field: "counts"},
	{name: "delete_a_queue_with_a_pending_task_is_409", setup: pending, method: "DELETE", path: "/queues/default", status: 409, code: "queue_not_empty"},
	{name: "delete_an_empty_queue_is_204", setup: declared, method: "DELETE", path: "/queues/emails", status: 204},
	{name: "delete_an_undeclared_queue_is_404", method: "DELETE", path: "/queues/nope", status: 404, code: "queue_not_found", field: "queue"},
	{name: "submit_naming_another_queue_in_the_body_is_400", method: "POST", path: "/queues/default/tasks", body: `{"task_type":"t","queue":"other"}`, status: 400, code: "invalid_input", field: "queue"},
	{name: "claim_naming_another_queue_in_the_body_is_400", setup: pending, method: "POST", path: "/queues/default/claim", body: `{"queue":"other"}`, status: 400, code: "invalid_input", field: "queue"},
	{name: "a_queue_listing_shows_only_its_tasks", setup: pending, method: "GET", path: "/queues/other/tasks", status: 200, check: wantField("tasks", []any{})},
	{name: "a_queue_listing_refuses_a_queue_parameter", method: "GET", path: "/queues/default/tasks?queue=x", status: 400, code: "invalid_input", field: "queue"},
	{name: "the_unscoped_submit_route_is_gone", method: "POST", path: "/tasks", body: `{"task_type":"t"}`, status: 405, code: "method_not_allowed"},
	{name: "the_unscoped_claim_route_is_gone", method: "POST", path: "/claim", body: `{}`, status: 404, code: "not_found"},
}

func TestQueueRoutes(t *testing.T) {
	runCases(t, queueCases)
}

// Every route on one task, addressed under a queue that is not the
// task's, is 404 not_found and changes nothing.
func TestEveryTaskRouteUnderAnotherQueueIs404(t *testing.T) {
	var cases []routeCase
	for _, key := range api.Routes() {
		method, pattern, _ := strings.Cut(key, " ")
		if !strings.Contains(pattern, "/tasks/{id}") {
			continue
		}
		path := strings.NewReplacer("{queue}", "other", "{name}", "a.txt").Replace(pattern)
		body := ""
		if method == "POST" {
			body = `{"lease_token":"{token}"}`
			if strings.HasSuffix(pattern, "/fail") {
				body = `{"lease_token":"{token}","error":"x"}`
			}
			if strings.HasSuffix(pattern, "/artifacts") {
				body = `{"name":"a.txt"}`
			}
			if strings.HasSuffix(pattern, "/retry") || strings.HasSuffix(pattern, "/expire") || strings.HasSuffix(pattern, "/cancel") {
				body = `{}`
			}
		}
		cases = append(cases, routeCase{name: key, setup: running, method: method, path: path, body: body, status: 404, code: "not_found"})
	}
	if len(cases) != 12 {
		t.Fatalf("%d task routes, want 12", len(cases))
	}
	runCases(t, cases, withArtifacts)
}

// withArtifacts gives an env an artifact service that never signs: the
// queue check comes first.
func withArtifacts(o *api.Options) { o.Artifacts = noSign{} }

func TestUndeclaredQueueIs404UnlessAutoDeclared(t *testing.T) {
	s := memstore.New()
	q, decls := queues.New(reqcount.Wrap(s), queues.Options{RequireDeclared: true})
	h := api.New(q, decls, api.Options{Schedules: schedule.New(s, q, schedule.Options{})})
	do := func(method, path, body string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		h.ServeHTTP(w, req)
		checkAnswer(t, req, body, w.Code, w.Header(), w.Body.Bytes())
		return w
	}
	before := keys(t, s)
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/queues/ghost/tasks", `{"task_type":"t"}`},
		{"POST", "/queues/ghost/tasks/batch", `{"tasks":[{"task_type":"t"}]}`},
		{"POST", "/queues/ghost/claim", `{}`},
	} {
		w := do(c.method, c.path, c.body)
		if c.path == "/queues/ghost/tasks/batch" {
			if w.Code != 200 || !strings.Contains(w.Body.String(), `"queue_not_found"`) {
				t.Errorf("%s %s: %d %s, want a queue_not_found result", c.method, c.path, w.Code, w.Body)
			}
			continue
		}
		if w.Code != 404 || !strings.Contains(w.Body.String(), `"code":"queue_not_found"`) {
			t.Errorf("%s %s: %d %s, want 404 queue_not_found", c.method, c.path, w.Code, w.Body)
		}
	}
	if after := keys(t, s); !maps.Equal(before, after) {
		t.Errorf("submits to an undeclared queue wrote %v", after)
	}
	if w := do("POST", "/queues/ghost/schedules", `{"id":"s","cron":"@hourly","task_type":"t"}`); w.Code != 404 || !strings.Contains(w.Body.String(), `"queue_not_found"`) {
		t.Errorf("a schedule of an undeclared queue: %d %s, want 404 queue_not_found", w.Code, w.Body)
	}
	if w := do("PUT", "/queues/ghost", `{}`); w.Code != http.StatusCreated {
		t.Fatalf("declare: %d %s", w.Code, w.Body)
	}
	if w := do("POST", "/queues/ghost/tasks", `{"task_type":"t"}`); w.Code != http.StatusCreated {
		t.Errorf("submit after declaring: %d %s", w.Code, w.Body)
	}
}

// A schedule addressed under another queue than the one it fires into is
// 404 and unchanged.
func TestScheduleUnderAnotherQueueIs404(t *testing.T) {
	s := memstore.New()
	q, decls := queues.New(s, queues.Options{})
	sc := schedule.New(s, q, schedule.Options{})
	h := api.New(q, decls, api.Options{Schedules: sc})
	do := func(method, path, body string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		h.ServeHTTP(w, req)
		checkAnswer(t, req, body, w.Code, w.Header(), w.Body.Bytes())
		return w
	}
	if w := do("POST", "/queues/a/schedules", `{"id":"nightly","cron":"0 2 * * *","task_type":"t"}`); w.Code != 201 || !strings.Contains(w.Body.String(), `"queue":"a"`) {
		t.Fatalf("create: %d %s", w.Code, w.Body)
	}
	if w := do("POST", "/queues/a/schedules", `{"id":"other","cron":"0 2 * * *","task_type":"t","queue":"b"}`); w.Code != 400 || !strings.Contains(w.Body.String(), `"field":"queue"`) {
		t.Errorf("create naming another queue: %d %s", w.Code, w.Body)
	}
	before := keys(t, s)
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/queues/b/schedules/nightly", ""},
		{"PUT", "/queues/b/schedules/nightly", `{"cron":"0 3 * * *","task_type":"t"}`},
		{"DELETE", "/queues/b/schedules/nightly", ""},
		{"POST", "/queues/b/schedules/nightly/pause", ""},
		{"POST", "/queues/b/schedules/nightly/resume", ""},
		{"POST", "/queues/b/schedules/nightly/trigger", ""},
		{"GET", "/queues/b/schedules/nightly/history", ""},
	} {
		if w := do(c.method, c.path, c.body); w.Code != 404 || !strings.Contains(w.Body.String(), `"not_found"`) {
			t.Errorf("%s %s: %d %s, want 404", c.method, c.path, w.Code, w.Body)
		}
	}
	if after := keys(t, s); !maps.Equal(before, after) {
		t.Errorf("a schedule route under another queue wrote to the store")
	}
	if w := do("GET", "/queues/b/schedules", ""); w.Code != 200 || strings.Contains(w.Body.String(), "nightly") {
		t.Errorf("list under b: %d %s", w.Code, w.Body)
	}
	if w := do("GET", "/queues/a/schedules/nightly", ""); w.Code != 200 {
		t.Errorf("get under a: %d %s", w.Code, w.Body)
	}
}

// noSign is an artifact service that is never reached in these tests.
type noSign struct{}

func (noSign) PutURL(context.Context, string, string, int64, time.Time) (artifacts.URL, error) {
	return artifacts.URL{}, errors.New("noSign: reached PutURL")
}

func (noSign) GetURL(context.Context, string, string, time.Time) (artifacts.URL, error) {
	return artifacts.URL{}, errors.New("noSign: reached GetURL")
}
