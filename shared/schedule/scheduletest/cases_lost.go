package scheduletest

import (
	"testing"
	"time"

	"github.com/s3q/s3q/shared/internal/check"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/schedule"
	"github.com/s3q/s3q/shared/store/storefault"
)

// Lost answers: each write of a create and of a tick's
// fire lands and its answer is lost, the process lives on. Each case
// checks what the caller sees and what is left behind: the schedule
// exists and fires once per cron time, one task per fire, no key left
// blocked.

// newLossEnv returns an env whose store fails chosen writes on demand.
func newLossEnv(t testing.TB, f Factory) (*env, *storefault.Store) {
	e := newEnv(t, f)
	fs := storefault.New(e.s)
	e.s = fs
	e.q = queues.NewQueue(fs, queues.Options{})
	e.sc = schedule.New(fs, e.q, e.opts)
	return e, fs
}

func wantHits(t testing.TB, fs *storefault.Store, n int) {
	t.Helper()
	if got := fs.Hits(); got != n {
		t.Fatalf("the armed fault hit %d writes, want %d", got, n)
	}
}

func runLost(t *testing.T, f Factory) {
	quarter := schedule.Request{ID: "a", TaskType: "report.make", Cron: "*/15 * * * *"}
	fires := func(t *testing.T, e *env) {
		t.Helper()
		e.tick(crashAt)
		e.tick(utc("2026-05-01T09:30:10Z"))
		wantStrings(t, "tasks", e.taskIDs(), e.taskIDsFor("a", utc("2026-05-01T09:15:00Z"), utc("2026-05-01T09:30:00Z")))
		if h := e.history("a"); len(h) != 2 {
			t.Fatalf("%d history entries, want 2", len(h))
		}
	}

	for _, c := range []struct{ name, op, prefix string }{
		{"intent_marker", storefault.OpPut, schedule.DuePrefix},
		{"definition", storefault.OpPutIfAbsent, schedule.DefinitionKey("a")},
		{"state", storefault.OpPutIfAbsent, schedule.StateKey(schedRef("a"))},
	} {
		t.Run("a_create_whose_"+c.name+"_answer_was_lost_makes_the_schedule_once", func(t *testing.T) {
			e, fs := newLossEnv(t, f)
			fs.FailMatching(c.op, c.prefix, storefault.LoseAnswer, 1)
			sc, err := e.sc.Create(ctx, quarter, t0)
			if err != nil {
				t.Fatalf("create: %v", err)
			}
			wantHits(t, fs, 1)
			if sc.ID != "a" || sc.NextRunAt == nil || !sc.NextRunAt.Equal(utc("2026-05-01T09:15:00Z")) {
				t.Fatalf("create answered %+v", sc)
			}
			// The same create again is refused: the id is taken.
			_, err = e.sc.Create(ctx, quarter, t0.Add(time.Second))
			check.Err(t, err, schedule.ErrExists)
			fires(t, e)
		})
	}

	for _, c := range []struct{ name, op, prefix string }{
		{"task_record", storefault.OpPutIfAbsent, "q/default/tasks/"},
		{"task_marker", storefault.OpPut, "q/default/index/ready/"},
		{"history_entry", storefault.OpPut, schedule.HistoryPrefix("a")},
		{"next_due_marker", storefault.OpPut, schedule.DuePrefix},
		{"state", storefault.OpPutIfMatch, schedule.StateKey(schedRef("a"))},
	} {
		t.Run("a_tick_whose_"+c.name+"_answer_was_lost_fires_once", func(t *testing.T) {
			e, fs := newLossEnv(t, f)
			e.create(quarter, t0)
			fs.FailMatching(c.op, c.prefix, storefault.LoseAnswer, 1)
			rep := e.tick(crashAt)
			wantHits(t, fs, 1)
			if rep.Fired != 1 {
				t.Fatalf("tick fired %d, want 1", rep.Fired)
			}
			st := e.state("a")
			if st.LastTaskID != e.fireID("a", utc("2026-05-01T09:15:00Z")) || st.NextRunAt == nil || !st.NextRunAt.Equal(utc("2026-05-01T09:30:00Z")) {
				t.Fatalf("state after the tick: %+v", st)
			}
			// A second tick of the same minute fires nothing more.
			if rep := e.tick(crashAt.Add(time.Second)); rep.Fired != 0 {
				t.Fatalf("the next tick fired %d", rep.Fired)
			}
			fires(t, e)
			for _, id := range e.taskIDs() {
				if task := e.task(id); task.Status != queue.StatusPending {
					t.Fatalf("task %s is %s", id, task.Status)
				}
			}
		})
	}
}
