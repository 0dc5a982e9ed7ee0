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

// TaskID returns the id of the task schedule id fires for fireTime:
// queue.DerivedID(fireTime, "schedule/"+id). The same (schedule, time)
// always gives the same id, so a fire repeated after a crash, or made by
// two racing ticks, finds the task the first one made instead of making
// a second.
func TaskID(id string, fireTime time.Time) string {
	return queue.DerivedID(fireTime, "schedule/"+id)
}

// TriggerTaskID returns the id of the task of a Trigger of schedule id at
// now: queue.DerivedID(now, "schedule/"+id+"/trigger"). It differs from
// every TaskID, so a trigger at a cron time does not take the cron fire's
// task.
func TriggerTaskID(id string, now time.Time) string {
	return queue.DerivedID(now, "schedule/"+id+"/trigger")
}

// submit submits the task of one fire of def. With a ttl counted from
// submission the deadline is fireTime + ttl.
func (s *Scheduler) submit(ctx context.Context, def *Definition, taskID string, fireTime, now time.Time) (queue.SubmitResult, error) {
	req := queue.SubmitRequest{
		ID: taskID,
		// The template may have changed since a first attempt of
		// this fire: the task it made is the fire's all the same.
		ReplayAnyRequest: true,
		TaskType:         def.TaskType,
		Queue:            def.Queue,
		Input:            def.Input,
		MaxAttempts:      def.MaxAttempts,
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
	res, err := s.q.Submit(ctx, req, now)
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
func (s *Scheduler) putHistory(ctx context.Context, f *Fire) error {
	body, err := json.Marshal(f)
	if err != nil {
		return err
	}
	if _, err := store.PutOwn(ctx, s.store, historyKey(f.ScheduleID, f.FireTime, f.Trigger), body); err != nil {
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
