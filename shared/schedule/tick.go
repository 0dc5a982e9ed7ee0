package schedule

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/s3q/s3q/shared/store"
)

// TickReport says what one Tick did. Under racing ticks a fire may be
// counted by more than one of them (each finds the same task).
type TickReport struct {
	// Due is how many due markers the tick took up.
	Due int `json:"due"`
	// Fired is how many fires submitted their task (or found it made by an
	// earlier, interrupted try).
	Fired int `json:"fired"`
	// Skipped is how many fires were recorded without a task
	// (overlap=skip, or a template the queue rejects).
	Skipped int `json:"skipped"`
	// Missed is how many due times were passed over by missed_runs.
	Missed int `json:"missed"`
	// Stale is how many stale markers the tick removed.
	Stale int `json:"stale"`
	// Raced is how many schedules another tick moved on first.
	Raced int `json:"raced"`
	// Errors is how many schedules failed; they are retried next tick.
	Errors int `json:"errors"`
	// More is true when the tick stopped at its budget with due markers
	// left for the next tick.
	More bool `json:"more"`
}

type outcome struct {
	fired, skipped, missed, stale, raced int
	more                                 bool // a catch-up stopped at the budget
}

func (r *TickReport) add(o outcome) {
	r.Fired += o.fired
	r.Skipped += o.skipped
	r.Missed += o.missed
	r.Stale += o.stale
	r.Raced += o.raced
	r.More = r.More || o.more
}

// duePages are how many due/ keys the LISTs of one tick ask for, in
// turn: an idle tick's one LIST asks for a few keys (many schedules waiting
// further ahead do not make it longer: each key costs a server work), and
// a busy tick's pages grow to S3's 1000.
var duePages = []int{10, 100, 1000}

// Tick fires every schedule that is due at now, each exactly once per cron
// time, and returns what it did. Any number of ticks may run at once, and
// a tick may die at any point: the task of a fire has a derived id
// (TaskID), so a repeated or racing fire finds the task instead of making
// another, and a schedule's state moves past a fire time (by
// compare-and-swap) only after that time's task exists.
//
// Cost: one LIST of the due/ index from its start, which stops at the
// first key in the future, so requests grow with the schedules that are
// due, not with those stored (an idle tick is one LIST). Per fire: GET
// state, GET definition, the task's submit (PUT marker, PUT record), PUT
// history, PUT the next due marker, PUT state, DELETE the old marker; a
// GET of the last task under overlap=skip.
//
// The due schedules are taken up round-robin by queue (fairOrder), so a
// tick that runs out of budget has served every queue alike.
//
// The tick stops taking up schedules when its budget (Options.TickBudget,
// MaxPerTick, or 5s before ctx's deadline) runs out; the next tick carries
// on. Errors of single schedules do not stop the others; they are joined
// into the returned error and retried by the next tick.
func (s *Scheduler) Tick(ctx context.Context, now time.Time) (TickReport, error) {
	now = norm(now)
	start := s.opts.Clock()
	var (
		mu   sync.Mutex
		rep  TickReport
		errs []error
		wg   sync.WaitGroup
	)
	sem := make(chan struct{}, s.opts.Parallel)
	// outOfTime is the budget of the work: TickBudget, and 5s before
	// ctx's deadline (left for the state writes of the work under way).
	outOfTime := func() bool {
		wall := s.opts.Clock()
		if ctx.Err() != nil || wall.Sub(start) > s.opts.TickBudget {
			return true
		}
		dl, ok := ctx.Deadline()
		return ok && dl.Sub(wall) < 5*time.Second
	}
	outOfBudget := func() bool {
		return outOfTime() || s.opts.MaxPerTick > 0 && rep.Due >= s.opts.MaxPerTick
	}
	due, listErr := s.listDue(ctx, now, outOfTime)
	for _, m := range fairOrder(due) {
		mu.Lock()
		stop := outOfBudget()
		if stop {
			rep.More = true
		} else {
			rep.Due++
		}
		mu.Unlock()
		if stop {
			break
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			o, err := s.handle(ctx, m, now, outOfTime)
			mu.Lock()
			defer mu.Unlock()
			rep.add(o)
			if err != nil {
				rep.Errors++
				if len(errs) < 5 {
					errs = append(errs, err)
				}
			}
		}()
	}
	wg.Wait()
	if listErr != nil {
		errs = append(errs, listErr)
		rep.More = true
	}
	if rep.Errors > len(errs) {
		errs = append(errs, fmt.Errorf("and %d more schedules failed", rep.Errors-len(errs)))
	}
	return rep, errors.Join(errs...)
}

