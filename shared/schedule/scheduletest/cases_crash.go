package scheduletest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/internal/check"
	"github.com/s3q/s3q/shared/schedule"
	"github.com/s3q/s3q/shared/store"
	"github.com/s3q/s3q/shared/store/storefault"
)

// crashOp is one operation to crash part-way through and then retry in a
// fresh process.
type crashOp struct {
	name  string
	setup func(e *env)
	// run performs the operation through sc at now; retried, it may
	// answer with one of the errors in ok.
	run func(sc *schedule.Scheduler, now time.Time) error
	ok  []error
	// check verifies the outcome after the retry.
	check func(t *testing.T, e *env)
	// cleanAt is when a last tick, past the stale-marker grace of
	// everything check did, cleans up. Defaults to crashAt + 3m.
	cleanAt time.Time
}

// crashAt is when every crashed operation runs: 09:15:10, with 09:15 due
// for a "*/15" schedule created at t0.
var crashAt = utc("2026-05-01T09:15:10Z")

func crashOps() []crashOp {
	quarter := schedule.Request{ID: "a", Cron: "*/15 * * * *"}
	create := func(r schedule.Request) func(e *env) { return func(e *env) { e.create(r, t0) } }
	firesAt := func(times ...string) func(t *testing.T, e *env) {
		return func(t *testing.T, e *env) {
			var ts []time.Time
			for _, s := range times {
				ts = append(ts, utc(s))
			}
			wantStrings(t, "tasks", e.taskIDs(), e.taskIDsFor("a", ts...))
		}
	}
	return []crashOp{
		{name: "create", setup: func(*env) {}, ok: []error{schedule.ErrExists}, cleanAt: utc("2026-05-01T09:33:10Z"),
			run: func(sc *schedule.Scheduler, now time.Time) error {
				_, err := sc.Create(ctx, schedule.Request{ID: "a", TaskType: "report.make", Cron: "*/15 * * * *"}, t0)
				return err
			},
			check: func(t *testing.T, e *env) {
				e.tick(crashAt)
				e.tick(utc("2026-05-01T09:30:10Z"))
				firesAt("2026-05-01T09:15:00Z", "2026-05-01T09:30:00Z")(t, e)
			}},
		{name: "update_of_the_cron", setup: create(schedule.Request{ID: "a", Cron: "0 12 * * *"}), cleanAt: utc("2026-05-01T12:03:10Z"),
			run: func(sc *schedule.Scheduler, now time.Time) error {
				_, err := sc.Update(ctx, "a", schedule.Request{TaskType: "report.make", Cron: "*/15 * * * *"}, t0.Add(time.Minute))
				return err
			},
			check: func(t *testing.T, e *env) {
				e.tick(crashAt)
				e.tick(utc("2026-05-01T12:00:10Z"))
				firesAt("2026-05-01T09:15:00Z", "2026-05-01T12:00:00Z")(t, e)
			}},
		{name: "pause", setup: create(quarter),
			run: func(sc *schedule.Scheduler, now time.Time) error {
				_, err := sc.Pause(ctx, "a", t0.Add(time.Minute))
				return err
			},
			check: func(t *testing.T, e *env) {
				e.tick(crashAt)
				firesAt()(t, e)
			}},
		{name: "resume", setup: create(schedule.Request{ID: "a", Cron: "*/15 * * * *", Enabled: ptr(false)}),
			run: func(sc *schedule.Scheduler, now time.Time) error {
				_, err := sc.Resume(ctx, "a", t0.Add(time.Minute))
				return err
			},
			check: func(t *testing.T, e *env) {
				e.tick(crashAt)
				firesAt("2026-05-01T09:15:00Z")(t, e)
			}},
		{name: "delete", ok: []error{schedule.ErrNotFound}, cleanAt: utc("2026-05-01T09:33:10Z"),
			setup: func(e *env) {
				e.create(quarter, t0)
				e.tick(crashAt) // one fire, one history entry
			},
			run: func(sc *schedule.Scheduler, now time.Time) error { return sc.Delete(ctx, "a", now) },
			check: func(t *testing.T, e *env) {
				e.tick(utc("2026-05-01T09:30:10Z"))
				firesAt("2026-05-01T09:15:00Z")(t, e)
				_, err := e.sc.Get(ctx, "a", crashAt)
				check.Err(t, err, schedule.ErrNotFound)
				wantStrings(t, "schedule keys", e.keys("q/default/schedules/"), []string{"q/default/schedules/a/state.json"})
			}},
		{name: "trigger", setup: create(schedule.Request{ID: "a", Cron: "@daily"}),
			run: func(sc *schedule.Scheduler, now time.Time) error {
				_, err := sc.Trigger(ctx, "a", now)
				return err
			},
			check: func(t *testing.T, e *env) {
				wantStrings(t, "tasks", e.taskIDs(), []string{e.triggerID("a", crashAt)})
				if h := e.history("a"); len(h) != 1 || !h[0].Trigger {
					t.Fatalf("history %+v", h)
				}
			}},
		{name: "tick_fire", setup: create(quarter), cleanAt: utc("2026-05-01T09:33:10Z"),
			run: func(sc *schedule.Scheduler, now time.Time) error {
				_, err := sc.Tick(ctx, now)
				return err
			},
			check: func(t *testing.T, e *env) {
				if h := e.history("a"); len(h) != 1 {
					t.Fatalf("history %+v", h)
				}
				e.tick(utc("2026-05-01T09:30:10Z"))
				firesAt("2026-05-01T09:15:00Z", "2026-05-01T09:30:00Z")(t, e)
			}},
		{name: "tick_catch_up_of_three_times",
			setup: func(e *env) {
				e.create(schedule.Request{ID: "a", Cron: "*/5 * * * *", MissedRuns: schedule.MissedCatchUp}, utc("2026-05-01T09:00:00Z"))
			},
			run: func(sc *schedule.Scheduler, now time.Time) error {
				_, err := sc.Tick(ctx, now)
				return err
			},
			check: func(t *testing.T, e *env) {
				firesAt("2026-05-01T09:05:00Z", "2026-05-01T09:10:00Z", "2026-05-01T09:15:00Z")(t, e)
			}},
		{name: "tick_that_skips_an_overlapping_fire",
			setup: func(e *env) {
				e.create(schedule.Request{ID: "a", Cron: "*/5 * * * *", Overlap: schedule.OverlapSkip}, utc("2026-05-01T09:08:00Z"))
				e.tick(utc("2026-05-01T09:10:10Z"))
			},
			run: func(sc *schedule.Scheduler, now time.Time) error {
				_, err := sc.Tick(ctx, now)
				return err
			},
			check: func(t *testing.T, e *env) {
				firesAt("2026-05-01T09:10:00Z")(t, e)
				h := e.history("a")
				if len(h) != 2 || h[1].Skipped != schedule.SkippedOverlap {
					t.Fatalf("history %+v", h)
				}
			}},
	}
}

