package api_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/s3q/s3q/shared/queue"
)

const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// doHeaders is do with request headers.
func (e *env) doHeaders(method, path, body string, h map[string]string) response {
	e.t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	for k, v := range h {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	e.api.ServeHTTP(rec, req)
	checkAnswer(e.t, req, body, rec.Code, rec.Header(), rec.Body.Bytes())
	r := response{status: rec.Code, header: rec.Header(), raw: rec.Body.Bytes()}
	if err := json.Unmarshal(r.raw, &r.body); err != nil {
		e.t.Fatalf("%s %s: answer is not JSON: %v", method, path, err)
	}
	return r
}

// A submit's traceparent and tracestate headers (or fields) are kept on
// the task and shown; a schedule's fire starts a trace of its own.
func TestTheTraceContextOfASubmitIsKeptAndShown(t *testing.T) {
	e := newEnvEveryRoute(t)
	h := map[string]string{"traceparent": traceparent, "tracestate": "vendor=abc"}
	r := e.doHeaders("POST", "/queues/default/tasks", `{"task_type":"t"}`, h)
	r0 := r
	if r.status != http.StatusCreated || !strings.Contains(string(r.raw), `"traceparent":"`+traceparent+`"`) || !strings.Contains(string(r.raw), `"tracestate":"vendor=abc"`) {
		t.Fatalf("submit with headers: %d %s", r.status, r.raw)
	}
	r = e.doHeaders("POST", "/queues/default/tasks/batch", `{"tasks":[{"task_type":"t"},{"task_type":"t","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b8-00"}]}`, h)
	if !strings.Contains(string(r.raw), traceparent) || !strings.Contains(string(r.raw), "00f067aa0ba902b8-00") {
		t.Fatalf("batch: %d %s", r.status, r.raw)
	}
	id := str(r0.body, "task.id")
	got := e.do("GET", "/queues/default/tasks/"+id, "")
	if str(got.body, "task.traceparent") != traceparent {
		t.Fatalf("status shows %s", got.raw)
	}

	if r := e.do("POST", "/queues/default/schedules", `{"id":"nightly","task_type":"t","cron":"@hourly"}`); r.status != http.StatusCreated {
		t.Fatalf("schedule: %d %s", r.status, r.raw)
	}
	r = e.doHeaders("POST", "/queues/default/schedules/nightly/trigger", "", h)
	fired := str(r.body, "fire.task_id")
	task := e.do("GET", "/queues/default/tasks/"+fired, "")
	tp := str(task.body, "task.traceparent")
	if err := queue.ValidateTraceparent("traceparent", tp); err != nil || tp == traceparent || strings.Contains(string(task.raw), "vendor=abc") {
		t.Fatalf("a fire's task has traceparent %q (%v), want a new trace", tp, err)
	}
}

func TestAMalformedTraceContextIsA400NamingItAndWritesNothing(t *testing.T) {
	e := newEnvEveryRoute(t)
	before := keys(t, e.store)
	for _, c := range []struct {
		body  string
		h     map[string]string
		field string
	}{
		{`{"task_type":"t"}`, map[string]string{"traceparent": "00-xyz"}, "traceparent"},
		{`{"task_type":"t"}`, map[string]string{"tracestate": "a=b"}, "tracestate"},
		{`{"task_type":"t","traceparent":"01-4bf92f3577b34da6a3ce929d0e0e4736"}`, nil, "traceparent"},
	} {
		r := e.doHeaders("POST", "/queues/default/tasks", c.body, c.h)
		if r.status != http.StatusBadRequest || !strings.Contains(string(r.raw), `"field":"`+c.field+`"`) {
			t.Errorf("%s %v: %d %s, want 400 naming %s", c.body, c.h, r.status, r.raw, c.field)
		}
	}
	r := e.doHeaders("POST", "/queues/default/tasks/batch", `{"tasks":[{"task_type":"t"}]}`, map[string]string{"traceparent": "bad"})
	if r.status != http.StatusBadRequest || !strings.Contains(string(r.raw), `"field":"traceparent"`) {
		t.Errorf("batch with a bad header: %d %s", r.status, r.raw)
	}
	for k := range keys(t, e.store) {
		if _, ok := before[k]; !ok && k != "s3q.json" {
			t.Errorf("a refused request wrote %s", k)
		}
	}
}
