package queue

import (
	"context"
	"errors"
	"time"
)

// WaitState says where a synchronous wait for a task's outcome stands
// (POST /queues/{queue}/tasks with "wait").
type WaitState int

// The states of a synchronous wait.
const (
	// WaitOn: the task has not finished and its deadline has not passed.
	WaitOn WaitState = iota
	// WaitDone: the task finished (completed, failed, cancelled,
	// archived).
	WaitDone
	// WaitDeadline: the task's expires_at passed before it finished; it is
	// expired, or asked to cancel if it was running.
	WaitDeadline
)

// CheckWait is the rule of a synchronous wait for t at now: a finished
// task ends the wait (WaitDone), an expired one ends it with
// WaitDeadline, and one whose expires_at has passed at now is stopped
// first: a pending task is marked expired (reason ttl), a running one is
// asked to cancel (a running task is never interrupted by its deadline,
// §3). A task that changed status meanwhile is read again and judged
// anew. It returns the task as it stands and the state; it writes only
// when the deadline has passed.
func (q *Queue) CheckWait(ctx context.Context, t Task, now time.Time) (Task, WaitState, error) {
	for {
		switch {
		case t.Status == StatusExpired:
			return t, WaitDeadline, nil
		case t.Status.Terminal():
			return t, WaitDone, nil
		case !t.deadlinePassed(now):
			return t, WaitOn, nil
		}
		next, done, err := q.stopAtDeadline(ctx, t, now)
		if err != nil {
			return Task{}, WaitOn, err
		}
		if done {
			return next, WaitDeadline, nil
		}
		t = next // it changed meanwhile: look again
	}
}

// stopAtDeadline acts on a task whose deadline passed during a wait: a
// pending task is marked expired, a running one gets cancel_requested. It
// returns the task and true when done, or the re-read task and false when
// the task changed status meanwhile.
func (q *Queue) stopAtDeadline(ctx context.Context, t Task, now time.Time) (Task, bool, error) {
	var (
		next Task
		err  error
	)
	switch t.Status {
	case StatusPending:
		next, err = q.markExpired(ctx, t.Ref(), ReasonTTL, now)
	case StatusRunning:
		next, err = q.Cancel(ctx, t.Ref(), now)
	default:
		return t, true, nil
	}
	var se *StateError
	if errors.As(err, &se) {
		next, err = q.Get(ctx, t.Ref())
		return next, false, err
	}
	if err != nil {
		return Task{}, false, err
	}
	return next, true, nil
}
