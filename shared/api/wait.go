package api

import (
	"fmt"
	"net/http"
	"time"

	"github.com/s3q/s3q/shared/queue"
)

// Polling of a synchronous wait: the task record is read (one GET) after
// waitPollMin, then at intervals growing to waitPollMax. GETs are the
// cheap request class; a 25s wait costs about 30 of them.
const (
	waitPollMin = 100 * time.Millisecond
	waitPollMax = time.Second
	// ctxMargin is kept back from the request's own deadline (a Lambda's
	// timeout) so that the wait can still answer.
	ctxMargin = 500 * time.Millisecond
)

// awaitOutcome waits up to wait (real time) for a submitted task to
// finish, reading its record now and then; queue.Queue.CheckWait decides
// at each look:
//
//   - finished (completed, failed, cancelled, archived): 200 with the task;
//   - its expires_at passed first (by Options.Now): 504 deadline_exceeded,
//     the task then expired, or asked to cancel if it was running;
//   - the wait ran out first: 202 with the task as it is.
//
// The first look is at the request's time; each later one reads the
// clock again.
func (a *API) awaitOutcome(rq *request, res queue.SubmitResult, wait time.Duration) (reply, error) {
	end := time.Now().Add(wait)
	if dl, ok := rq.ctx.Deadline(); ok && dl.Add(-ctxMargin).Before(end) {
		end = dl.Add(-ctxMargin)
	}
	t, now := res.Task, rq.now(a)
	poll := waitPollMin
	for {
		var (
			state queue.WaitState
			err   error
		)
		t, state, err = rq.q.CheckWait(rq.ctx, t, now)
		switch {
		case err != nil:
			return reply{}, err
		case state == queue.WaitDeadline:
			return a.deadlineReply(t, now), nil
		case state == queue.WaitDone:
			return reply{status: http.StatusOK, body: taskReply{Task: view(t, now), Deduplicated: res.Deduplicated, Replayed: res.Replayed}}, nil
		}
		left := time.Until(end)
		if left <= 0 {
			return reply{status: http.StatusAccepted, body: taskReply{Task: view(t, now), Deduplicated: res.Deduplicated, Replayed: res.Replayed}}, nil
		}
		sleep := min(poll, left)
		if t.ExpiresAt != nil {
			sleep = max(min(sleep, t.ExpiresAt.Sub(now)), time.Millisecond)
		}
		timer := time.NewTimer(sleep)
		select {
		case <-rq.ctx.Done():
			timer.Stop()
			return reply{}, rq.ctx.Err()
		case <-timer.C:
		}
		poll = min(2*poll, waitPollMax)
		if t, err = rq.q.Get(rq.ctx, t.ID); err != nil {
			return reply{}, err
		}
		now = a.now()
	}
}

// holdWait takes one of the path queue's waits (Options.WaitsPerQueue)
// for a wait of up to wait: nil when there is no bound. When the queue
// holds all it may, the error is 429 too_many_waits.
func (a *API) holdWait(rq *request, wait time.Duration) (*queue.WaitHold, error) {
	if a.opts.WaitsPerQueue <= 0 {
		return nil, nil
	}
	now := rq.now(a)
	return rq.q.HoldWait(rq.ctx, rq.queue, a.opts.WaitsPerQueue, now.Add(wait+ctxMargin), now)
}

// deadlineReply is the 504 of a wait whose task passed its deadline: the
// error and the task as it ended.
func (a *API) deadlineReply(t queue.Task, now time.Time) reply {
	state := "it expired before it started"
	switch t.Status {
	case queue.StatusRunning:
		state = "it is running and was asked to cancel"
	case queue.StatusCancelled:
		state = "nobody held its lease any more, so it was cancelled"
	}
	msg := fmt.Sprintf("task %s passed its deadline before it finished; %s", t.ID, state)
	if t.ExpiresAt != nil {
		msg = fmt.Sprintf("task %s passed its deadline %s before it finished; %s", t.ID, t.ExpiresAt.Format(time.RFC3339), state)
	}
	v := view(t, now)
	return reply{
		status: http.StatusGatewayTimeout,
		code:   CodeDeadlineExceeded,
		body:   errorBody{Error: apiError(CodeDeadlineExceeded, "", msg), Task: &v},
	}
}
