package schedule

import (
	"context"
	"errors"
	"time"

	"github.com/s3q/s3q/shared/store"
)

// Trigger fires schedule id once, now, whatever its cron says and whether
// or not it is paused, and returns the history entry (whose TaskID is the
// task). The task id is TriggerTaskID(id, now): a trigger retried with
// the same now finds the same task, and a trigger at a cron time does not
// take that fire's task. Overlap is not applied (the user asked), but the
// task becomes the schedule's last task, so an overlap=skip schedule waits
// for it. An unknown id returns ErrNotFound.
func (s *Scheduler) Trigger(ctx context.Context, id string, now time.Time) (Fire, error) {
	now = norm(now)
	id, err := s.locate(id)
	if err != nil {
		return Fire{}, err
	}
	def, _, err := s.loadDef(ctx, id)
	if err != nil {
		return Fire{}, err
	}
	res, err := s.submit(ctx, &def, TriggerTaskID(&def, now), now, now)
	if err != nil {
		return Fire{}, err
	}
	f := Fire{ScheduleID: def.ID, FireTime: now, TaskID: res.Task.ID, FiredAt: now, Trigger: true}
	if err := s.putHistory(ctx, &def, &f); err != nil {
		return Fire{}, err
	}
	// Record the task as the last one (best effort: the task exists).
	for i := 0; i < maxCASAttempts; i++ {
		st, etag, err := s.loadState(ctx, id)
		if err != nil || etag == "" || st.Deleted {
			break
		}
		ns := st
		ns.Rev++
		ns.LastTaskID = res.Task.ID
		if ns.LastRunAt == nil || now.After(*ns.LastRunAt) {
			ns.LastRunAt = &now
		}
		ns.UpdatedAt = now
		if err := s.writeState(ctx, &st, etag, &ns); !errors.Is(err, store.ErrPrecondition) {
			break
		}
	}
	return f, nil
}
