package scheduletest

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/s3q/s3q/shared/internal/check"
	"github.com/s3q/s3q/shared/schedule"
)

func runBadInput(t *testing.T, f Factory) {
	ok := func() schedule.Request {
		return schedule.Request{ID: "ok", TaskType: "report.make", Cron: "0 9 * * *"}
	}
	cases := []struct {
		name  string
		field string
		edit  func(r *schedule.Request)
	}{
		{"an_id_with_a_slash", "id", func(r *schedule.Request) { r.ID = "a/b" }},
		{"an_id_with_dot_dot", "id", func(r *schedule.Request) { r.ID = ".." }},
		{"an_id_that_climbs_out", "id", func(r *schedule.Request) { r.ID = "../tasks/x" }},
		{"an_id_with_a_control_character", "id", func(r *schedule.Request) { r.ID = "a\nb" }},
		{"an_id_with_a_space", "id", func(r *schedule.Request) { r.ID = "a b" }},
		{"an_overlong_id", "id", func(r *schedule.Request) { r.ID = strings.Repeat("a", 129) }},
		{"no_id", "id", func(r *schedule.Request) { r.ID = "" }},
		{"an_invalid_cron_expression", "cron", func(r *schedule.Request) { r.Cron = "every day at nine" }},
		{"a_cron_with_six_fields", "cron", func(r *schedule.Request) { r.Cron = "0 0 9 * * *" }},
		{"a_cron_minute_out_of_range", "cron", func(r *schedule.Request) { r.Cron = "60 9 * * *" }},
		{"a_cron_that_never_fires", "cron", func(r *schedule.Request) { r.Cron = "0 0 30 2 *" }},
		{"an_every_under_a_minute", "cron", func(r *schedule.Request) { r.Cron = "@every 10s" }},
		{"a_time_zone_inside_the_cron", "cron", func(r *schedule.Request) { r.Cron = "TZ=Europe/Berlin 0 9 * * *" }},
		{"no_cron", "cron", func(r *schedule.Request) { r.Cron = "" }},
		{"an_unknown_time_zone", "timezone", func(r *schedule.Request) { r.Timezone = "Europe/Atlantis" }},
		{"a_time_zone_path", "timezone", func(r *schedule.Request) { r.Timezone = "/etc/localtime" }},
		{"a_negative_catch_up_window", "catch_up_window", func(r *schedule.Request) {
			r.MissedRuns, r.CatchUpWindow = schedule.MissedCatchUp, check.Dur("-1h")
		}},
		{"a_catch_up_window_without_catch_up", "catch_up_window", func(r *schedule.Request) { r.CatchUpWindow = check.Dur("1h") }},
		{"an_unknown_missed_runs_policy", "missed_runs", func(r *schedule.Request) { r.MissedRuns = "all" }},
		{"an_unknown_overlap_policy", "overlap", func(r *schedule.Request) { r.Overlap = "queue" }},
		{"a_zero_ttl", "ttl", func(r *schedule.Request) { r.TTL = check.Dur("0s") }},
		{"a_negative_ttl", "ttl", func(r *schedule.Request) { r.TTL = check.Dur("-5m") }},
		{"an_unknown_ttl_from", "ttl_from", func(r *schedule.Request) { r.TTLFrom = "claim" }},
		{"ttl_from_first_attempt_without_a_ttl", "ttl_from", func(r *schedule.Request) { r.TTLFrom = "first_attempt" }},
		{"negative_max_attempts", "max_attempts", func(r *schedule.Request) { r.MaxAttempts = -1 }},
		{"no_task_type", "task_type", func(r *schedule.Request) { r.TaskType = "" }},
		{"a_task_type_with_a_slash", "task_type", func(r *schedule.Request) { r.TaskType = "a/b" }},
		{"a_queue_with_a_slash", "queue", func(r *schedule.Request) { r.Queue = "a/b" }},
		{"input_that_is_not_json", "input", func(r *schedule.Request) { r.Input = json.RawMessage(`{"a":`) }},
		{"input_over_256_KiB", "input", func(r *schedule.Request) {
			r.Input = json.RawMessage(`"` + strings.Repeat("x", 256<<10) + `"`)
		}},
	}
	for _, c := range cases {
		t.Run("create_with_"+c.name+"_is_refused_on_"+c.field+"_and_stores_nothing", func(t *testing.T) {
			e := newEnv(t, f)
			req := ok()
			c.edit(&req)
			_, err := e.sc.Create(ctx, req, t0)
			check.Field(t, err, c.field)
			if keys := e.keys(""); len(keys) != 0 {
				t.Fatalf("stored %v", keys)
			}
		})
	}
	t.Run("update_with_bad_input_changes_nothing", func(t *testing.T) {
		e := newEnv(t, f)
		e.create(ok(), t0)
		before := e.keys("")
		stBefore := e.state("ok")
		for _, c := range cases {
			if c.field == "id" {
				continue
			}
			req := ok()
			req.ID = ""
			c.edit(&req)
			_, err := e.sc.Update(ctx, "ok", req, t0)
			check.Field(t, err, c.field)
		}
		req := ok()
		req.ID = "other"
		_, err := e.sc.Update(ctx, "ok", req, t0)
		check.Field(t, err, "id")
		_, err = e.sc.Update(ctx, "../ok", ok(), t0)
		check.Field(t, err, "id")
		wantStrings(t, "keys", e.keys(""), before)
		if st := e.state("ok"); st.Rev != stBefore.Rev {
			t.Fatalf("state rev %d -> %d", stBefore.Rev, st.Rev)
		}
		for _, id := range []string{"a/b", "..", "x\x00"} {
			_, err := e.sc.Get(ctx, id, t0)
			check.Field(t, err, "id")
			_, err = e.sc.Trigger(ctx, id, t0)
			check.Field(t, err, "id")
			check.Field(t, e.sc.Delete(ctx, id, t0), "id")
		}
	})
}
