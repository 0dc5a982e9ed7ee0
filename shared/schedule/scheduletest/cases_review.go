package scheduletest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/schedule"
	"github.com/s3q/s3q/shared/store"
	"github.com/s3q/s3q/shared/store/storefault"
)

// runReview holds the regression cases of an independent review.
func runReview(t *testing.T, f Factory) {
	t.Run("an_unretried_create_resume_or_update_that_dies_at_any_write_still_fires_every_cron_time_after_it", func(t *testing.T) {
		unretriedCrashes(t, f)
	})
	t.Run("a_create_that_stalls_before_its_state_write_past_its_first_fire_still_fires_every_cron_time", func(t *testing.T) {
		createStalledBeforeState(t, f)
	})
	t.Run("a_delete_racing_a_create_of_the_same_id_leaves_the_new_schedule_alive", func(t *testing.T) {
		deleteRacingCreate(t, f)
	})
	t.Run("an_overlap_skip_fire_waits_for_the_task_of_a_tick_that_died_before_its_state_write", func(t *testing.T) {
		overlapAfterDeadTick(t, f)
	})
	t.Run("a_trigger_at_a_cron_time_makes_a_task_of_its_own", func(t *testing.T) {
		e := newEnv(t, f)
		e.create(schedule.Request{ID: "a", Cron: "*/15 * * * *"}, t0)
		at := utc("2026-05-01T09:15:00Z")
		fr, err := e.sc.Trigger(ctx, "a", at)
		if err != nil {
			t.Fatal(err)
		}
		e.tick(at.Add(10 * time.Second))
		ids := e.taskIDs()
		if len(ids) != 2 {
			t.Fatalf("a trigger and a cron fire at the same time made tasks %v, want two", ids)
		}
		if fr.TaskID == schedule.TaskID("a", at) {
			t.Fatalf("the trigger took the cron fire's task id %s", fr.TaskID)
		}
	})
	t.Run("a_catch_up_tick_stops_at_its_budget_and_the_next_ticks_carry_on", func(t *testing.T) {
		catchUpBudget(t, f)
	})
}

// unretriedCrashes crashes each operation that enables a schedule at each
// of its writes, never retries it, and checks that ticks alone make the
// schedule fire at every cron time after the crash whenever the
// definition that landed is enabled.
func unretriedCrashes(t *testing.T, f Factory) {
	at := t0.Add(time.Minute) // 09:01:30
	ops := []crashOp{
		{name: "create", setup: func(*env) {},
			run: func(sc *schedule.Scheduler, _ time.Time) error {
				_, err := sc.Create(ctx, schedule.Request{ID: "a", TaskType: "report.make", Cron: "*/15 * * * *"}, at)
				return err
			}},
		{name: "resume", setup: func(e *env) { e.create(schedule.Request{ID: "a", Cron: "*/15 * * * *", Enabled: ptr(false)}, t0) },
			run: func(sc *schedule.Scheduler, _ time.Time) error {
				_, err := sc.Resume(ctx, "a", at)
				return err
			}},
		{name: "enabling_update", setup: func(e *env) { e.create(schedule.Request{ID: "a", Cron: "0 12 * * *", Enabled: ptr(false)}, t0) },
			run: func(sc *schedule.Scheduler, _ time.Time) error {
				_, err := sc.Update(ctx, "a", schedule.Request{TaskType: "report.make", Cron: "*/15 * * * *", Enabled: ptr(true)}, at)
				return err
			}},
	}
	end := utc("2026-05-01T10:01:30Z")
	for _, op := range ops {
		writes := countCrashWrites(t, f, op)
		for _, mode := range []storefault.FaultMode{storefault.FailBefore, storefault.FailAfter} {
			modeName := map[storefault.FaultMode]string{storefault.FailBefore: "before", storefault.FailAfter: "after"}[mode]
			for n := 1; n <= writes; n++ {
				t.Run(fmt.Sprintf("%s_crashed_%s_write_%d_of_%d", op.name, modeName, n, writes), func(t *testing.T) {
					t.Parallel()
					e := newEnv(t, f)
					op.setup(e)
					faulty := storefault.New(e.s)
					faulty.Fail(n, mode)
					_ = op.run(e.process(faulty), at)
					if !faulty.Fired() {
						t.Fatalf("the crash at write %d did not happen", n)
					}
					def, err := e.sc.Get(ctx, "a", at)
					enabled := err == nil && def.Enabled && def.Cron == "*/15 * * * *"
					e.tickEvery(at, end, 5*time.Minute)
					var want []string
					if enabled {
						want = taskIDsFor("a", cronTimes(t, "*/15 * * * *", "UTC", at, end)...)
					}
					wantStrings(t, "tasks", e.taskIDs(), want)
				})
			}
		}
	}
}

// hookStore runs after once, after the first successful Delete of key.
type hookStore struct {
	store.Store
	key   string
	once  sync.Once
	after func()
}

func (h *hookStore) Delete(ctx context.Context, key string) error {
	err := h.Store.Delete(ctx, key)
	if err == nil && key == h.key {
		h.once.Do(h.after)
	}
	return err
}

