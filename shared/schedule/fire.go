package schedule

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/store"
)

// TaskID returns the id of the task schedule def fires for fireTime:
// queue.DerivedID of the fire time and the schedule's queue, id and
// secret. The same (schedule, time) always gives the same id, so a fire
// repeated after a crash, or made by two racing ticks, finds the task the
// first one made instead of making a second; and since the secret is
// never shown, no caller can compute the id and take it first.
func TaskID(def *Definition, fireTime time.Time) string {
	return queue.DerivedID(fireTime, "schedule/"+def.ref()+"/"+def.Secret)
}

// TriggerTaskID returns the id of the task of a Trigger of schedule def
// at now. It differs from every TaskID, so a trigger at a cron time does
// not take the cron fire's task.
func TriggerTaskID(def *Definition, now time.Time) string {
	return queue.DerivedID(now, "schedule/"+def.ref()+"/"+def.Secret+"/trigger")
}

// submit submits the task of one fire of def. With a ttl counted from
// submission the deadline is fireTime + ttl.
func (s *Scheduler) submit(ctx context.Context, def *Definition, taskID string, fireTime, now time.Time) (queue.SubmitResult, error) {
	req := queue.SubmitRequest{
		ID:          taskID,
		TaskType:    def.TaskType,
		Queue:       def.Queue,
		Input:       def.Input,
		MaxAttempts: def.MaxAttempts,
		Priority:    def.Priority,
		// Each fire starts a trace of its own.
		Traceparent: queue.NewTraceparent(),
	}
	if def.TTL != nil {
		if def.TTLFrom == queue.TTLFromFirstAttempt {
			ttl := *def.TTL
			req.TTL, req.TTLFrom = &ttl, queue.TTLFromFirstAttempt
		} else {
			exp := fireTime.Add(def.TTL.Std())
			req.ExpiresAt = &exp
		}
	}
	// The template may have changed since a first attempt of this fire:
	// the task it made is the fire's all the same (SubmitFire).
	res, err := s.q.SubmitFire(ctx, req, now)
	if err != nil {
		return queue.SubmitResult{}, fmt.Errorf("fire schedule %s at %s: %w", def.ID, fireTime.Format(time.RFC3339), err)
	}
	return res, nil
}

// isInvalid reports whether err is a validation error: the template can
// never make a task, and retrying will not help. So is a fire's task id
// that another request has taken (a client can compute it): the fire is
// skipped rather than retried for ever, and so is a fire into a queue
// that is no longer declared (deleted since the schedule was made).
func isInvalid(err error) bool {
	var ve *queue.ValidationError
	var ce *queue.ConflictError
	return errors.As(err, &ve) || errors.As(err, &ce) && ce.Field == "id" || errors.Is(err, queue.ErrQueueNotFound)
}

// putHistory writes one history entry (a plain PUT: a repeated fire
// rewrites the same key with the same task).
func (s *Scheduler) putHistory(ctx context.Context, def *Definition, f *Fire) error {
	body, err := json.Marshal(f)
	if err != nil {
		return err
	}
	if _, err := store.PutOwn(ctx, s.store, historyKey(def.ref(), f.FireTime, f.Trigger), body); err != nil {
		return fmt.Errorf("write history of schedule %s: %w", f.ScheduleID, err)
	}
	return nil
}

// busy reports whether task id is pending or running (overlap=skip).
func (s *Scheduler) busy(ctx context.Context, id string) (bool, error) {
	t, err := s.q.Get(ctx, id)
	if errors.Is(err, queue.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("check last task %s: %w", id, err)
	}
	return t.Status == queue.StatusPending || t.Status == queue.StatusRunning, nil
}

