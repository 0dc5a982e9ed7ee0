package schedule

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/store"
)

// Options tune a Scheduler. The zero value is ready to use.
type Options struct {
	// StaleMarkerGrace is how far behind now a due marker's time must be
	// before a tick treats a marker its state does not name (or a marker
	// without a state) as left by a writer that died, and removes it.
	// Every writer puts its marker with a time at or after its own now
	// and finishes its writes well within this. Defaults to 2m.
	StaleMarkerGrace time.Duration

	// TickBudget is the wall-clock time one Tick may spend before it stops
	// taking up due schedules and leaves the rest to the next tick (it also
	// stops 5s before its context's deadline). Defaults to 40s.
	TickBudget time.Duration

	// Clock reads the wall clock, for TickBudget and the context's
	// deadline only, as queue.SweepOptions.Clock does for the sweep: fire
	// times come from the now a Tick is given. Defaults to time.Now.
	Clock func() time.Time

	// MaxPerTick bounds how many due markers one Tick takes up. Defaults
	// to no limit (the budget decides).
	MaxPerTick int

	// MaxCatchUpPerTick bounds how many fires of one catch_up schedule one
	// Tick makes; the rest are fired by the next ticks, oldest first, as
	// long as they are still inside the window. Defaults to 100.
	MaxCatchUpPerTick int

	// Parallel is how many due schedules one Tick works on at once.
	// Defaults to 4.
	Parallel int
}

// Scheduler is the recurring-schedule core over one store, firing tasks
// into a queue on the same store. It is safe for concurrent use, and any
// number of Schedulers (processes) may tick the same bucket at once.
type Scheduler struct {
	store store.Store
	q     *queue.Queue
	opts  Options

	specs *sync.Map // cron + "\x00" + timezone -> *Spec
	// scope, when set, is the only queue whose schedules this view acts on.
	scope string
	// max, when set, is the most schedules a create leaves in a queue.
	max int
}

// In returns a view of s that acts only on the schedules of the named
// queue: an id is looked up in that queue's folder, so another queue's
// schedule is ErrNotFound, as if it did not exist. The name must be valid
// (queue.ValidateQueueName).
func (s *Scheduler) In(queueName string) *Scheduler {
	v := *s
	v.scope = queueName
	return &v
}

// Bounded returns a view of s whose Create refuses a new schedule, with
// ErrTooMany, in a queue that already holds max of them (a queue's
// max_schedules). 0 is no bound, as outside such a view.
//
// The count is a LIST of the queue's schedules folder (about one per
// schedule whose history fills a page) before the create's writes, so
// creates racing each other at the bound may pass it by as many as race.
func (s *Scheduler) Bounded(max int) *Scheduler {
	v := *s
	v.max = max
	return &v
}

// locate resolves the schedule an operation names: an id in the view's
// queue (In), or outside a view in the default queue. It returns the
// schedule's reference (ref).
func (s *Scheduler) locate(id string) (string, error) {
	if err := ValidateID(id); err != nil {
		return "", err
	}
	q := s.scope
	if q == "" {
		q = queue.DefaultQueue
	}
	return ref(q, id), nil
}

