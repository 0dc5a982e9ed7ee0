package scheduletest

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/schedule"
	"github.com/s3q/s3q/shared/store"
)

// runRace: a create that stalls past its first fire, and a delete that
// meets a create of the same id, leave a schedule that fires.
func runRace(t *testing.T, f Factory) {
	t.Run("a_create_that_stalls_before_its_state_write_past_its_first_fire_still_fires_every_cron_time", func(t *testing.T) {
		t.Parallel()
		createStalledBeforeState(t, f)
	})
	t.Run("a_delete_racing_a_create_of_the_same_id_leaves_the_new_schedule_alive", func(t *testing.T) {
		t.Parallel()
		deleteRacingCreate(t, f)
	})
}

// hookStore runs after once, after the first successful Delete of key.
type hookStore struct {
	store.Store
	key   string
	once  sync.Once
	after func()
	ran   atomic.Bool
}

func (h *hookStore) Delete(ctx context.Context, key string) error {
	err := h.Store.Delete(ctx, key)
	if err == nil && key == h.key {
		h.once.Do(func() { h.ran.Store(true); h.after() })
	}
	return err
}

// deleteRacingCreate lets a create of the id land between a delete's
// definition delete and its state write.
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
	if !h.ran.Load() {
		t.Fatal("the delete never deleted the definition: no create raced it")
	}
	sc := e.get("a", recreateAt)
	if sc.Cron != "*/30 * * * *" || sc.NextRunAt == nil {
		t.Fatalf("schedule after the race: %+v", sc)
	}
	if st := e.state("a"); st.Deleted || st.NextRunAt == nil {
		t.Fatalf("the new schedule's state was buried: %+v", st)
	}
	e.tickEvery(t0, utc("2026-05-01T10:00:30Z"), 5*time.Minute)
	wantStrings(t, "tasks", e.taskIDs(), e.taskIDsFor("a", utc("2026-05-01T09:30:00Z"), utc("2026-05-01T10:00:00Z")))
}

// stallStore runs before once, before the first PutIfAbsent of key.
type stallStore struct {
	store.Store
	key    string
	once   sync.Once
	before func()
	ran    atomic.Bool
}

func (s *stallStore) PutIfAbsent(ctx context.Context, key string, body []byte, opts ...store.PutOption) (string, error) {
	if key == s.key {
		s.once.Do(func() { s.ran.Store(true); s.before() })
	}
	return s.Store.PutIfAbsent(ctx, key, body, opts...)
}

// createStalledBeforeState stalls a create before its state write until
// a tick past its first fire time has run.
func createStalledBeforeState(t *testing.T, f Factory) {
	e := newEnv(t, f)
	at := utc("2026-05-01T09:14:30Z") // the first fire, 09:15, is close
	st := &stallStore{Store: e.s, key: schedule.StateKey(schedRef("a")), before: func() {
		// The create stalls past the first fire time and the
		// stale-marker grace; a tick meets its marker.
		e.tick(utc("2026-05-01T09:17:30Z"))
	}}
	if _, err := e.process(st).Create(ctx, schedule.Request{ID: "a", TaskType: "report.make", Cron: "*/15 * * * *"}, at); err != nil {
		t.Fatal(err)
	}
	if !st.ran.Load() {
		t.Fatal("the create never wrote its state with PutIfAbsent: nothing stalled it")
	}
	e.tickEvery(utc("2026-05-01T09:17:30Z"), utc("2026-05-01T10:02:30Z"), 5*time.Minute)
	wantStrings(t, "tasks", e.taskIDs(), e.taskIDsFor("a", cronTimes(t, "*/15 * * * *", "UTC", at, utc("2026-05-01T10:02:30Z"))...))
}