func runCrash(t *testing.T, f Factory) {
	for _, op := range crashOps() {
		writes := countCrashWrites(t, f, op)
		for _, mode := range []storefault.FaultMode{storefault.FailBefore, storefault.FailAfter} {
			modeName := map[storefault.FaultMode]string{storefault.FailBefore: "before", storefault.FailAfter: "after"}[mode]
			for n := 1; n <= writes; n++ {
				name := fmt.Sprintf("a_crash_%s_write_%d_of_%d_of_%s_is_finished_by_a_retry", modeName, n, writes, op.name)
				t.Run(name, func(t *testing.T) {
					t.Parallel() // each in its own store
					crashOnce(t, f, op, n, mode)
				})
			}
		}
	}
}

// countCrashWrites runs op once without a crash and counts its writes.
func countCrashWrites(t *testing.T, f Factory, op crashOp) int {
	e := newEnv(t, f)
	op.setup(e)
	counting := store.NewCounting(e.s)
	if err := op.run(e.process(counting), crashAt); err != nil {
		t.Fatalf("%s without a crash: %v", op.name, err)
	}
	c := counting.Counts()
	if c.Put+c.Delete == 0 {
		t.Fatalf("%s makes no write", op.name)
	}
	return int(c.Put + c.Delete)
}

// crashOnce crashes op at its n-th write, retries it in a fresh process,
// and checks the outcome and that the due index matches the state.
func crashOnce(t *testing.T, f Factory, op crashOp, n int, mode storefault.FaultMode) {
	e := newEnv(t, f)
	op.setup(e)
	faulty := storefault.New(e.s)
	faulty.Fail(n, mode)
	_ = op.run(e.process(faulty), crashAt) // may or may not report the crash
	if !faulty.Fired() {
		t.Fatalf("the crash at write %d did not happen", n)
	}
	if err := op.run(e.process(e.s), crashAt); err != nil {
		allowed := false
		for _, ok := range op.ok {
			allowed = allowed || errors.Is(err, ok)
		}
		if !allowed {
			t.Fatalf("%s retried: %v", op.name, err)
		}
	}
	op.check(t, e)
	// A tick past the stale-marker grace leaves exactly the marker the
	// state names (none when there is no live state).
	cleanAt := op.cleanAt
	if cleanAt.IsZero() {
		cleanAt = crashAt.Add(3 * time.Minute)
	}
	e.tick(cleanAt)
	var want []string
	if obj, err := e.s.Get(ctx, schedule.StateKey(schedRef("a"))); err == nil && len(obj.Body) > 0 {
		if st := e.state("a"); st.DueKey != "" {
			want = []string{st.DueKey}
		}
	}
	wantStrings(t, "due", e.keys("due/"), want)
}
