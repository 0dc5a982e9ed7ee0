package scheduletest

import (
	"context"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/schedule"
	"github.com/s3q/s3q/shared/store"
)

// runTickFires: a trigger at a cron time is a fire of its own, and a
// catch-up tick stops at its budget and leaves the rest to the next.
func runTickFires(t *testing.T, f Factory) {
	t.Run("a_trigger_at_a_cron_time_makes_a_task_of_its_own", func(t *testing.T) {
		t.Parallel()
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
		if fr.TaskID == e.fireID("a", at) {
			t.Fatalf("the trigger took the cron fire's task id %s", fr.TaskID)
		}
	})
	t.Run("a_catch_up_tick_stops_at_its_budget_and_the_next_ticks_carry_on", func(t *testing.T) {
		catchUpBudget(t, f)
	})
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

// catchUpBudget: an hour of missed fires on a slow store takes more than
// one tick's budget.
func catchUpBudget(t *testing.T, f Factory) {
	e := newEnv(t, f, func(o *schedule.Options) { o.TickBudget = 150 * time.Millisecond })
	e.create(schedule.Request{ID: "a", Cron: "* * * * *", MissedRuns: schedule.MissedCatchUp}, utc("2026-05-01T08:00:00Z"))
	sc := e.process(slowStore{Store: e.s, d: 5 * time.Millisecond})
	now := utc("2026-05-01T09:00:30Z")
	want := e.taskIDsFor("a", cronTimes(t, "* * * * *", "UTC", utc("2026-05-01T08:00:00Z"), now)...) // 60
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
