// Package scheduletest is the conformance suite of the schedule core: the
// same cases run against every store (the in-memory store, the in-process
// gofakes3 server and versitygw), including ticks racing each other and
// ticks that die between their writes.
//
// Cases are named as sentences. Time is always a parameter: cases pass
// times to Tick and step them forward instead of sleeping.
package scheduletest

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queue/queuetest"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/schedule"
	"github.com/s3q/s3q/shared/store"
)

// Factory makes a fresh, empty store for one test.
type Factory struct {
	Name string
	// New returns an empty store (for a server: a fresh key prefix).
	New func(t testing.TB) store.Store
	// Real is true for S3-compatible servers.
	Real bool
	// DayHours is how many simulated hours the racing-ticks day runs.
	// Defaults to 24.
	DayHours int
}

// Run runs every case against f.
func Run(t *testing.T, f Factory) {
	t.Run("crud", func(t *testing.T) { runCRUD(t, f) })
	t.Run("bad_input", func(t *testing.T) { runBadInput(t, f) })
	t.Run("tick", func(t *testing.T) { runTick(t, f); runTickFires(t, f) })
	t.Run("cron", func(t *testing.T) { runCron(t, f) })
	t.Run("crash", func(t *testing.T) { runCrash(t, f); runCrashUnretried(t, f) })
	t.Run("race", func(t *testing.T) { runRace(t, f) })
	t.Run("day", func(t *testing.T) { runDay(t, f) })
	t.Run("lost_answer", func(t *testing.T) { runLost(t, f) })
}

var ctx = context.Background()

// t0 is the fixed start of most cases' clocks: Friday 2026-05-01 09:00:30 UTC.
var t0 = time.Date(2026, 5, 1, 9, 0, 30, 0, time.UTC)

// env is one case's scheduler over a fresh store.
type env struct {
	t    testing.TB
	s    store.Store
	q    *queue.Queue
	sc   *schedule.Scheduler
	opts schedule.Options
	// defs are the definitions create made, by reference (their secrets
	// outlive a delete, for the ids of what they fired).
	defs map[string]schedule.Definition
}

func newEnv(t testing.TB, f Factory, opts ...func(*schedule.Options)) *env {
	t.Helper()
	var o schedule.Options
	for _, fn := range opts {
		fn(&o)
	}
	s := f.New(t)
	q := queues.NewQueue(s, queues.Options{})
	return &env{t: t, s: s, q: q, sc: schedule.New(s, q, o), opts: o}
}

// process returns a fresh Scheduler (a new process) over s.
func (e *env) process(s store.Store) *schedule.Scheduler {
	return schedule.New(s, queues.NewQueue(s, queues.Options{}), e.opts)
}

func (e *env) create(req schedule.Request, now time.Time) schedule.Schedule {
	e.t.Helper()
	if req.TaskType == "" {
		req.TaskType = "report.make"
	}
	sc, err := e.sc.Create(ctx, req, now)
	if err != nil {
		e.t.Fatalf("create %s: %v", req.ID, err)
	}
	q := req.Queue
	if q == "" {
		q = queue.DefaultQueue
	}
	if e.defs == nil {
		e.defs = map[string]schedule.Definition{}
	}
	e.defs[q+"/"+req.ID] = e.def(q + "/" + req.ID)
	return sc
}

func (e *env) get(id string, now time.Time) schedule.Schedule {
	e.t.Helper()
	view, bare := e.in(id)
	sc, err := view.Get(ctx, bare, now)
	if err != nil {
		e.t.Fatalf("get %s: %v", id, err)
	}
	return sc
}

func (e *env) tick(now time.Time) schedule.TickReport {
	e.t.Helper()
	rep, err := e.sc.Tick(ctx, now)
	if err != nil {
		e.t.Fatalf("tick at %s: %v", now.Format(time.RFC3339), err)
	}
	return rep
}

// tickEvery ticks from (from, to] every step and returns the last report.
func (e *env) tickEvery(from, to time.Time, step time.Duration) {
	e.t.Helper()
	for now := from.Add(step); !now.After(to); now = now.Add(step) {
		e.tick(now)
	}
}

// keys lists every key under prefix.
func (e *env) keys(prefix string) []string {
	e.t.Helper()
	return listKeys(e.t, e.s, prefix)
}

func listKeys(t testing.TB, s store.Store, prefix string) []string {
	t.Helper()
	var out []string
	for it, err := range store.All(ctx, s, prefix) {
		if err != nil {
			t.Fatalf("list %s: %v", prefix, err)
		}
		out = append(out, it.Key)
	}
	sort.Strings(out)
	return out
}