func deleteRacingCreate(t *testing.T, f Factory) {
	e := newEnv(t, f)
	e.create(schedule.Request{ID: "a", Cron: "*/15 * * * *"}, t0)
	recreateAt := t0.Add(2 * time.Second)
	h := &hookStore{Store: e.s, key: schedule.DefinitionKey("a"), after: func() {
		// The old definition is gone; a create of the id lands before
		// the delete goes on to the state.
		e.create(schedule.Request{ID: "a", Cron: "*/30 * * * *"}, recreateAt)
	}}
	if err := e.process(h).Delete(ctx, "a", t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	sc := e.get("a", recreateAt)
	if sc.Cron != "*/30 * * * *" || sc.NextRunAt == nil {
		t.Fatalf("schedule after the race: %+v", sc)
	}
	if st := e.state("a"); st.Deleted || st.NextRunAt == nil {
		t.Fatalf("the new schedule's state was buried: %+v", st)
	}
	e.tickEvery(t0, utc("2026-05-01T10:00:30Z"), 5*time.Minute)
	wantStrings(t, "tasks", e.taskIDs(), taskIDsFor("a", utc("2026-05-01T09:30:00Z"), utc("2026-05-01T10:00:00Z")))
}

func overlapAfterDeadTick(t *testing.T, f Factory) {
	req := schedule.Request{ID: "a", Cron: "* * * * *", Overlap: schedule.OverlapSkip}
	created := utc("2026-05-01T09:14:30Z")
	crashTick := utc("2026-05-01T09:15:10Z")
	x := schedule.TaskID("a", utc("2026-05-01T09:15:00Z"))
	probe := newEnv(t, f)
	probe.create(req, created)
	writes := countCrashWrites(t, f, crashOp{name: "tick", setup: func(e *env) { e.create(req, created) },
		run: func(sc *schedule.Scheduler, _ time.Time) error { _, err := sc.Tick(ctx, crashTick); return err }})
	tested := 0
	for n := 1; n <= writes; n++ {
		e := newEnv(t, f)
		e.create(req, created)
		faulty := storefault.New(e.s)
		faulty.Fail(n, storefault.FailBefore)
		_, _ = e.process(faulty).Tick(ctx, crashTick)
		if _, err := e.q.Get(ctx, x); err != nil || e.state("a").LastTaskID == x {
			continue // the task was not made, or the state write landed
		}
		tested++
		e.tick(utc("2026-05-01T09:16:10Z"))
		wantStrings(t, fmt.Sprintf("tasks after a crash at write %d", n), e.taskIDs(), []string{x})
		var at16 *schedule.Fire
		for _, h := range e.history("a") {
			if h.FireTime.Equal(utc("2026-05-01T09:16:00Z")) {
				at16 = &h
			}
		}
		if at16 == nil || at16.Skipped != schedule.SkippedOverlap || at16.RunningTaskID != x || at16.Missed != 0 {
			t.Fatalf("crash at write %d: history of 09:16 = %+v, want skipped for %s, none missed", n, at16, x)
		}
	}
	if tested == 0 {
		t.Fatal("no crash left the task without its state write")
	}
}

// slowStore delays every write, so that a tick's work takes real time.
type slowStore struct {
	store.Store
	d time.Duration
}

func (s slowStore) Put(ctx context.Context, key string, body []byte, opts ...store.PutOption) (string, error) {
	time.Sleep(s.d)
	return s.Store.Put(ctx, key, body, opts...)
}

func (s slowStore) PutIfAbsent(ctx context.Context, key string, body []byte, opts ...store.PutOption) (string, error) {
	time.Sleep(s.d)
	return s.Store.PutIfAbsent(ctx, key, body, opts...)
}

func catchUpBudget(t *testing.T, f Factory) {
	e := newEnv(t, f, func(o *schedule.Options) { o.TickBudget = 150 * time.Millisecond })
	e.create(schedule.Request{ID: "a", Cron: "* * * * *", MissedRuns: schedule.MissedCatchUp}, utc("2026-05-01T08:00:00Z"))
	sc := e.process(slowStore{Store: e.s, d: 5 * time.Millisecond})
	now := utc("2026-05-01T09:00:30Z")
	want := taskIDsFor("a", cronTimes(t, "* * * * *", "UTC", utc("2026-05-01T08:00:00Z"), now)...) // 60
	rep, err := sc.Tick(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(e.taskIDs()); n == 0 || n >= len(want) || !rep.More {
		t.Fatalf("the first tick made %d of %d fires (report %+v): it did not stop at its budget", n, len(want), rep)
	}
	for i := 0; i < 100 && len(e.taskIDs()) < len(want); i++ {
		if _, err := sc.Tick(ctx, now); err != nil {
			t.Fatal(err)
		}
	}
	wantStrings(t, "tasks", e.taskIDs(), want)
	if h := e.history("a"); len(h) != len(want) {
		t.Fatalf("%d history entries, want %d", len(h), len(want))
	}
}

// stallStore runs before once, before the first PutIfAbsent of key.
type stallStore struct {
	store.Store
	key    string
	once   sync.Once
	before func()
}

func (s *stallStore) PutIfAbsent(ctx context.Context, key string, body []byte, opts ...store.PutOption) (string, error) {
	if key == s.key {
		s.once.Do(s.before)
	}
	return s.Store.PutIfAbsent(ctx, key, body, opts...)
}

func createStalledBeforeState(t *testing.T, f Factory) {
	e := newEnv(t, f)
	at := utc("2026-05-01T09:14:30Z") // the first fire, 09:15, is close
	st := &stallStore{Store: e.s, key: schedule.StateKey("a"), before: func() {
		// The create stalls past the first fire time and the
		// stale-marker grace; a tick meets its marker.
		e.tick(utc("2026-05-01T09:17:30Z"))
	}}
	if _, err := e.process(st).Create(ctx, schedule.Request{ID: "a", TaskType: "report.make", Cron: "*/15 * * * *"}, at); err != nil {
		t.Fatal(err)
	}
	e.tickEvery(utc("2026-05-01T09:17:30Z"), utc("2026-05-01T10:02:30Z"), 5*time.Minute)
	wantStrings(t, "tasks", e.taskIDs(), taskIDsFor("a", cronTimes(t, "*/15 * * * *", "UTC", at, utc("2026-05-01T10:02:30Z"))...))
}