// fire makes the fires of a due schedule whose state st (read with etag)
// follows def, then moves the state on. The state write is the last step:
// until it lands, a repeat finds the same tasks. When stop reports true
// before a fire of a catch-up, the state moves on to that fire's time only
// (as at MaxCatchUpPerTick), and the next tick carries on from there.
func (s *Scheduler) fire(ctx context.Context, def *Definition, st State, etag string, now time.Time, stop func() bool) (outcome, error) {
	sp, err := s.spec(def)
	if err != nil {
		return outcome{}, err
	}
	times, missed, rest := s.dueTimes(def, sp, *st.NextRunAt, now)
	r := &fireRun{def: def, ns: st, now: now}
	r.out.missed = missed
	r.ns.Rev++
	r.ns.UpdatedAt = now
	if def.Overlap == OverlapSkip && times[0].After(*st.NextRunAt) {
		// A tick that died before its state write may have fired
		// st.NextRunAt: that task, not the state's last one, is the one
		// a fire must wait for, and its time was not missed.
		prev := *st.NextRunAt
		t, err := s.q.Get(ctx, queue.Ref(def.Queue, TaskID(def, prev)))
		switch {
		case errors.Is(err, queue.ErrNotFound):
		case err != nil:
			return r.out, fmt.Errorf("check task %s: %w", TaskID(def, prev), err)
		default:
			if missed > 0 {
				missed--
				r.out.missed--
			}
			r.ran(prev, t)
		}
	}
	for i, ft := range times {
		if i > 0 && stop() {
			rest, r.out.more = ft, true
			times = times[:i]
			break
		}
		f := Fire{ScheduleID: def.ID, FireTime: ft, FiredAt: now}
		if i == 0 {
			f.Missed = missed
		}
		if err := s.fireOne(ctx, r, &f); err != nil {
			return r.out, err
		}
	}
	next := rest
	if next.IsZero() {
		next = sp.Next(times[len(times)-1])
	}
	r.ns.NextRunAt = timePtr(next)
	r.ns.DueKey = ""
	if r.ns.NextRunAt != nil {
		r.ns.DueKey = dueKey(markerTime(next, now), def.ref(), r.ns.Rev)
	}
	if err := s.writeState(ctx, &st, etag, &r.ns); err != nil {
		return outcome{}, err
	}
	return r.out, nil
}

// fireRun is fire's progress through the due times of one schedule: the
// state it will write, and whether the status of the state's last task
// is known here (and whether that task is still live).
type fireRun struct {
	def             *Definition
	ns              State
	now             time.Time
	known, lastBusy bool
	out             outcome
}

// ran records that the fire at ft made (or found) task t.
func (r *fireRun) ran(ft time.Time, t queue.Task) {
	r.ns.LastRunAt, r.ns.LastTaskID = &ft, t.ID
	r.known, r.lastBusy = true, t.Status == queue.StatusPending || t.Status == queue.StatusRunning
}

// fireOne makes fire f: skipped while the last task runs (overlap
// skip), skipped for a template the queue refuses, else its task; and
// its history entry.
func (s *Scheduler) fireOne(ctx context.Context, r *fireRun, f *Fire) error {
	if r.def.Overlap == OverlapSkip && r.ns.LastTaskID != "" {
		if !r.known {
			busy, err := s.busy(ctx, queue.Ref(r.def.Queue, r.ns.LastTaskID))
			if err != nil {
				return err
			}
			r.known, r.lastBusy = true, busy
		}
		if r.lastBusy {
			f.Skipped, f.RunningTaskID = SkippedOverlap, r.ns.LastTaskID
			if err := s.putHistory(ctx, r.def, f); err != nil {
				return err
			}
			r.out.skipped++
			return nil
		}
	}
	res, err := s.submit(ctx, r.def, TaskID(r.def, f.FireTime), f.FireTime, r.now)
	if err != nil {
		if !isInvalid(err) {
			return err
		}
		f.Skipped, f.Error = SkippedInvalid, err.Error()
		if err := s.putHistory(ctx, r.def, f); err != nil {
			return err
		}
		r.out.skipped++
		return nil
	}
	f.TaskID = res.Task.ID
	if err := s.putHistory(ctx, r.def, f); err != nil {
		return err
	}
	r.ran(f.FireTime, res.Task)
	r.out.fired++
	return nil
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
