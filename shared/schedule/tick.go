package schedule

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/s3q/s3q/shared/queue"
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
	// Starting after the bare prefix lists the same keys, and lets a
	// server that scans from its start-after key (gofakes3) seek there.
	after := prefixDue
	var listErr error
pages:
	for pageNo := 0; ; pageNo++ {
		page, err := s.store.List(ctx, prefixDue, after, duePages[min(pageNo, len(duePages)-1)])
		if err != nil {
			listErr = fmt.Errorf("list due schedules: %w", err)
			break
		}
		var due []dueMarker
		future := false
		for _, it := range page.Items {
			m, ok := parseDueKey(it.Key)
			if !ok {
				continue // not ours; never acted on
			}
			if m.at.After(now) {
				future = true
				break
			}
			due = append(due, m)
		}
		// Racing ticks that take schedules up in different orders mostly
		// find them already done instead of all doing each at once.
		rand.Shuffle(len(due), func(i, j int) { due[i], due[j] = due[j], due[i] })
		for _, m := range due {
			mu.Lock()
			stop := outOfBudget()
			if stop {
				rep.More = true
			} else {
				rep.Due++
			}
			mu.Unlock()
			if stop {
				break pages
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
		if future || !page.Truncated || len(page.Items) == 0 {
			break
		}
		after = page.Items[len(page.Items)-1].Key
	}
	wg.Wait()
	if listErr != nil {
		errs = append(errs, listErr)
	}
	if rep.Errors > len(errs) {
		errs = append(errs, fmt.Errorf("and %d more schedules failed", rep.Errors-len(errs)))
	}
	return rep, errors.Join(errs...)
}

// handle takes up one due marker; a catch-up stops making fires when
// stop reports true.
func (s *Scheduler) handle(ctx context.Context, m dueMarker, now time.Time, stop func() bool) (outcome, error) {
	var out outcome
	old := now.Add(-s.opts.StaleMarkerGrace)
	raced := false // lost a state write to another tick: the winner deletes this marker
	for i := 0; i < maxCASAttempts; i++ {
		st, etag, err := s.loadState(ctx, m.id)
		if err != nil {
			return out, err
		}
		if st.DueKey != m.key {
			// The state does not name this marker.
			if named, ok := parseDueKey(st.DueKey); ok && etag != "" && m.rev <= st.Rev && !named.at.After(now) {
				// It has moved on to a marker that is due too (an edit or
				// a trigger re-put it at its writer's now, or a catch-up
				// is under way): drop this one and take that one up.
				if !raced {
					if err := s.store.Delete(ctx, m.key); err != nil {
						return out, fmt.Errorf("delete stale marker %s: %w", m.key, err)
					}
					out.stale++
				}
				m, raced = named, false
				continue
			}
			if raced && etag != "" && m.rev <= st.Rev {
				// Another tick fired it and deletes it (or, if it dies
				// first, a later tick does).
				return out, nil
			}
			// A create, update, pause or resume puts a marker before its
			// definition write: if the state does not follow the
			// definition, its writer is still at work or died, and this
			// marker may be the only hint. Bring the state up to date
			// (which also fences a slow writer: its state write now
			// fails and it starts over), then take up the marker the new
			// state names if that is due.
			def, _, err := s.loadDef(ctx, m.id)
			if err != nil && !errors.Is(err, ErrNotFound) {
				return out, err
			}
			if err == nil && !st.follows(&def) {
				ns, err := s.reconcile(&def, st, now)
				if err != nil {
					return out, err
				}
				if err := s.writeState(ctx, &st, etag, &ns); err != nil {
					if errors.Is(err, store.ErrPrecondition) {
						continue
					}
					return out, err
				}
				if ns.DueKey != m.key {
					if err := s.store.Delete(ctx, m.key); err != nil {
						return out, fmt.Errorf("delete stale marker %s: %w", m.key, err)
					}
					out.stale++
				}
				nm, ok := parseDueKey(ns.DueKey)
				if !ok || nm.at.After(now) {
					return out, nil
				}
				m, raced = nm, false
				continue
			}
			switch {
			case etag != "" && m.rev <= st.Rev:
				// The state has moved past it: stale.
			case !m.at.Before(old):
				// A writer may have just put it and be about to name it.
				return out, nil
			case etag != "":
				// Put long ago by a writer that never named it: it died.
				// Bump the revision so that nothing can name it, then drop it.
				ns := st
				ns.Rev++
				ns.UpdatedAt = now
				if err := s.writeState(ctx, &st, etag, &ns); err != nil {
					if errors.Is(err, store.ErrPrecondition) {
						continue
					}
					return out, err
				}
			default:
				// No state ever came: the create that put it died.
			}
			if err := s.store.Delete(ctx, m.key); err != nil {
				return out, fmt.Errorf("delete stale marker %s: %w", m.key, err)
			}
			out.stale++
			return out, nil
		}
		def, _, err := s.loadDef(ctx, m.id)
		if errors.Is(err, ErrNotFound) {
			// Deleted (Delete removes the definition first): finish it,
			// on the state read here (a create of the id since then
			// changed the state, and the write fails).
			if err := s.tombstone(ctx, st, etag, now); err != nil {
				if errors.Is(err, store.ErrPrecondition) {
					continue
				}
				return out, err
			}
			out.stale++
			return out, nil
		}
		if err != nil {
			return out, err
		}
		if !st.follows(&def) {
			// The definition changed and its writer has not updated the
			// state (in progress, or died): do it, then go on with the
			// marker the new state names if that is due.
			ns, err := s.reconcile(&def, st, now)
			if err != nil {
				return out, err
			}
			if err := s.writeState(ctx, &st, etag, &ns); err != nil {
				if errors.Is(err, store.ErrPrecondition) {
					continue
				}
				return out, err
			}
			nm, ok := parseDueKey(ns.DueKey)
			if !ok || nm.at.After(now) {
				return out, nil
			}
			m = nm
			continue
		}
		if st.NextRunAt == nil || st.NextRunAt.After(now) {
			return out, nil
		}
		o, err := s.fire(ctx, &def, st, etag, now, stop)
		if errors.Is(err, store.ErrPrecondition) {
			out.raced++ // another tick moved the state on; look again
			raced = true
			continue
		}
		out.fired, out.skipped, out.missed, out.more = o.fired, o.skipped, o.missed, o.more
		return out, err
	}
	return out, fmt.Errorf("tick schedule %s: %w", m.id, ErrConflict)
}

// fire makes the fires of a due schedule whose state st (read with etag)
// follows def, then moves the state on. The state write is the last step:
// until it lands, a repeat finds the same tasks. When stop reports true
// before a fire of a catch-up, the state moves on to that fire's time only
// (as at MaxCatchUpPerTick), and the next tick carries on from there.
func (s *Scheduler) fire(ctx context.Context, def *Definition, st State, etag string, now time.Time, stop func() bool) (outcome, error) {
	var out outcome
	sp, err := s.spec(def)
	if err != nil {
		return out, err
	}
	times, missed, rest := s.dueTimes(def, sp, *st.NextRunAt, now)
	out.missed = missed
	ns := st
	ns.Rev++
	ns.UpdatedAt = now
	known, lastBusy := false, false // whether ns.LastTaskID's status is known here
	if def.Overlap == OverlapSkip && times[0].After(*st.NextRunAt) {
		// A tick that died before its state write may have fired
		// st.NextRunAt: that task, not the state's last one, is the one
		// a fire must wait for, and its time was not missed.
		prev := *st.NextRunAt
		t, err := s.q.Get(ctx, TaskID(def.ID, prev))
		switch {
		case errors.Is(err, queue.ErrNotFound):
		case err != nil:
			return out, fmt.Errorf("check task %s: %w", TaskID(def.ID, prev), err)
		default:
			if missed > 0 {
				missed--
				out.missed--
			}
			ns.LastRunAt, ns.LastTaskID = &prev, t.ID
			known, lastBusy = true, t.Status == queue.StatusPending || t.Status == queue.StatusRunning
		}
	}
	for i, ft := range times {
		if i > 0 && stop() {
			rest, out.more = ft, true
			times = times[:i]
			break
		}
		f := Fire{ScheduleID: def.ID, FireTime: ft, FiredAt: now}
		if i == 0 {
			f.Missed = missed
		}
		if def.Overlap == OverlapSkip && ns.LastTaskID != "" {
			if !known {
				if lastBusy, err = s.busy(ctx, ns.LastTaskID); err != nil {
					return out, err
				}
				known = true
			}
			if lastBusy {
				f.Skipped, f.RunningTaskID = SkippedOverlap, ns.LastTaskID
				if err := s.putHistory(ctx, &f); err != nil {
					return out, err
				}
				out.skipped++
				continue
			}
		}
		res, err := s.submit(ctx, def, TaskID(def.ID, ft), ft, now)
		if err != nil {
			if !isInvalid(err) {
				return out, err
			}
			f.Skipped, f.Error = SkippedInvalid, err.Error()
			if err := s.putHistory(ctx, &f); err != nil {
				return out, err
			}
			out.skipped++
			continue
		}
		f.TaskID = res.Task.ID
		if err := s.putHistory(ctx, &f); err != nil {
			return out, err
		}
		ns.LastRunAt, ns.LastTaskID = &ft, res.Task.ID
		known, lastBusy = true, res.Task.Status == queue.StatusPending || res.Task.Status == queue.StatusRunning
		out.fired++
	}
	next := rest
	if next.IsZero() {
		next = sp.Next(times[len(times)-1])
	}
	ns.NextRunAt = timePtr(next)
	ns.DueKey = ""
	if ns.NextRunAt != nil {
		ns.DueKey = dueKey(markerTime(next, now), def.ID, ns.Rev)
	}
	if err := s.writeState(ctx, &st, etag, &ns); err != nil {
		return outcome{}, err
	}
	return out, nil
}

// dueTimes returns the fire times to make now for a schedule whose next
// fire time is from (<= now), how many due times are passed over, and,
// when a catch-up is cut at MaxCatchUpPerTick, the first time left for the
// next tick.
func (s *Scheduler) dueTimes(def *Definition, sp *Spec, from, now time.Time) (times []time.Time, missed int, rest time.Time) {
	const countLimit = 1000
	if def.MissedRuns == MissedCatchUp {
		first := from
		if start := now.Add(-def.catchUpWindow()); first.Before(start) {
			first = sp.atOrAfter(start)
			missed = sp.count(from, first, countLimit)
		}
		for t := first; !t.IsZero() && !t.After(now); t = sp.Next(t) {
			if len(times) == s.opts.MaxCatchUpPerTick {
				return times, missed, t
			}
			times = append(times, t)
		}
		if len(times) > 0 {
			return times, missed, time.Time{}
		}
		// Nothing inside the window: fire the latest, as skip does.
	}
	l := sp.latest(from, now)
	return []time.Time{l}, sp.count(from, l, countLimit), time.Time{}
}