// New returns a Scheduler over s that submits fired tasks through q, a
// queue on the same store with the deployment's options (its shards
// above all: every process must agree on them). q is required.
func New(s store.Store, q *queue.Queue, opts Options) *Scheduler {
	if q == nil {
		panic("schedule: New needs the queue fired tasks go to")
	}
	if opts.StaleMarkerGrace <= 0 {
		opts.StaleMarkerGrace = 2 * time.Minute
	}
	if opts.TickBudget <= 0 {
		opts.TickBudget = 40 * time.Second
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.MaxCatchUpPerTick <= 0 {
		opts.MaxCatchUpPerTick = 100
	}
	if opts.Parallel <= 0 {
		opts.Parallel = 4
	}
	return &Scheduler{store: s, q: q, opts: opts, specs: &sync.Map{}}
}

// Queue returns the queue fired tasks go to.
func (s *Scheduler) Queue() *queue.Queue { return s.q }

// norm is the one place now is normalised: UTC, microseconds.
func norm(now time.Time) time.Time { return now.UTC().Truncate(time.Microsecond) }

// maxCASAttempts bounds a read-modify-write loop that keeps losing races.
const maxCASAttempts = 10

// spec returns the parsed expression of def (cached).
func (s *Scheduler) spec(def *Definition) (*Spec, error) {
	k := def.Cron + "\x00" + def.Timezone
	if v, ok := s.specs.Load(k); ok {
		return v.(*Spec), nil
	}
	sp, err := ParseSpec(def.Cron, def.Timezone)
	if err != nil {
		return nil, fmt.Errorf("schedule %s: stored expression: %w", def.ID, err)
	}
	s.specs.Store(k, sp)
	return sp, nil
}

// loadDef reads the definition of schedule id (a reference). A missing
// one is ErrNotFound.
func (s *Scheduler) loadDef(ctx context.Context, id string) (Definition, string, error) {
	obj, err := s.store.Get(ctx, DefinitionKey(id))
	if errors.Is(err, store.ErrNotFound) {
		return Definition{}, "", fmt.Errorf("schedule %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return Definition{}, "", fmt.Errorf("get schedule %s: %w", id, err)
	}
	var d Definition
	if err := json.Unmarshal(obj.Body, &d); err != nil {
		return Definition{}, "", fmt.Errorf("decode schedule %s: %w", id, err)
	}
	if d.ref() != id {
		return Definition{}, "", fmt.Errorf("schedule %s: its definition names %s: %w", id, d.ref(), ErrNotFound)
	}
	return d, obj.ETag, nil
}

// loadState reads a state. A missing one is returned as the zero State
// with an empty ETag and no error.
func (s *Scheduler) loadState(ctx context.Context, id string) (State, string, error) {
	obj, err := s.store.Get(ctx, StateKey(id))
	if errors.Is(err, store.ErrNotFound) {
		q, bare := splitRef(id)
		return State{Queue: q, ScheduleID: bare}, "", nil
	}
	if err != nil {
		return State{}, "", fmt.Errorf("get state of schedule %s: %w", id, err)
	}
	var st State
	if err := json.Unmarshal(obj.Body, &st); err != nil {
		return State{}, "", fmt.Errorf("decode state of schedule %s: %w", id, err)
	}
	return st, obj.ETag, nil
}

// writeState replaces cur (read with etag; "" when there was none) by next
// in one conditional write, with the marker protocol around it: the marker
// next names is written first, the marker cur names is deleted after. A
// lost race returns store.ErrPrecondition and leaves the new marker as a
// stale hint (never deleted here: another writer of the same revision may
// name the same key).
func (s *Scheduler) writeState(ctx context.Context, cur *State, etag string, next *State) error {
	if next.DueKey != "" && next.DueKey != cur.DueKey {
		if _, err := store.PutOwn(ctx, s.store, next.DueKey, nil); err != nil {
			return fmt.Errorf("write due marker %s: %w", next.DueKey, err)
		}
	}
	body, err := json.Marshal(next)
	if err != nil {
		return fmt.Errorf("encode state of schedule %s: %w", next.ScheduleID, err)
	}
	if etag == "" {
		_, err = store.CreateOwn(ctx, s.store, StateKey(next.ref()), body, nil)
	} else {
		_, err = store.SwapOwn(ctx, s.store, StateKey(next.ref()), body, etag, nil)
	}
	if err != nil {
		return fmt.Errorf("write state of schedule %s: %w", next.ScheduleID, err)
	}
	if cur.DueKey != "" && cur.DueKey != next.DueKey {
		// Best effort: a marker left behind is stale (its revision is not
		// above the state's) and the next tick that meets it deletes it.
		_ = s.store.Delete(ctx, cur.DueKey)
	}
	return nil
}

// putIntent writes, before a write of schedule id's definition, a due
// marker at now with a revision above the state's: if the writer dies
// after the definition lands and before the state follows it, the marker
// makes a tick look at the schedule and bring the state up to date (see
// handle). It returns the marker's key, for dropIntent.
func (s *Scheduler) putIntent(ctx context.Context, id string, now time.Time) (string, error) {
	st, _, err := s.loadState(ctx, id)
	if err != nil {
		return "", err
	}
	key := dueKey(now, id, st.Rev+1)
	if _, err := store.PutOwn(ctx, s.store, key, nil); err != nil {
		return "", fmt.Errorf("write due marker %s: %w", key, err)
	}
	return key, nil
}

// dropIntent deletes the marker of putIntent once the state follows the
// definition, unless the state names it (best effort: a marker left
// behind is stale, and a tick deletes it).
func (s *Scheduler) dropIntent(ctx context.Context, key string, st *State) {
	if key != "" && key != st.DueKey {
		_ = s.store.Delete(ctx, key)
	}
}

// reconcile returns the state st becomes when it follows def, written at
// now: paused when def is disabled; else the same next fire time when the
// expression is unchanged, or the first fire time after the definition
// changed (def.UpdatedAt). A new incarnation of an id (re-created after a
// delete) starts afresh.
func (s *Scheduler) reconcile(def *Definition, st State, now time.Time) (State, error) {
	sp, err := s.spec(def)
	if err != nil {
		return State{}, err
	}
	sameIncarnation := !st.Deleted && st.DefCreatedAt.Equal(def.CreatedAt)
	ns := st
	ns.Queue, ns.ScheduleID = def.Queue, def.ID
	ns.Rev = st.Rev + 1
	ns.DefVersion, ns.DefCreatedAt = def.Version, def.CreatedAt
	ns.Deleted = false
	ns.UpdatedAt = now
	if !sameIncarnation {
		ns.LastRunAt, ns.LastTaskID, ns.NextRunAt = nil, "", nil
	}
	switch {
	case !def.Enabled:
		ns.NextRunAt = nil
	case sameIncarnation && st.NextRunAt != nil && st.Cron == def.Cron && st.Timezone == def.Timezone:
		// Unchanged expression: keep the fire time the state waits for.
	default:
		from := def.UpdatedAt
		if ns.LastRunAt != nil && ns.LastRunAt.After(from) {
			from = *ns.LastRunAt
		}
		ns.NextRunAt = timePtr(sp.Next(from))
	}
	ns.Cron, ns.Timezone = def.Cron, def.Timezone
	ns.DueKey = ""
	if ns.NextRunAt != nil {
		ns.DueKey = dueKey(markerTime(*ns.NextRunAt, now), def.ref(), ns.Rev)
	}
	return ns, nil
}

// markerTime is the time in a due marker's key: the next fire time, or now
// when that has already passed (a marker is never put behind its
// writer's now, so that a tick can tell a dead writer's marker by age).
func markerTime(next, now time.Time) time.Time {
	if next.Before(now) {
		return now
	}
	return next
}

// sync brings the state of def's schedule up to date with def and
// returns it. It is how create, update, pause and resume finish, and how
// any of them retried after a crash completes.
func (s *Scheduler) sync(ctx context.Context, def *Definition, now time.Time) (State, error) {
	for i := 0; i < maxCASAttempts; i++ {
		st, etag, err := s.loadState(ctx, def.ref())
		if err != nil {
			return State{}, err
		}
		if st.follows(def) {
			return st, nil
		}
		ns, err := s.reconcile(def, st, now)
		if err != nil {
			return State{}, err
		}
		err = s.writeState(ctx, &st, etag, &ns)
		if errors.Is(err, store.ErrPrecondition) {
			continue
		}
		if err != nil {
			return State{}, err
		}
		return ns, nil
	}
	return State{}, fmt.Errorf("update state of schedule %s: %w", def.ID, ErrConflict)
}

// view is the API's picture of a schedule.
func (s *Scheduler) view(def *Definition, st State, now time.Time) (Schedule, error) {
	if !st.follows(def) {
		// A write of the definition that has not reached the state yet
		// (in progress, or crashed): show what it will be.
		ns, err := s.reconcile(def, st, now)
		if err != nil {
			return Schedule{}, err
		}
		st = ns
	}
	v := Schedule{ // without def.Secret: never shown
		ID: def.ID, TaskType: def.TaskType, Input: def.Input, Queue: def.Queue,
		TTL: def.TTL, TTLFrom: def.TTLFrom, MaxAttempts: def.MaxAttempts, Priority: def.Priority,
		Cron: def.Cron, Timezone: def.Timezone, Enabled: def.Enabled,
		MissedRuns: def.MissedRuns, CatchUpWindow: def.CatchUpWindow, Overlap: def.Overlap,
		Version: def.Version, CreatedAt: def.CreatedAt, UpdatedAt: def.UpdatedAt,
		LastRunAt: st.LastRunAt, LastTaskID: st.LastTaskID, NextRunAt: st.NextRunAt, NextRuns: []time.Time{},
	}
	if def.Enabled && st.NextRunAt != nil {
		sp, err := s.spec(def)
		if err != nil {
			return Schedule{}, err
		}
		v.NextRuns = append(v.NextRuns, *st.NextRunAt)
		v.NextRuns = append(v.NextRuns, sp.NextN(*st.NextRunAt, NextRunsShown-1)...)
	}
	return v, nil
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
