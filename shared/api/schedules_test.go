package api_test

import (
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/api"
	"github.com/s3q/s3q/shared/schedule"
	"github.com/s3q/s3q/shared/store/memstore"
)

// scheduleEnv is an env whose API serves the schedule routes.
func scheduleEnv(t *testing.T) *env {
	t.Helper()
	e := newEnv(t, gofakes3Store(t), api.Options{})
	e.api = api.New(e.q, e.decls, api.Options{
		Now: e.clock.Now, Logger: slog.New(slog.NewJSONHandler(&lockedWriter{w: e.logs}, nil)),
		Schedules: schedule.New(e.q.Store(), e.q, schedule.Options{}),
	})
	return e
}

func TestScheduleRoutes(t *testing.T) {
	e := scheduleEnv(t)
	create := `{"id":"nightly","task_type":"report.build","input":{"n":1},"cron":"0 2 * * *","timezone":"Europe/Berlin","ttl":"1h"}`

	t.Run("create_answers_201_with_the_schedule_and_its_next_runs", func(t *testing.T) {
		r := e.do("POST", "/queues/default/schedules", create)
		if r.status != http.StatusCreated || str(r.body, "schedule.id") != "nightly" || str(r.body, "schedule.timezone") != "Europe/Berlin" {
			t.Fatalf("create: %d %s", r.status, r.raw)
		}
		if runs, _ := get(r.body, "schedule.next_runs").([]any); len(runs) != 5 {
			t.Fatalf("next_runs: %s", r.raw)
		}
	})

	t.Run("bad_input_names_the_field_and_writes_nothing", func(t *testing.T) {
		before := keys(t, e.store)
		cases := []struct{ body, field string }{
			{`{"id":"x","task_type":"t","cron":"61 * * * *"}`, "cron"},
			{`{"id":"x","task_type":"t","cron":"@hourly","timezone":"Mars/Olympus"}`, "timezone"},
			{`{"id":"a/../b","task_type":"t","cron":"@hourly"}`, "id"},
			{`{"id":"x","task_type":"t","cron":"@hourly","missed_runs":"catch_up","catch_up_window":"-1h"}`, "catch_up_window"},
			{`{"id":"x","task_type":"t","cron":"@hourly","bogus":1}`, "bogus"},
			{`{"id":"nightly","task_type":"t","cron":"@hourly"}`, "id"},
		}
		for _, c := range cases {
			r := e.do("POST", "/queues/default/schedules", c.body)
			if r.status/100 != 4 || str(r.body, "error.field") != c.field {
				t.Errorf("%s: %d %s, want a 4xx on field %s", c.body, r.status, r.raw, c.field)
			}
		}
		if r := e.do("POST", "/queues/default/schedules", create); r.status != http.StatusConflict || str(r.body, "error.code") != "already_exists" {
			t.Errorf("duplicate: %d %s", r.status, r.raw)
		}
		if after := keys(t, e.store); len(after) != len(before) {
			t.Fatalf("bad input wrote keys: %d -> %d", len(before), len(after))
		}
	})

	t.Run("get_list_update_pause_resume_work_and_unknown_ids_are_404", func(t *testing.T) {
		if r := e.do("GET", "/queues/default/schedules/nightly", ""); r.status != http.StatusOK || str(r.body, "schedule.cron") != "0 2 * * *" {
			t.Fatalf("get: %d %s", r.status, r.raw)
		}
		if r := e.do("GET", "/queues/default/schedules?limit=10", ""); r.status != http.StatusOK || str(r.body, "schedules.0.id") != "nightly" {
			t.Fatalf("list: %d %s", r.status, r.raw)
		}
		r := e.do("PUT", "/queues/default/schedules/nightly", `{"task_type":"report.build","cron":"30 2 * * 1-5","timezone":"Europe/Berlin"}`)
		if r.status != http.StatusOK || str(r.body, "schedule.cron") != "30 2 * * 1-5" {
			t.Fatalf("update: %d %s", r.status, r.raw)
		}
		if r := e.do("POST", "/queues/default/schedules/nightly/pause", ""); r.status != http.StatusOK || get(r.body, "schedule.enabled") != false {
			t.Fatalf("pause: %d %s", r.status, r.raw)
		}
		if r := e.do("POST", "/queues/default/schedules/nightly/resume", ""); r.status != http.StatusOK || get(r.body, "schedule.enabled") != true {
			t.Fatalf("resume: %d %s", r.status, r.raw)
		}
		if r := e.do("GET", "/queues/default/schedules/nope", ""); r.status != http.StatusNotFound || str(r.body, "error.code") != "not_found" {
			t.Fatalf("unknown: %d %s", r.status, r.raw)
		}
		if r := e.do("GET", "/queues/default/schedules?limit=zero", ""); r.status != http.StatusBadRequest || str(r.body, "error.field") != "limit" {
			t.Fatalf("bad limit: %d %s", r.status, r.raw)
		}
	})

	t.Run("trigger_fires_a_task_now_and_history_shows_it", func(t *testing.T) {
		r := e.do("POST", "/queues/default/schedules/nightly/trigger", "")
		id := str(r.body, "fire.task_id")
		if r.status != http.StatusOK || id == "" || get(r.body, "fire.trigger") != true {
			t.Fatalf("trigger: %d %s", r.status, r.raw)
		}
		if g := e.do("GET", "/queues/default/tasks/"+id, ""); g.status != http.StatusOK || str(g.body, "task.task_type") != "report.build" || str(g.body, "task.status") != "pending" {
			t.Fatalf("fired task: %d %s", g.status, g.raw)
		}
		h := e.do("GET", "/queues/default/schedules/nightly/history?since="+t0.Add(-time.Hour).Format(time.RFC3339), "")
		if h.status != http.StatusOK || str(h.body, "fires.0.task_id") != id {
			t.Fatalf("history: %d %s", h.status, h.raw)
		}
		if h := e.do("GET", "/queues/default/schedules/nightly/history?since=yesterday", ""); h.status != http.StatusBadRequest || str(h.body, "error.field") != "since" {
			t.Fatalf("bad since: %d %s", h.status, h.raw)
		}
	})

	t.Run("delete_answers_204_and_the_schedule_is_gone", func(t *testing.T) {
		if r := e.do("DELETE", "/queues/default/schedules/nightly", ""); r.status != http.StatusNoContent {
			t.Fatalf("delete: %d %s", r.status, r.raw)
		}
		if r := e.do("GET", "/queues/default/schedules/nightly", ""); r.status != http.StatusNotFound {
			t.Fatalf("after delete: %d %s", r.status, r.raw)
		}
	})
}

