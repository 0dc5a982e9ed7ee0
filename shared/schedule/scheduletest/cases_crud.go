package scheduletest

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/internal/check"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/schedule"
	"github.com/s3q/s3q/shared/store"
)

func runCRUD(t *testing.T, f Factory) {
	t.Run("a_bounded_view_refuses_a_schedule_past_its_queues_bound_and_other_queues_are_unaffected", func(t *testing.T) {
		e := newEnv(t, f)
		a, b := e.sc.In("a").Bounded(3), e.sc.In("b").Bounded(3)
		for i := range 3 {
			if _, err := a.Create(ctx, schedule.Request{ID: fmt.Sprintf("s%d", i), TaskType: "t", Cron: "* * * * *"}, t0); err != nil {
				t.Fatal(err)
			}
		}
		e.tick(t0.Add(time.Minute)) // states and histories: ids are counted, not keys
		_, err := a.Create(ctx, schedule.Request{ID: "s3", TaskType: "t", Cron: "* * * * *"}, t0)
		check.Err(t, err, schedule.ErrTooMany)
		// A create of an id the queue holds is answered as before.
		_, err = a.Create(ctx, schedule.Request{ID: "s1", TaskType: "other", Cron: "@hourly"}, t0)
		check.Err(t, err, schedule.ErrExists)
		if _, err := b.Create(ctx, schedule.Request{ID: "s0", TaskType: "t", Cron: "* * * * *"}, t0); err != nil {
			t.Fatalf("queue b: %v", err)
		}
		if err := a.Delete(ctx, "s0", t0); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Create(ctx, schedule.Request{ID: "s3", TaskType: "t", Cron: "* * * * *"}, t0); err != nil {
			t.Fatalf("after a delete: %v", err)
		}
	})

	t.Run("create_returns_the_schedule_with_defaults_and_the_next_five_fire_times", func(t *testing.T) {
		e := newEnv(t, f)
		sc := e.create(schedule.Request{ID: "daily-report", Cron: "0 9 * * 1-5", Input: json.RawMessage(`{"kind":"daily"}`)}, t0)
		if sc.ID != "daily-report" || sc.Queue != "default" || sc.Timezone != "UTC" || !sc.Enabled ||
			sc.MissedRuns != schedule.MissedSkip || sc.Overlap != schedule.OverlapAllow || sc.Version != 1 ||
			!sc.CreatedAt.Equal(t0) || !sc.UpdatedAt.Equal(t0) || sc.LastRunAt != nil {
			t.Fatalf("schedule = %+v", sc)
		}
		// t0 is Friday 09:00:30: the next weekday 09:00 is Monday.
		wantStrings(t, "next runs", rfc(sc.NextRuns), []string{
			"2026-05-04T09:00:00Z", "2026-05-05T09:00:00Z", "2026-05-06T09:00:00Z", "2026-05-07T09:00:00Z", "2026-05-08T09:00:00Z"})
		if sc.NextRunAt == nil || !sc.NextRunAt.Equal(sc.NextRuns[0]) {
			t.Fatalf("next_run_at = %v", sc.NextRunAt)
		}
		got := e.get("daily-report", t0)
		if string(got.Input) != `{"kind":"daily"}` || len(got.NextRuns) != 5 {
			t.Fatalf("get = %+v", got)
		}
		// Stored as the layout says: definition, state, one due marker.
		wantStrings(t, "keys", e.keys(""), []string{
			"due/20260504T090000.000000Z_default.daily-report_1", "q/default/schedules/daily-report.json", "q/default/schedules/daily-report/state.json"})
		// The JSON the API returns carries the run fields.
		b, _ := json.Marshal(got)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		for _, k := range []string{"id", "task_type", "cron", "timezone", "enabled", "missed_runs", "overlap", "next_run_at", "next_runs", "last_run_at", "created_at"} {
			if _, ok := m[k]; !ok {
				t.Fatalf("JSON has no %q: %s", k, b)
			}
		}
	})

	t.Run("create_with_a_taken_id_returns_ErrExists_and_changes_nothing", func(t *testing.T) {
		e := newEnv(t, f)
		e.create(schedule.Request{ID: "a", Cron: "@hourly"}, t0)
		before := e.keys("")
		_, err := e.sc.Create(ctx, schedule.Request{ID: "a", TaskType: "other", Cron: "@daily"}, t0.Add(time.Minute))
		check.Err(t, err, schedule.ErrExists)
		// The very same request again is also taken (it completed).
		_, err = e.sc.Create(ctx, schedule.Request{ID: "a", TaskType: "report.make", Cron: "@hourly"}, t0.Add(time.Minute))
		check.Err(t, err, schedule.ErrExists)
		wantStrings(t, "keys", e.keys(""), before)
		if sc := e.get("a", t0); sc.Cron != "@hourly" {
			t.Fatalf("cron = %s", sc.Cron)
		}
	})

	t.Run("an_unknown_id_returns_ErrNotFound_everywhere", func(t *testing.T) {
		e := newEnv(t, f)
		_, err := e.sc.Get(ctx, "nope", t0)
		check.Err(t, err, schedule.ErrNotFound)
		_, err = e.sc.Update(ctx, "nope", schedule.Request{TaskType: "x", Cron: "@daily"}, t0)
		check.Err(t, err, schedule.ErrNotFound)
		_, err = e.sc.Pause(ctx, "nope", t0)
		check.Err(t, err, schedule.ErrNotFound)
		_, err = e.sc.Resume(ctx, "nope", t0)
		check.Err(t, err, schedule.ErrNotFound)
		_, err = e.sc.Trigger(ctx, "nope", t0)
		check.Err(t, err, schedule.ErrNotFound)
		_, err = e.sc.History(ctx, "nope", schedule.HistoryRequest{})
		check.Err(t, err, schedule.ErrNotFound)
		check.Err(t, e.sc.Delete(ctx, "nope", t0), schedule.ErrNotFound)
		if keys := e.keys(""); len(keys) != 0 {
			t.Fatalf("stored %v", keys)
		}
	})

	t.Run("update_with_a_new_cron_moves_the_next_run_and_the_due_marker", func(t *testing.T) {
		e := newEnv(t, f)
		e.create(schedule.Request{ID: "a", Cron: "0 12 * * *"}, t0)
		at := t0.Add(time.Hour) // 10:00:30
		sc, err := e.sc.Update(ctx, "a", schedule.Request{TaskType: "report.make", Cron: "*/15 * * * *", Timezone: "Europe/Berlin"}, at)
		if err != nil {
			t.Fatal(err)
		}
		if sc.Version != 2 || !sc.UpdatedAt.Equal(at) || !sc.CreatedAt.Equal(t0) || sc.Timezone != "Europe/Berlin" {
			t.Fatalf("schedule = %+v", sc)
		}
		wantStrings(t, "next runs", rfc(sc.NextRuns[:2]), []string{"2026-05-01T10:15:00Z", "2026-05-01T10:30:00Z"})
		wantStrings(t, "due", e.keys("due/"), []string{"due/20260501T101500.000000Z_default.a_2"})
		// The old time does not fire; the new ones do.
		e.tickEvery(at, utc("2026-05-01T12:05:00Z"), time.Minute)
		wantStrings(t, "tasks", e.taskIDs(), e.taskIDsFor("a", cronTimes(t, "*/15 * * * *", "UTC", at, utc("2026-05-01T12:05:00Z"))...))
	})

	t.Run("update_of_the_input_keeps_a_due_fire", func(t *testing.T) {
		e := newEnv(t, f)
		e.create(schedule.Request{ID: "a", Cron: "*/15 * * * *", Input: json.RawMessage(`1`)}, t0)
		// 09:15 is due at 09:15:20 but no tick has run yet when the input changes.
		at := utc("2026-05-01T09:15:20Z")
		if _, err := e.sc.Update(ctx, "a", schedule.Request{TaskType: "report.make", Cron: "*/15 * * * *", Input: json.RawMessage(`2`)}, at); err != nil {
			t.Fatal(err)
		}
		e.tick(at.Add(10 * time.Second))
		id := e.fireID("a", utc("2026-05-01T09:15:00Z"))
		wantStrings(t, "tasks", e.taskIDs(), []string{id})
		if task := e.task(id); string(task.Input) != `2` {
			t.Fatalf("input = %s", task.Input)
		}
	})

	t.Run("update_keeps_a_paused_schedule_paused_unless_it_says_enabled", func(t *testing.T) {
		e := newEnv(t, f)
		e.create(schedule.Request{ID: "a", Cron: "@hourly", Enabled: ptr(false)}, t0)
		if keys := e.keys("due/"); len(keys) != 0 {
			t.Fatalf("a paused schedule has markers %v", keys)
		}
		sc, err := e.sc.Update(ctx, "a", schedule.Request{TaskType: "report.make", Cron: "@daily"}, t0)
		if err != nil || sc.Enabled || sc.NextRunAt != nil || len(sc.NextRuns) != 0 {
			t.Fatalf("update = %+v, %v", sc, err)
		}
		sc, err = e.sc.Update(ctx, "a", schedule.Request{TaskType: "report.make", Cron: "@daily", Enabled: ptr(true)}, t0)
		if err != nil || !sc.Enabled || sc.NextRunAt == nil || !sc.NextRunAt.Equal(utc("2026-05-02T00:00:00Z")) {
			t.Fatalf("update = %+v, %v", sc, err)
		}
		// Updating with what is stored writes nothing.
		before := e.state("a")
		cur := e.get("a", t0)
		if _, err := e.sc.Update(ctx, "a", cur.Request(), t0.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		if after := e.state("a"); after.Rev != before.Rev || e.get("a", t0).Version != cur.Version {
			t.Fatalf("a no-op update wrote: rev %d -> %d", before.Rev, after.Rev)
		}
	})

	t.Run("pause_drops_the_due_marker_and_resume_fires_from_the_next_time_after_now", func(t *testing.T) {
		e := newEnv(t, f)
		e.create(schedule.Request{ID: "a", Cron: "*/15 * * * *"}, t0)
		sc, err := e.sc.Pause(ctx, "a", t0)
		if err != nil || sc.Enabled || sc.NextRunAt != nil {
			t.Fatalf("pause = %+v, %v", sc, err)
		}
		if keys := e.keys("due/"); len(keys) != 0 {
			t.Fatalf("markers after pause: %v", keys)
		}
		if _, err := e.sc.Pause(ctx, "a", t0); err != nil { // again: nothing changes
			t.Fatal(err)
		}
		e.tickEvery(t0, t0.Add(time.Hour), time.Minute)
		if ids := e.taskIDs(); len(ids) != 0 {
			t.Fatalf("a paused schedule fired %v", ids)
		}
		resumeAt := t0.Add(time.Hour) // 10:00:30: 10:00 passed while paused
		sc, err = e.sc.Resume(ctx, "a", resumeAt)
		if err != nil || !sc.Enabled || !sc.NextRunAt.Equal(utc("2026-05-01T10:15:00Z")) {
			t.Fatalf("resume = %+v, %v", sc, err)
		}
		e.tickEvery(resumeAt, resumeAt.Add(31*time.Minute), time.Minute)
		wantStrings(t, "tasks", e.taskIDs(), e.taskIDsFor("a", utc("2026-05-01T10:15:00Z"), utc("2026-05-01T10:30:00Z")))
	})

	t.Run("list_pages_through_schedules_past_their_state_and_history", func(t *testing.T) {
		e := newEnv(t, f)
		// A store whose LIST pages hold 3 keys, so pages end inside
		// schedules' subtrees.
		e.sc = schedule.New(smallPages{e.s}, e.q, e.opts)
		ids := []string{"a", "a-b", "a_b", "b", "c", "d0"}
		for _, id := range ids {
			e.create(schedule.Request{ID: id, Cron: "* * * * *"}, t0)
		}
		e.tickEvery(t0, t0.Add(3*time.Minute), time.Minute) // three history entries each
		var got []string
		cursor := ""
		for pages := 0; ; pages++ {
			res, err := e.sc.List(ctx, schedule.ListRequest{Cursor: cursor, Limit: 2}, t0)
			if err != nil {
				t.Fatal(err)
			}
			for _, sc := range res.Schedules {
				got = append(got, sc.ID)
				if sc.LastTaskID == "" || len(sc.NextRuns) != 5 {
					t.Fatalf("listed %+v", sc)
				}
			}
			if res.NextCursor == "" {
				break
			}
			if pages > 10 {
				t.Fatal("listing does not end")
			}
			cursor = res.NextCursor
		}
		// Key order: "a-b.json" < "a.json" < "a/..." < "a_b.json".
		wantStrings(t, "listed", got, []string{"a-b", "a", "a_b", "b", "c", "d0"})
		res, err := e.sc.List(ctx, schedule.ListRequest{Limit: 100}, t0)
		if err != nil || len(res.Schedules) != len(ids) || res.NextCursor != "" {
			t.Fatalf("one page: %d schedules, cursor %q, %v", len(res.Schedules), res.NextCursor, err)
		}
		_, err = e.sc.List(ctx, schedule.ListRequest{Cursor: "../x"}, t0)
		check.Field(t, err, "cursor")
	})

	t.Run("delete_removes_the_schedule_its_marker_and_history_and_the_id_can_be_created_again", func(t *testing.T) {
		e := newEnv(t, f)
		e.create(schedule.Request{ID: "a", Cron: "* * * * *"}, t0)
		e.tickEvery(t0, t0.Add(2*time.Minute), time.Minute)
		fired := e.taskIDs()
		if len(fired) != 2 {
			t.Fatalf("fired %v", fired)
		}
		if err := e.sc.Delete(ctx, "a", t0.Add(2*time.Minute)); err != nil {
			t.Fatal(err)
		}
		_, err := e.sc.Get(ctx, "a", t0)
		check.Err(t, err, schedule.ErrNotFound)
		check.Err(t, e.sc.Delete(ctx, "a", t0), schedule.ErrNotFound)
		// Only the tombstone state and the fired tasks remain.
		wantStrings(t, "schedule keys", append(e.keys("q/default/schedules/"), e.keys("due/")...), []string{"q/default/schedules/a/state.json"})
		e.tickEvery(t0.Add(2*time.Minute), t0.Add(5*time.Minute), time.Minute)
		wantStrings(t, "tasks", e.taskIDs(), fired)
		// Re-create the id (on versitygw a create-only write on a deleted
		// key fails; the create must not depend on it).
		at := t0.Add(5 * time.Minute)
		sc := e.create(schedule.Request{ID: "a", Cron: "*/15 * * * *"}, at)
		if sc.LastRunAt != nil || sc.Version != 1 || !sc.NextRunAt.Equal(utc("2026-05-01T09:15:00Z")) {
			t.Fatalf("re-created %+v", sc)
		}
		if h := e.history("a"); len(h) != 0 {
			t.Fatalf("history of the new schedule: %+v", h)
		}
		e.tickEvery(at, at.Add(10*time.Minute), time.Minute)
		if ids := e.taskIDs(); len(ids) != 3 {
			t.Fatalf("tasks %v", ids)
		}
	})

	t.Run("trigger_fires_now_once_even_when_paused_and_records_it", func(t *testing.T) {
		e := newEnv(t, f)
		e.create(schedule.Request{ID: "a", Cron: "@daily", TTL: check.Dur("1h"), Enabled: ptr(false)}, t0)
		at := t0.Add(time.Minute)
		f1, err := e.sc.Trigger(ctx, "a", at)
		if err != nil {
			t.Fatal(err)
		}
		if !f1.Trigger || f1.TaskID != e.triggerID("a", at) || !f1.FireTime.Equal(at) {
			t.Fatalf("fire = %+v", f1)
		}
		f2, err := e.sc.Trigger(ctx, "a", at) // retried: the same task
		if err != nil || f2.TaskID != f1.TaskID {
			t.Fatalf("retried trigger = %+v, %v", f2, err)
		}
		task := e.task(f1.TaskID)
		if task.Status != queue.StatusPending || task.ExpiresAt == nil || !task.ExpiresAt.Equal(at.Add(time.Hour)) {
			t.Fatalf("task = %+v", task)
		}
		if _, err := e.sc.Trigger(ctx, "a", at.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		if ids := e.taskIDs(); len(ids) != 2 {
			t.Fatalf("tasks %v", ids)
		}
		h := e.history("a")
		if len(h) != 2 || !h[0].Trigger || h[0].TaskID != f1.TaskID {
			t.Fatalf("history = %+v", h)
		}
		if sc := e.get("a", at); sc.LastTaskID != e.triggerID("a", at.Add(time.Second)) {
			t.Fatalf("last task = %s", sc.LastTaskID)
		}
	})

	t.Run("history_lists_fires_oldest_first_from_since_with_a_cursor", func(t *testing.T) {
		e := newEnv(t, f)
		e.create(schedule.Request{ID: "a", Cron: "* * * * *"}, t0)
		e.tickEvery(t0, t0.Add(5*time.Minute), time.Minute) // 09:01 .. 09:05
		var got []string
		req := schedule.HistoryRequest{Limit: 2, Since: ptr(utc("2026-05-01T09:02:00Z"))}
		for {
			res, err := e.sc.History(ctx, "a", req)
			if err != nil {
				t.Fatal(err)
			}
			for _, fi := range res.Fires {
				got = append(got, fi.FireTime.Format("15:04"))
				if fi.TaskID != e.fireID("a", fi.FireTime) || fi.ScheduleID != "a" {
					t.Fatalf("fire = %+v", fi)
				}
			}
			if res.NextCursor == "" {
				break
			}
			req.Cursor = res.NextCursor
		}
		wantStrings(t, "fires", got, []string{"09:02", "09:03", "09:04", "09:05"})
		_, err := e.sc.History(ctx, "a", schedule.HistoryRequest{Cursor: "x/../y"})
		check.Field(t, err, "cursor")
	})
}

// smallPages is a store whose LIST pages hold at most 3 keys.
type smallPages struct{ store.Store }

func (s smallPages) List(ctx context.Context, prefix, startAfter string, limit int) (store.Page, error) {
	return s.Store.List(ctx, prefix, startAfter, min(store.ListLimit(limit), 3))
}
