package scheduletest

import (
	"fmt"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/schedule"
	"github.com/s3q/s3q/shared/store/storefault"
)

// runCrashUnretried: an operation that enables a schedule and dies at any
// write, never retried, and a tick that dies before its state write,
// leave the schedule firing as its definition says.
func runCrashUnretried(t *testing.T, f Factory) {
	t.Run("an_unretried_create_resume_or_update_that_dies_at_any_write_still_fires_every_cron_time_after_it", func(t *testing.T) {
		unretriedCrashes(t, f)
	})
	t.Run("an_overlap_skip_fire_waits_for_the_task_of_a_tick_that_died_before_its_state_write", func(t *testing.T) {
		t.Parallel()
		overlapAfterDeadTick(t, f)
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
						want = e.taskIDsFor("a", cronTimes(t, "*/15 * * * *", "UTC", at, end)...)
					}
					wantStrings(t, "tasks", e.taskIDs(), want)
				})
			}
		}
	}
}

// overlapAfterDeadTick kills a tick before each of its writes and keeps
// the runs where the fire's task was made but not the state write: the
// next fire, overlap skip, must wait for that task.
func overlapAfterDeadTick(t *testing.T, f Factory) {
	req := schedule.Request{ID: "a", Cron: "* * * * *", Overlap: schedule.OverlapSkip}
	created := utc("2026-05-01T09:14:30Z")
	crashTick := utc("2026-05-01T09:15:10Z")
	probe := newEnv(t, f)
	probe.create(req, created)
	writes := countCrashWrites(t, f, crashOp{name: "tick", setup: func(e *env) { e.create(req, created) },
		run: func(sc *schedule.Scheduler, _ time.Time) error { _, err := sc.Tick(ctx, crashTick); return err }})
	tested := 0
	for n := 1; n <= writes; n++ {
		e := newEnv(t, f)
		e.create(req, created)
		x := e.fireID("a", utc("2026-05-01T09:15:00Z"))
		faulty := storefault.New(e.s)
		faulty.Fail(n, storefault.FailBefore)
		_, _ = e.process(faulty).Tick(ctx, crashTick)
		if _, err := e.q.Get(ctx, e.taskRef(x)); err != nil || e.state("a").LastTaskID == x {
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
