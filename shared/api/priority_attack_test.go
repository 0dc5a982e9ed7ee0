package api_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Priorities and trace contexts from a careless or hostile caller: every
// value that is not one is a 400 naming its field, with nothing written;
// what is accepted is safe to hand on as an HTTP header and an
// environment variable.

func TestAPriorityOfAnyOtherJSONTypeOrSizeIsA400NamingIt(t *testing.T) {
	e := newEnvEveryRoute(t)
	before := keys(t, e.store)
	for _, p := range []string{`1e20`, `2.5`, `1.0e0`, `"1"`, `true`, `[1]`, `{"p":1}`, `9223372036854775808`, `-9223372036854775809`, `6`, `-1`, `2147483653`} {
		for _, c := range []struct{ method, path, body, field string }{
			{"POST", "/queues/default/tasks", `{"task_type":"t","priority":` + p + `}`, "priority"},
			{"PUT", "/queues/urgent", `{"priority":` + p + `}`, "priority"},
			{"POST", "/queues/default/schedules", `{"id":"nightly","task_type":"t","cron":"@hourly","priority":` + p + `}`, "priority"},
		} {
			r := e.do(c.method, c.path, c.body)
			if r.status != http.StatusBadRequest || str(r.body, "error.field") != c.field {
				t.Errorf("%s %s %s: %d %s, want 400 naming %s", c.method, c.path, c.body, r.status, r.raw, c.field)
			}
		}
		r := e.do("POST", "/queues/default/tasks/batch", `{"tasks":[{"task_type":"t","priority":`+p+`}]}`)
		if f := str(r.body, "results.0.error.field") + str(r.body, "error.field"); !strings.HasSuffix(f, "priority") {
			t.Errorf("batch with priority %s: %d %s, want an error naming the item's priority", p, r.status, r.raw)
		}
	}
	for _, q := range []string{"0", "6", "-1", "1.0", "", "one", "1e0", "99999999999999999999"} {
		r := e.do("GET", "/queues/default/tasks?priority="+q, "")
		if r.status != http.StatusBadRequest || str(r.body, "error.field") != "priority" {
			t.Errorf("list ?priority=%s: %d %s, want 400 naming priority", q, r.status, r.raw)
		}
	}
	for k := range keys(t, e.store) {
		if _, ok := before[k]; !ok && k != "s3q.json" {
			t.Errorf("a refused request wrote %s", k)
		}
	}
	// 0 and null mean the default.
	for _, p := range []string{`0`, `-0`} {
		r := e.do("POST", "/queues/default/tasks", `{"task_type":"t","priority":`+p+`}`)
		if r.status != http.StatusCreated || get(r.body, "task.priority") != float64(3) {
			t.Errorf("priority %s: %d %s, want 201 with priority 3", p, r.status, r.raw)
		}
	}
}