// taskIDs returns the ids of every task in the store (every queue), sorted.
func (e *env) taskIDs() []string {
	e.t.Helper()
	var ids []string
	for _, k := range e.keys(queue.QueuesPrefix) {
		if strings.Contains(k, "/tasks/") {
			ids = append(ids, strings.TrimSuffix(k[strings.LastIndexByte(k, '/')+1:], ".json"))
		}
	}
	sort.Strings(ids)
	return ids
}

// schedRef returns the reference of a schedule: as given when it names
// a queue, else in the default queue.
func schedRef(id string) string {
	if strings.Contains(id, "/") {
		return id
	}
	return queue.DefaultQueue + "/" + id
}

// sref returns the reference of schedule id: as given when it names a
// queue, else that of the one schedule of that id the test created, else
// in the default queue.
func (e *env) sref(id string) string {
	if strings.Contains(id, "/") {
		return id
	}
	found := ""
	for r := range e.defs {
		if strings.HasSuffix(r, "/"+id) {
			if found != "" {
				return schedRef(id)
			}
			found = r
		}
	}
	if found != "" {
		return found
	}
	return schedRef(id)
}

// in returns the scheduler's view of schedule id's queue, and the bare id.
func (e *env) in(id string) (*schedule.Scheduler, string) {
	q, bare, _ := strings.Cut(e.sref(id), "/")
	return e.sc.In(q), bare
}

// def returns the stored definition of schedule id (a reference, or an
// id in the default queue), secret included.
func (e *env) def(id string) schedule.Definition {
	e.t.Helper()
	obj, err := e.s.Get(ctx, schedule.DefinitionKey(e.sref(id)))
	if d, ok := e.defs[e.sref(id)]; ok && err != nil {
		return d // deleted since
	}
	if err != nil {
		e.t.Fatalf("get definition %s: %v", id, err)
	}
	var d schedule.Definition
	if err := json.Unmarshal(obj.Body, &d); err != nil {
		e.t.Fatal(err)
	}
	return d
}

// fireID returns the id of the task schedule id fires at at (tests know
// the secret; callers of the API never do).
func (e *env) fireID(id string, at time.Time) string {
	e.t.Helper()
	d := e.def(id)
	return schedule.TaskID(&d, at)
}

// triggerID returns the id of the task of a trigger of schedule id at now.
func (e *env) triggerID(id string, now time.Time) string {
	e.t.Helper()
	d := e.def(id)
	return schedule.TriggerTaskID(&d, now)
}

func (e *env) task(id string) queue.Task {
	e.t.Helper()
	task, err := e.q.Get(ctx, e.taskRef(id))
	if err != nil {
		e.t.Fatalf("get task %s: %v", id, err)
	}
	return task
}

func (e *env) state(id string) schedule.State {
	e.t.Helper()
	obj, err := e.s.Get(ctx, schedule.StateKey(e.sref(id)))
	if err != nil {
		e.t.Fatalf("get state %s: %v", id, err)
	}
	var st schedule.State
	if err := json.Unmarshal(obj.Body, &st); err != nil {
		e.t.Fatal(err)
	}
	return st
}

func (e *env) history(id string) []schedule.Fire {
	e.t.Helper()
	var out []schedule.Fire
	req := schedule.HistoryRequest{Limit: 1000}
	for {
		view, bare := e.in(id)
		res, err := view.History(ctx, bare, req)
		if err != nil {
			e.t.Fatalf("history %s: %v", id, err)
		}
		out = append(out, res.Fires...)
		if res.NextCursor == "" {
			return out
		}
		req.Cursor = res.NextCursor
	}
}

// taskRef returns the reference of the one task of id in any queue, or
// id when there is none (ids are unique per queue only).
func (e *env) taskRef(id string) string {
	if strings.Contains(id, "/") {
		return id
	}
	ref, err := queuetest.FindTask(ctx, e.s, id)
	if err != nil {
		e.t.Fatal(err)
	}
	if ref == "" {
		return id
	}
	return ref
}

// taskIDsFor returns the task ids of schedule id's fires at times.
func (e *env) taskIDsFor(id string, times ...time.Time) []string {
	out := make([]string, len(times))
	for i, t := range times {
		out[i] = e.fireID(id, t)
	}
	sort.Strings(out)
	return out
}

// cronTimes returns the fire times of expr in tz in (from, to].
func cronTimes(t testing.TB, expr, tz string, from, to time.Time) []time.Time {
	t.Helper()
	sp, err := schedule.ParseSpec(expr, tz)
	if err != nil {
		t.Fatal(err)
	}
	var out []time.Time
	for n := sp.Next(from); !n.IsZero() && !n.After(to); n = sp.Next(n) {
		out = append(out, n)
	}
	return out
}

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func ptr[T any](v T) *T { return &v }

func wantStrings(t testing.TB, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("%s:\n got %d: %v\nwant %d: %v", what, len(got), got, len(want), want)
	}
}

func rfc(ts []time.Time) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.UTC().Format(time.RFC3339)
	}
	return out
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}