func TestScheduleRoutesWithoutASchedulerAre404(t *testing.T) {
	e := newEnv(t, memstore.New(), api.Options{})
	if r := e.do("GET", "/queues/default/schedules", ""); r.status != http.StatusNotFound || str(r.body, "error.code") != "not_found" {
		t.Fatalf("%d %s", r.status, r.raw)
	}
}

func TestMaxSchedulesBoundsAQueuesSchedules(t *testing.T) {
	e := scheduleEnv(t)
	if r := e.do("PUT", "/queues/reports", `{"max_schedules":-1}`); r.status != http.StatusBadRequest || str(r.body, "error.field") != "max_schedules" {
		t.Fatalf("max_schedules -1: %d %s", r.status, r.raw)
	}
	if r := e.do("PUT", "/queues/reports", `{"max_schedules":2}`); r.status/100 != 2 || get(r.body, "queue.max_schedules") != 2.0 {
		t.Fatalf("declare: %d %s", r.status, r.raw)
	}
	for _, id := range []string{"a", "b"} {
		if r := e.do("POST", "/queues/reports/schedules", `{"id":"`+id+`","task_type":"t","cron":"* * * * *"}`); r.status != http.StatusCreated {
			t.Fatalf("create %s: %d %s", id, r.status, r.raw)
		}
	}
	r := e.do("POST", "/queues/reports/schedules", `{"id":"c","task_type":"t","cron":"* * * * *"}`)
	if r.status != http.StatusConflict || str(r.body, "error.code") != "too_many_schedules" {
		t.Fatalf("a third: %d %s", r.status, r.raw)
	}
	// Another queue has its own bound (the default, 100).
	if r := e.do("POST", "/queues/default/schedules", `{"id":"c","task_type":"t","cron":"* * * * *"}`); r.status != http.StatusCreated {
		t.Fatalf("another queue: %d %s", r.status, r.raw)
	}
}