// listDue lists the due markers of every queue: the due/ index from its
// start up to the first key after now, in pages that grow (duePages). It
// stops early, with what it has and More to report, when stop says the
// tick is out of time. A failed LIST returns what came before it.
func (s *Scheduler) listDue(ctx context.Context, now time.Time, stop func() bool) ([]dueMarker, error) {
	// Starting after the bare prefix lists the same keys, and lets a
	// server that scans from its start-after key (gofakes3) seek there.
	after := DuePrefix
	var due []dueMarker
	for pageNo := 0; ; pageNo++ {
		if pageNo > 0 && stop() {
			return due, nil
		}
		page, err := s.store.List(ctx, DuePrefix, after, duePages[min(pageNo, len(duePages)-1)])
		if err != nil {
			return due, fmt.Errorf("list due schedules: %w", err)
		}
		for _, it := range page.Items {
			m, ok := parseDueKey(it.Key)
			if !ok {
				continue // not ours; never acted on
			}
			if m.at.After(now) {
				return due, nil
			}
			due = append(due, m)
		}
		if !page.Truncated || len(page.Items) == 0 {
			return due, nil
		}
		after = page.Items[len(page.Items)-1].Key
	}
}

// fairOrder orders due markers fairly across queues: round-robin by
// queue (one marker of each queue that has any, then a second of each,
// ...), in a random order within a queue and among the queues of a round.
// So a tick whose budget runs out part-way has served every queue alike:
// a queue with thousands of due schedules cannot push another queue's
// fires behind its own (the due index sorts by time, then queue name).
// Racing ticks that take markers up in different orders mostly find
// them already done instead of all doing each at once.
func fairOrder(due []dueMarker) []dueMarker {
	byQueue := map[string][]dueMarker{}
	var names []string
	for _, m := range due {
		qn, _ := splitRef(m.id)
		if _, ok := byQueue[qn]; !ok {
			names = append(names, qn)
		}
		byQueue[qn] = append(byQueue[qn], m)
	}
	for _, ms := range byQueue {
		rand.Shuffle(len(ms), func(i, j int) { ms[i], ms[j] = ms[j], ms[i] })
	}
	out := make([]dueMarker, 0, len(due))
	for round := 0; len(out) < len(due); round++ {
		rand.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
		left := names[:0]
		for _, qn := range names {
			ms := byQueue[qn]
			out = append(out, ms[round])
			if round+1 < len(ms) {
				left = append(left, qn)
			}
		}
		names = left
	}
	return out
}

// handle takes up one due marker; a catch-up stops making fires when
// stop reports true. Each look reads the marker's schedule state: when
// the state names the marker, the schedule fires (handleNamed), else the
// marker is stale or left by a writer still at work (handleUnnamed).
func (s *Scheduler) handle(ctx context.Context, m dueMarker, now time.Time, stop func() bool) (outcome, error) {
	w := &markerWork{m: m}
	for i := 0; i < maxCASAttempts; i++ {
		st, etag, err := s.loadState(ctx, w.m.id)
		if err != nil {
			return w.out, err
		}
		var done bool
		if st.DueKey != w.m.key {
			done, err = s.handleUnnamed(ctx, w, st, etag, now)
		} else {
			done, err = s.handleNamed(ctx, w, st, etag, now, stop)
		}
		if done || err != nil {
			return w.out, err
		}
	}
	return w.out, fmt.Errorf("tick schedule %s: %w", w.m.id, ErrConflict)
}

// markerWork is handle's progress on one due marker. Its steps answer
// done (the marker is handled, or err ends it) or not done: look again,
// at w.m, after a lost state write or on the marker a state names.
type markerWork struct {
	m     dueMarker
	raced bool // lost a state write to another tick: the winner deletes this marker
	out   outcome
}

// lostRace ends a step on err, except a lost state write
// (ErrPrecondition), after which handle looks again.
func lostRace(err error) (done bool, _ error) {
	if errors.Is(err, store.ErrPrecondition) {
		return false, nil
	}
	return true, err
}

// follow makes w take up the marker ns names, and reports done when that
// is not due at now.
func (w *markerWork) follow(ns State, now time.Time) (done bool) {
	nm, ok := parseDueKey(ns.DueKey)
	if !ok || nm.at.After(now) {
		return true
	}
	w.m = nm
	return false
}

// dropStale deletes a marker no state will name and counts it.
func (s *Scheduler) dropStale(ctx context.Context, w *markerWork, key string) error {
	if err := s.store.Delete(ctx, key); err != nil {
		return fmt.Errorf("delete stale marker %s: %w", key, err)
	}
	w.out.stale++
	return nil
}

