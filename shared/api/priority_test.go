package api_test

import (
	"net/http"
	"testing"
)

// A priority travels through the API: on submit, batch, queue defaults
// and schedules, shown on the task, and a claim takes the highest first.
func TestPriorityIsTakenShownAndOrdersClaims(t *testing.T) {
	e := newEnvEveryRoute(t)
	low := e.submit(`{"task_type":"t","priority":5}`)
	mid := e.submit(`{"task_type":"t"}`)
	r := e.do("POST", "/queues/default/tasks/batch", `{"tasks":[{"task_type":"t","priority":1}]}`)
	if r.status != http.StatusOK {
		t.Fatalf("batch: %d %s", r.status, r.raw)
	}
	high := str(r.body, "results.0.task.id")
	if got := get(r.body, "results.0.task.priority"); got != float64(1) {
		t.Fatalf("batch task priority %v", got)
	}
	for _, want := range []string{high, mid, low} {
		id, _ := e.claim()
		if id != want {
			t.Fatalf("claimed %s, want %s", id, want)
		}
	}
	r = e.do("GET", "/queues/default/tasks/"+mid, "")
	if got := get(r.body, "task.priority"); got != float64(3) {
		t.Fatalf("a task submitted without a priority shows %v, want 3", got)
	}

	r = e.do("PUT", "/queues/urgent", `{"priority":2}`)
	if r.status != http.StatusCreated || get(r.body, "queue.priority") != float64(2) {
		t.Fatalf("declare: %d %s", r.status, r.raw)
	}
	r = e.do("POST", "/queues/urgent/tasks", `{"task_type":"t"}`)
	if get(r.body, "task.priority") != float64(2) {
		t.Fatalf("a submit to a queue with priority 2 got %s", r.raw)
	}
	r = e.do("POST", "/queues/default/schedules", `{"id":"nightly","task_type":"t","cron":"@hourly","priority":1}`)
	if r.status != http.StatusCreated || get(r.body, "schedule.priority") != float64(1) {
		t.Fatalf("schedule: %d %s", r.status, r.raw)
	}
}

func TestAPriorityOutOfRangeIsA400NamingItAndWritesNothing(t *testing.T) {
	e := newEnvEveryRoute(t)
	before := keys(t, e.store)
	for _, c := range []struct{ method, path, body, field string }{
		{"POST", "/queues/default/tasks", `{"task_type":"t","priority":0.5}`, "priority"},
		{"POST", "/queues/default/tasks", `{"task_type":"t","priority":6}`, "priority"},
		{"POST", "/queues/default/tasks", `{"task_type":"t","priority":-1}`, "priority"},
		{"POST", "/queues/default/tasks", `{"task_type":"t","priority":"high"}`, "priority"},
		{"PUT", "/queues/urgent", `{"priority":9}`, "priority"},
		{"POST", "/queues/default/schedules", `{"id":"nightly","task_type":"t","cron":"@hourly","priority":7}`, "priority"},
	} {
		r := e.do(c.method, c.path, c.body)
		if r.status != http.StatusBadRequest || str(r.body, "error.field") != c.field {
			t.Errorf("%s %s %s: %d %s, want 400 naming %s", c.method, c.path, c.body, r.status, r.raw, c.field)
		}
	}
	r := e.do("POST", "/queues/default/tasks/batch", `{"tasks":[{"task_type":"t","priority":8}]}`)
	if str(r.body, "results.0.error.field") != "tasks[0].priority" {
		t.Errorf("batch: %s", r.raw)
	}
	after := keys(t, e.store)
	for k := range after {
		if _, ok := before[k]; !ok && k != "s3q.json" {
			t.Errorf("a refused request wrote %s", k)
		}
	}
}