// A traceparent or tracestate that could not be sent on as an HTTP header
// or set as an environment variable as it is (a CR, an LF, a NUL, a
// space in a later version's extra fields) is refused, in the body and
// in the headers; a later version's extra fields are otherwise kept.
func TestATraceContextThatIsNotSafeToHandOnIsA400(t *testing.T) {
	e := newEnvEveryRoute(t)
	const id, span = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	before := keys(t, e.store)
	for _, c := range []struct{ tp, ts, field string }{
		{"01-" + id + "-" + span + "-01-\r\nX-Injected: yes", "", "traceparent"},
		{"01-" + id + "-" + span + "-01-\nX-Injected:yes", "", "traceparent"},
		{"01-" + id + "-" + span + "-01- a", "", "traceparent"},
		{"01-" + id + "-" + span + "-01-\x00", "", "traceparent"},
		{"01-" + id + "-" + span + "-01-\u00e9t\u00e9", "", "traceparent"},
		{"cc-" + id + "-" + span + "-01x", "", "traceparent"},
		{"00-" + strings.ToUpper(id) + "-" + span + "-01", "", "traceparent"},
		{"ff-" + id + "-" + span + "-01", "", "traceparent"},
		{"00-00000000000000000000000000000000-" + span + "-01", "", "traceparent"},
		{"00-" + id + "-0000000000000000-01", "", "traceparent"},
		{"00-" + id + "-" + span + "-01-", "", "traceparent"},
		{"00-" + id + "-" + span + "-1", "", "traceparent"},
		{"01-" + id + "-" + span + "-01-" + strings.Repeat("a", 300), "", "traceparent"},
		{"00-" + id + "-" + span + "-01", "a=b\r\nX-Injected: yes", "tracestate"},
		{"00-" + id + "-" + span + "-01", "a=b\x7f", "tracestate"},
		{"00-" + id + "-" + span + "-01", strings.Repeat("a=b,", 129), "tracestate"},
	} {
		body := `{"task_type":"t","traceparent":` + quote(c.tp) + `,"tracestate":` + quote(c.ts) + `}`
		r := e.do("POST", "/queues/default/tasks", body)
		if r.status != http.StatusBadRequest || str(r.body, "error.field") != c.field {
			t.Errorf("body %q %q: %d %s, want 400 naming %s", c.tp, c.ts, r.status, r.raw, c.field)
		}
		r = e.do("POST", "/queues/default/tasks/batch", `{"tasks":[{"task_type":"t","traceparent":`+quote(c.tp)+`,"tracestate":`+quote(c.ts)+`}]}`)
		if f := str(r.body, "results.0.error.field") + str(r.body, "error.field"); f != "tasks[0]."+c.field {
			t.Errorf("batch %q %q: %d %s, want an error naming tasks[0].%s", c.tp, c.ts, r.status, r.raw, c.field)
		}
		if strings.ContainsAny(c.tp+c.ts, "\r\n\x00") {
			continue // net/http refuses them in a header before the API sees them
		}
		h := map[string]string{"traceparent": c.tp}
		if c.ts != "" {
			h["tracestate"] = c.ts
		}
		r = e.doHeaders("POST", "/queues/default/tasks", `{"task_type":"t"}`, h)
		if r.status != http.StatusBadRequest || str(r.body, "error.field") != c.field {
			t.Errorf("headers %q %q: %d %s, want 400 naming %s", c.tp, c.ts, r.status, r.raw, c.field)
		}
	}
	for k := range keys(t, e.store) {
		if _, ok := before[k]; !ok && k != "s3q.json" {
			t.Errorf("a refused request wrote %s", k)
		}
	}
	// A later version's extra fields are kept as given.
	later := "cc-" + id + "-" + span + "-01-what-the-future-holds"
	r := e.do("POST", "/queues/default/tasks", `{"task_type":"t","traceparent":"`+later+`"}`)
	if r.status != http.StatusCreated || str(r.body, "task.traceparent") != later {
		t.Errorf("a later version: %d %s, want 201 keeping it", r.status, r.raw)
	}
}

// Several tracestate headers are one list (W3C: a receiver combines
// them); several traceparent headers are no trace context a task can
// continue: a 400.
func TestSeveralTraceHeadersAreCombinedOrRefused(t *testing.T) {
	e := newEnvEveryRoute(t)
	send := func(h http.Header) response {
		req := httptest.NewRequest("POST", "/queues/default/tasks", strings.NewReader(`{"task_type":"t"}`))
		req.Header = h
		rec := httptest.NewRecorder()
		e.api.ServeHTTP(rec, req)
		checkAnswer(e.t, req, `{"task_type":"t"}`, rec.Code, rec.Header(), rec.Body.Bytes())
		r := response{status: rec.Code, header: rec.Header(), raw: rec.Body.Bytes()}
		if err := json.Unmarshal(r.raw, &r.body); err != nil {
			t.Fatal(err)
		}
		return r
	}
	r := send(http.Header{"Traceparent": {traceparent}, "Tracestate": {"a=1", "b=2"}})
	if r.status != http.StatusCreated || str(r.body, "task.tracestate") != "a=1,b=2" {
		t.Errorf("two tracestate headers: %d %s, want 201 with a=1,b=2", r.status, r.raw)
	}
	r = send(http.Header{"Traceparent": {traceparent, "00-4bf92f3577b34da6a3ce929d0e0e4737-00f067aa0ba902b7-01"}})
	if r.status != http.StatusBadRequest || str(r.body, "error.field") != "traceparent" {
		t.Errorf("two traceparent headers: %d %s, want 400 naming traceparent", r.status, r.raw)
	}
}

func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20:
			b.WriteString(`\u00`)
			b.WriteByte("0123456789abcdef"[r>>4])
			b.WriteByte("0123456789abcdef"[r&15])
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