// syncState brings state st (read with etag) up to date with def and
// writes it; ErrPrecondition means another writer moved it first.
func (s *Scheduler) syncState(ctx context.Context, def *Definition, st State, etag string, now time.Time) (State, error) {
	ns, err := s.reconcile(def, st, now)
	if err != nil {
		return State{}, err
	}
	if err := s.writeState(ctx, &st, etag, &ns); err != nil {
		return State{}, err
	}
	return ns, nil
}

// handleNamed handles a marker that state st names: a deleted schedule
// is finished, a state behind its definition brought up to date, and a
// due schedule fired.
func (s *Scheduler) handleNamed(ctx context.Context, w *markerWork, st State, etag string, now time.Time, stop func() bool) (done bool, err error) {
	def, _, err := s.loadDef(ctx, w.m.id)
	if errors.Is(err, ErrNotFound) {
		// Deleted (Delete removes the definition first): finish it,
		// on the state read here (a create of the id since then
		// changed the state, and the write fails).
		if err := s.tombstone(ctx, st, etag, now); err != nil {
			return lostRace(err)
		}
		w.out.stale++
		return true, nil
	}
	if err != nil {
		return true, err
	}
	if !st.follows(&def) {
		// The definition changed and its writer has not updated the
		// state (in progress, or died): do it, then go on with the
		// marker the new state names if that is due.
		ns, err := s.syncState(ctx, &def, st, etag, now)
		if err != nil {
			return lostRace(err)
		}
		return w.follow(ns, now), nil
	}
	if st.NextRunAt == nil || st.NextRunAt.After(now) {
		return true, nil
	}
	o, err := s.fire(ctx, &def, st, etag, now, stop)
	if errors.Is(err, store.ErrPrecondition) {
		w.out.raced++ // another tick moved the state on; look again
		w.raced = true
		return false, nil
	}
	w.out.fired, w.out.skipped, w.out.missed, w.out.more = o.fired, o.skipped, o.missed, o.more
	return true, err
}

// handleUnnamed handles a marker that state st (read with etag) does not
// name: it follows a state that moved on to another due marker, brings a
// state behind its definition up to date, leaves a marker a writer may
// be about to name, and drops a stale one.
func (s *Scheduler) handleUnnamed(ctx context.Context, w *markerWork, st State, etag string, now time.Time) (done bool, err error) {
	if named, ok := parseDueKey(st.DueKey); ok && etag != "" && w.m.rev <= st.Rev && !named.at.After(now) {
		// It has moved on to a marker that is due too (an edit or a
		// trigger re-put it at its writer's now, or a catch-up is under
		// way): drop this one and take that one up.
		if !w.raced {
			if err := s.dropStale(ctx, w, w.m.key); err != nil {
				return true, err
			}
		}
		w.m, w.raced = named, false
		return false, nil
	}
	if w.raced && etag != "" && w.m.rev <= st.Rev {
		// Another tick fired it and deletes it (or, if it dies first, a
		// later tick does).
		return true, nil
	}
	// A create, update, pause or resume puts a marker before its
	// definition write: if the state does not follow the definition, its
	// writer is still at work or died, and this marker may be the only
	// hint. Bring the state up to date (which also fences a slow writer:
	// its state write now fails and it starts over), then take up the
	// marker the new state names if that is due.
	def, _, err := s.loadDef(ctx, w.m.id)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return true, err
	}
	if err == nil && !st.follows(&def) {
		ns, err := s.syncState(ctx, &def, st, etag, now)
		if err != nil {
			return lostRace(err)
		}
		if ns.DueKey != w.m.key {
			if err := s.dropStale(ctx, w, w.m.key); err != nil {
				return true, err
			}
		}
		w.raced = false
		return w.follow(ns, now), nil
	}
	switch {
	case etag != "" && w.m.rev <= st.Rev:
		// The state has moved past it: stale.
	case !w.m.at.Before(now.Add(-s.opts.StaleMarkerGrace)):
		// A writer may have just put it and be about to name it.
		return true, nil
	case etag != "":
		// Put long ago by a writer that never named it: it died. Bump
		// the revision so that nothing can name it, then drop it.
		ns := st
		ns.Rev++
		ns.UpdatedAt = now
		if err := s.writeState(ctx, &st, etag, &ns); err != nil {
			return lostRace(err)
		}
	default:
		// No state ever came: the create that put it died.
	}
	return true, s.dropStale(ctx, w, w.m.key)
}
