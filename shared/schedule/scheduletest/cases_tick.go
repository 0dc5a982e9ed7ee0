package scheduletest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/internal/check"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/schedule"
	"github.com/s3q/s3q/shared/store"
)

func runTick(t *testing.T, f Factory) {
	t.Run("an_idle_tick_costs_one_list", func(t *testing.T) {
		e := newEnv(t, f)
		counting := store.NewCounting(e.s)
		sc := e.process(counting)
		if _, err := sc.Tick(ctx, t0); err != nil {
			t.Fatal(err)
		}
		if c := counting.Counts(); c.Total() != 1 || c.List != 1 {
			t.Fatalf("empty bucket: %s", c)
		}
		for i := range 20 {
			e.create(schedule.Request{ID: fmt.Sprintf("s%02d", i), Cron: "0 12 * * *"}, t0)
		}
		e.create(schedule.Request{ID: "paused", Cron: "* * * * *", Enabled: ptr(false)}, t0)
		counting.Reset()
		rep, err := sc.Tick(ctx, t0.Add(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		if c := counting.Counts(); c.Total() != 1 || c.List != 1 || rep.Due != 0 {
			t.Fatalf("nothing due: %s, report %+v", c, rep)
		}
	})

	t.Run("a_client_cannot_compute_a_fires_id_and_another_queues_ids_never_collide", func(t *testing.T) {
		e := newEnv(t, f)
		e.create(schedule.Request{ID: "a", Cron: "*/15 * * * *"}, t0)
		// From public facts (queue, schedule id, cron time) a client
		// computes ids as a fire once did, in the schedule's queue...
		for _, at := range []string{"2026-05-01T09:15:00Z", "2026-05-01T09:30:00Z"} {
			for _, name := range []string{"schedule/a", "schedule/default/a"} {
				id := queue.DerivedID(utc(at), name)
				if _, err := e.q.Submit(ctx, queue.SubmitRequest{ID: id, TaskType: "evil", Input: json.RawMessage(`{"x":1}`)}, t0); err != nil {
					t.Fatal(err)
				}
			}
		}
		// ...and one who learnt a fire's real id takes it in another
		// queue: ids are per queue, so it is another task.
		leaked := e.fireID("a", utc("2026-05-01T09:45:00Z"))
		if _, err := e.q.In("b").Submit(ctx, queue.SubmitRequest{ID: leaked, TaskType: "evil"}, t0); err != nil {
			t.Fatal(err)
		}
		e.tickEvery(t0, utc("2026-05-01T09:46:00Z"), time.Minute)
		h := e.history("a")
		if len(h) != 3 {
			t.Fatalf("history %+v, want three fires", h)
		}
		for _, fi := range h {
			task := e.task(queue.Ref(queue.DefaultQueue, fi.TaskID))
			if fi.Skipped != "" || fi.TaskID != e.fireID("a", fi.FireTime) || task.TaskType != "report.make" {
				t.Fatalf("the fire at %s: %+v, task %+v", fi.FireTime.Format(time.RFC3339), fi, task)
			}
		}
		if task := e.task(queue.Ref("b", leaked)); task.TaskType != "evil" {
			t.Fatalf("queue b's task: %+v", task)
		}
		if b, err := json.Marshal(e.get("a", t0)); err != nil || bytes.Contains(b, []byte(`"secret"`)) {
			t.Fatal("the schedule's secret is shown")
		}
	})

	t.Run("a_schedule_whose_queue_was_deleted_skips_its_fires_and_fails_no_tick", func(t *testing.T) {
		e := newEnv(t, f)
		q, decls := queues.New(e.s, queues.Options{RequireDeclared: true})
		e.q, e.sc = q, schedule.New(e.s, q, e.opts)
		if _, _, err := decls.Declare(ctx, queues.Declaration{Name: "a"}, t0); err != nil {
			t.Fatal(err)
		}
		e.create(schedule.Request{ID: "s", Cron: "*/15 * * * *", Queue: "a"}, t0)
		e.create(schedule.Request{ID: "other", Cron: "*/15 * * * *"}, t0)
		if _, _, err := decls.Declare(ctx, queues.Declaration{Name: queue.DefaultQueue}, t0); err != nil {
			t.Fatal(err)
		}
		if err := decls.Delete(ctx, "a", t0); err != nil {
			t.Fatal(err)
		}
		e.tickEvery(t0, utc("2026-05-01T09:31:00Z"), time.Minute) // fails the test on a tick error
		h := e.history("s")
		if len(h) != 2 || h[0].Skipped == "" || h[0].Error == "" {
			t.Fatalf("history of the schedule of the deleted queue: %+v", h)
		}
		if st := e.state("other"); st.LastTaskID != e.fireID("other", utc("2026-05-01T09:30:00Z")) {
			t.Fatalf("the other schedule: last task %s", st.LastTaskID)
		}
	})

	t.Run("a_queue_flooding_the_tick_leaves_other_queues_fires_on_time", func(t *testing.T) {
		// Queue "a" (sorting first in the due index) has 30 schedules due
		// every minute; "b" and "c" one each. The tick's budget is 6
		// schedules: round-robin by queue, b's and c's fire at every tick
		// all the same, and a's take the rest of the budget.
		e := newEnv(t, f, func(o *schedule.Options) { o.MaxPerTick = 6 })
		for i := range 30 {
			e.create(schedule.Request{ID: fmt.Sprintf("flood%02d", i), Cron: "* * * * *", Queue: "a"}, t0)
		}
		e.create(schedule.Request{ID: "b1", Cron: "* * * * *", Queue: "b"}, t0)
		e.create(schedule.Request{ID: "c1", Cron: "* * * * *", Queue: "c"}, t0)
		for i := 1; i <= 3; i++ {
			fire := utc("2026-05-01T09:00:00Z").Add(time.Duration(i) * time.Minute)
			rep := e.tick(fire.Add(5 * time.Second))
			if rep.Due != 6 || !rep.More {
				t.Fatalf("tick %d: report %+v, want 6 due and more left", i, rep)
			}
			for _, id := range []string{"b/b1", "c/c1"} {
				if st := e.state(id); st.LastRunAt == nil || !st.LastRunAt.Equal(fire) {
					t.Fatalf("tick %d: %s last ran at %v, want %s", i, id, st.LastRunAt, fire.Format(time.RFC3339))
				}
			}
		}
	})

	t.Run("a_due_schedule_fires_once_and_its_marker_moves_to_the_next_time", func(t *testing.T) {
		e := newEnv(t, f)
		e.create(schedule.Request{ID: "a", Cron: "*/15 * * * *", Queue: "reports", TaskType: "report.make",
			Input: json.RawMessage(`{"n":1}`), TTL: check.Dur("10m"), MaxAttempts: 5}, t0)
		at := utc("2026-05-01T09:15:40Z")
		fire := utc("2026-05-01T09:15:00Z")
		rep := e.tick(at)
		if rep.Due != 1 || rep.Fired != 1 || rep.Missed != 0 {
			t.Fatalf("report %+v", rep)
		}
		id := e.fireID("a", fire)
		if id == queue.DerivedID(fire, "schedule/a") || id == queue.DerivedID(fire, "schedule/reports/a") {
			t.Fatalf("task id %s is computable from public facts", id)
		}
		wantStrings(t, "tasks", e.taskIDs(), []string{id})
		task := e.task(id)
		if task.Queue != "reports" || task.TaskType != "report.make" || string(task.Input) != `{"n":1}` ||
			task.MaxAttempts != 5 || task.Status != queue.StatusPending || !task.ExpiresAt.Equal(fire.Add(10*time.Minute)) {
			t.Fatalf("task = %+v", task)
		}
		st := e.state("a")
		if !st.LastRunAt.Equal(fire) || st.LastTaskID != id || !st.NextRunAt.Equal(utc("2026-05-01T09:30:00Z")) {
			t.Fatalf("state = %+v", st)
		}
		wantStrings(t, "due", e.keys("due/"), []string{st.DueKey})
		h := e.history("a")
		if len(h) != 1 || h[0].TaskID != id || !h[0].FireTime.Equal(fire) || !h[0].FiredAt.Equal(at) {
			t.Fatalf("history = %+v", h)
		}
		// Ticking again at the same time, or a little later, fires nothing new.
		e.tick(at)
		e.tick(at.Add(time.Minute))
		wantStrings(t, "tasks", e.taskIDs(), []string{id})
	})

	t.Run("tick_requests_do_not_grow_with_the_stored_schedules", func(t *testing.T) {
		var counts []store.Counts
		for _, stored := range []int{10, 100} {
			e := newEnv(t, f)
			for i := range stored {
				e.create(schedule.Request{ID: fmt.Sprintf("idle%03d", i), Cron: "0 0 1 1 *"}, t0)
			}
			for i := range 3 {
				e.create(schedule.Request{ID: fmt.Sprintf("due%d", i), Cron: "* * * * *"}, t0)
			}
			counting := store.NewCounting(e.s)
			proc := e.process(counting)
			// A first tick warms the process (the queue registers itself
			// with the sweep once per process); the second is measured.
			for i, at := range []time.Time{t0.Add(time.Minute), t0.Add(2 * time.Minute)} {
				counting.Reset()
				if rep, err := proc.Tick(ctx, at); err != nil || rep.Fired != 3 {
					t.Fatalf("tick %d: %+v, %v", i, rep, err)
				}
			}
			counts = append(counts, counting.Counts())
		}
		if counts[0] != counts[1] {
			t.Fatalf("10 stored: %s; 100 stored: %s", counts[0], counts[1])
		}
		// One LIST, then per fire: GET state and definition; PUT task
		// marker, task, history, due marker, state; DELETE old marker.
		// And one GET of the queue's declaration, read once per 30s by a
		// process (the ticks are a minute apart).
		if c := counts[0]; c.List != 1 || c.Get != 7 || c.Put != 15 || c.Delete != 3 {
			t.Fatalf("3 fires cost %s", c)
		}
	})

	t.Run("racing_ticks_make_one_task_per_fire", func(t *testing.T) {
		e := newEnv(t, f)
		const n = 20
		for i := range n {
			e.create(schedule.Request{ID: fmt.Sprintf("s%02d", i), Cron: "*/5 * * * *"}, t0)
		}
		at := utc("2026-05-01T09:05:10Z")
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := e.process(e.s).Tick(ctx, at); err != nil {
					errs <- err
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		var want []string
		for i := range n {
			want = append(want, e.fireID(fmt.Sprintf("s%02d", i), utc("2026-05-01T09:05:00Z")))
		}
		wantStrings(t, "tasks", e.taskIDs(), sortedCopy(want))
		e.tick(at)
		if due := e.keys("due/"); len(due) != n {
			t.Fatalf("%d due markers after a clean-up tick, want %d: %v", len(due), n, due)
		}
	})

	t.Run("ticks_racing_triggers_and_updates_lose_and_double_no_fire", func(t *testing.T) {
		e := newEnv(t, f)
		ids := []string{"a", "b", "c"}
		for _, id := range ids {
			e.create(schedule.Request{ID: id, Cron: "*/5 * * * *", Input: json.RawMessage(`0`)}, t0)
		}
		var want []string
		end := t0.Add(10 * time.Minute)
		for now := t0.Add(time.Minute); !now.After(end); now = now.Add(time.Minute) {
			var wg sync.WaitGroup
			errs := make(chan error, 16)
			for range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if _, err := e.process(e.s).Tick(ctx, now); err != nil {
						errs <- err
					}
				}()
			}
			for i, id := range ids {
				wg.Add(1)
				go func() {
					defer wg.Done()
					sc := e.process(e.s)
					// An edit of the input (same cron: the next fire stays) and a trigger.
					if _, err := sc.Update(ctx, id, schedule.Request{TaskType: "report.make", Cron: "*/5 * * * *", Input: json.RawMessage(fmt.Sprint(now.Minute()))}, now); err != nil {
						errs <- err
					}
					if _, err := sc.Trigger(ctx, id, now.Add(time.Duration(i)*time.Second)); err != nil {
						errs <- err
					}
				}()
				want = append(want, e.triggerID(id, now.Add(time.Duration(i)*time.Second)))
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
		}
		for _, id := range ids {
			want = append(want, e.taskIDsFor(id, cronTimes(t, "*/5 * * * *", "UTC", t0, end)...)...)
		}
		wantStrings(t, "tasks", e.taskIDs(), sortedCopy(want))
	})

	t.Run("skip_fires_only_the_latest_missed_time", func(t *testing.T) {
		e := newEnv(t, f)
		e.create(schedule.Request{ID: "a", Cron: "*/15 * * * *"}, t0)
		// No tick from 09:00:30 to 11:07.
		rep := e.tick(utc("2026-05-01T11:07:00Z"))
		if rep.Fired != 1 || rep.Missed != 7 {
			t.Fatalf("report %+v", rep)
		}
		wantStrings(t, "tasks", e.taskIDs(), e.taskIDsFor("a", utc("2026-05-01T11:00:00Z")))
		if h := e.history("a"); len(h) != 1 || h[0].Missed != 7 {
			t.Fatalf("history %+v", h)
		}
		if st := e.state("a"); !st.NextRunAt.Equal(utc("2026-05-01T11:15:00Z")) {
			t.Fatalf("next = %s", st.NextRunAt)
		}
	})

	t.Run("catch_up_fires_each_missed_time_inside_the_window", func(t *testing.T) {
		e := newEnv(t, f)
		e.create(schedule.Request{ID: "a", Cron: "*/15 * * * *", MissedRuns: schedule.MissedCatchUp, CatchUpWindow: check.Dur("1h")}, t0)
		e.create(schedule.Request{ID: "wide", Cron: "*/15 * * * *", MissedRuns: schedule.MissedCatchUp}, t0) // default 24h
		rep := e.tick(utc("2026-05-01T11:07:00Z"))
		if rep.Fired != 4+8 || rep.Missed != 4 {
			t.Fatalf("report %+v", rep)
		}
		// Inside 10:07..11:07: 10:15, 10:30, 10:45, 11:00; 09:15..10:00 are missed.
		want := e.taskIDsFor("a", utc("2026-05-01T10:15:00Z"), utc("2026-05-01T10:30:00Z"), utc("2026-05-01T10:45:00Z"), utc("2026-05-01T11:00:00Z"))
		want = append(want, e.taskIDsFor("wide", cronTimes(t, "*/15 * * * *", "UTC", t0, utc("2026-05-01T11:07:00Z"))...)...)
		wantStrings(t, "tasks", e.taskIDs(), sortedCopy(want))
		if h := e.history("a"); len(h) != 4 || h[0].Missed != 4 {
			t.Fatalf("history %+v", h)
		}
	})

	t.Run("a_catch_up_over_the_per_tick_cap_carries_on_next_tick", func(t *testing.T) {
		e := newEnv(t, f, func(o *schedule.Options) { o.MaxCatchUpPerTick = 3 })
		e.create(schedule.Request{ID: "a", Cron: "*/15 * * * *", MissedRuns: schedule.MissedCatchUp}, t0)
		at := utc("2026-05-01T11:07:00Z") // 8 due: 09:15 .. 11:00
		if rep := e.tick(at); rep.Fired != 3 {
			t.Fatalf("first tick %+v", rep)
		}
		if st := e.state("a"); !st.NextRunAt.Equal(utc("2026-05-01T10:00:00Z")) {
			t.Fatalf("next = %s", st.NextRunAt)
		}
		if rep := e.tick(at.Add(time.Minute)); rep.Fired != 3 {
			t.Fatalf("second tick %+v", rep)
		}
		if rep := e.tick(at.Add(2 * time.Minute)); rep.Fired != 2 {
			t.Fatalf("third tick %+v", rep)
		}
		wantStrings(t, "tasks", e.taskIDs(), e.taskIDsFor("a", cronTimes(t, "*/15 * * * *", "UTC", t0, at)...))
		if st := e.state("a"); !st.NextRunAt.Equal(utc("2026-05-01T11:15:00Z")) {
			t.Fatalf("next = %s", st.NextRunAt)
		}
	})

	t.Run("overlap_skip_waits_while_the_last_task_is_pending_or_running", func(t *testing.T) {
		e := newEnv(t, f)
		e.create(schedule.Request{ID: "a", Cron: "*/5 * * * *", Overlap: schedule.OverlapSkip}, t0)
		first := e.fireID("a", utc("2026-05-01T09:05:00Z"))
		e.tick(utc("2026-05-01T09:05:10Z"))
		// Pending: 09:10 is skipped.
		if rep := e.tick(utc("2026-05-01T09:10:10Z")); rep.Skipped != 1 || rep.Fired != 0 {
			t.Fatalf("report %+v", rep)
		}
		claimed, err := e.q.Claim(ctx, queue.ClaimRequest{LeaseFor: time.Hour}, utc("2026-05-01T09:11:00Z"))
		if err != nil || len(claimed) != 1 || claimed[0].Task.ID != first {
			t.Fatalf("claim: %v %v", claimed, err)
		}
		// Running: 09:15 is skipped.
		if rep := e.tick(utc("2026-05-01T09:15:10Z")); rep.Skipped != 1 {
			t.Fatalf("report %+v", rep)
		}
		if _, err := e.q.Complete(ctx, queue.CompleteRequest{ID: claimed[0].Task.Ref(), LeaseToken: claimed[0].Lease.Token}, utc("2026-05-01T09:16:00Z")); err != nil {
			t.Fatal(err)
		}
		// Done: 09:20 fires.
		if rep := e.tick(utc("2026-05-01T09:20:10Z")); rep.Fired != 1 {
			t.Fatalf("report %+v", rep)
		}
		wantStrings(t, "tasks", e.taskIDs(), e.taskIDsFor("a", utc("2026-05-01T09:05:00Z"), utc("2026-05-01T09:20:00Z")))
		h := e.history("a")
		if len(h) != 4 || h[1].Skipped != schedule.SkippedOverlap || h[1].RunningTaskID != first || h[2].Skipped != schedule.SkippedOverlap || h[3].TaskID == "" {
			t.Fatalf("history %+v", h)
		}
	})

	t.Run("a_tick_stops_at_its_budget_and_the_next_tick_carries_on", func(t *testing.T) {
		e := newEnv(t, f, func(o *schedule.Options) { o.MaxPerTick = 2 })
		for i := range 5 {
			e.create(schedule.Request{ID: fmt.Sprintf("s%d", i), Cron: "*/15 * * * *"}, t0)
		}
		at := utc("2026-05-01T09:15:10Z")
		total := 0
		for i := 0; ; i++ {
			rep := e.tick(at.Add(time.Duration(i) * time.Minute))
			total += rep.Fired
			if !rep.More {
				break
			}
			if rep.Due != 2 || i > 5 {
				t.Fatalf("report %+v", rep)
			}
		}
		if total != 5 || len(e.taskIDs()) != 5 {
			t.Fatalf("fired %d, tasks %v", total, e.taskIDs())
		}
	})

	t.Run("stale_markers_are_removed_and_young_unnamed_ones_kept", func(t *testing.T) {
		e := newEnv(t, f)
		e.create(schedule.Request{ID: "a", Cron: "0 12 * * *"}, t0)
		st := e.state("a")
		at := t0.Add(10 * time.Minute)
		junk := []string{
			"due/20260501T090000.000000Z_default.ghost_1",   // no schedule, old: a create that died
			"due/20260501T090000.000000Z_default.a_1",       // old revision of a: stale
			"due/20260501T090000.000000Z_default.a_7",       // a writer of a's next revision died long ago
			"due/20260501T090930.000000Z_default.a_9",       // young: a writer may be about to name it
			"due/20260501T090930.000000Z_default.newborn_1", // young, no state yet: a create in progress
			"due/not-a-marker",                              // not ours: left alone
		}
		for _, k := range junk {
			if _, err := e.s.Put(ctx, k, nil); err != nil {
				t.Fatal(err)
			}
		}
		rep := e.tick(at)
		if rep.Stale != 3 || rep.Fired != 0 || rep.Errors != 0 {
			t.Fatalf("report %+v", rep)
		}
		wantStrings(t, "due", e.keys("due/"), []string{
			"due/20260501T090930.000000Z_default.a_9", "due/20260501T090930.000000Z_default.newborn_1", st.DueKey, "due/not-a-marker"})
		if got := e.state("a"); got.Rev != st.Rev+1 || got.DueKey != st.DueKey {
			t.Fatalf("state %+v", got) // bumped once for the dead writer, still naming its marker
		}
		e.tick(at.Add(5 * time.Minute)) // now they are old too
		wantStrings(t, "due", e.keys("due/"), []string{st.DueKey, "due/not-a-marker"})
		if ids := e.taskIDs(); len(ids) != 0 {
			t.Fatalf("tasks %v", ids)
		}
	})
}
