package api

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/s3q/s3q/shared/schedule"
)

// The schedule routes: POST|GET /queues/{queue}/schedules,
// GET|PUT|DELETE /queues/{queue}/schedules/{id},
// POST /queues/{queue}/schedules/{id}/pause|resume|trigger,
// GET /queues/{queue}/schedules/{id}/history. A schedule belongs to the
// queue it fires into: addressed under another queue it is 404. They need
// Options.Schedules; without it they answer 404.

type scheduleReply struct {
	Schedule schedule.Schedule `json:"schedule"`
}

// fireReply is the answer of POST /queues/{queue}/schedules/{id}/trigger.
type fireReply struct {
	Fire schedule.Fire `json:"fire"`
}

// scheduler returns the view of the path's queue of the schedules: its
// ids are looked up in that queue's folder only, so another queue's
// schedule is 404.
func (a *API) scheduler(rq *request) (*schedule.Scheduler, error) {
	if a.opts.Schedules == nil {
		return nil, apiError(CodeNotFound, "", "schedules are not served by this API")
	}
	return a.opts.Schedules.In(rq.queue), nil
}

// scheduleRequest is the scheduler and the schedule.Request of a POST or
// PUT body, its queue checked by inQueue.
func (a *API) scheduleRequest(rq *request) (*schedule.Scheduler, schedule.Request, error) {
	var req schedule.Request
	sc, err := a.scheduler(rq)
	if err != nil {
		return nil, req, err
	}
	if err := decodeObject(rq.body, &req, ""); err != nil {
		return nil, req, err
	}
	max, err := a.inQueue(rq, &req)
	return sc.Bounded(max), req, err
}

// inQueue fills in the queue of a schedule request from the path, or
// refuses another one (400 naming queue), and checks that the queue takes
// tasks (404 queue_not_found for an undeclared one where queues must be
// declared): a schedule never fires into a queue that refuses its tasks.
// It returns the most schedules the queue may hold (max_schedules).
func (a *API) inQueue(rq *request, req *schedule.Request) (int, error) {
	switch req.Queue {
	case "":
		req.Queue = rq.queue
	case rq.queue:
	default:
		return 0, badInput("queue", "is %q, but the request is addressed to queue %q", clip(req.Queue), rq.queue)
	}
	return a.decls.ScheduleLimit(rq.ctx, rq.queue, rq.now(a))
}

// notInQueue is the 404 of a schedule s addressed under another queue than
// the one it fires into, or nil.
func notInQueue(rq *request, s schedule.Schedule) error {
	if s.Queue != rq.queue {
		return notFound("no schedule %s in queue %s", clip(rq.id), rq.queue)
	}
	return nil
}

func (a *API) scheduleOut(status int, s schedule.Schedule, err error) (reply, error) {
	if err != nil {
		return reply{}, err
	}
	return reply{status: status, body: scheduleReply{Schedule: s}}, nil
}

// scheduleCreate serves POST /queues/{queue}/schedules: 201 with the schedule.
func (a *API) scheduleCreate(rq *request) (reply, error) {
	sc, req, err := a.scheduleRequest(rq)
	if err != nil {
		return reply{}, err
	}
	s, err := sc.Create(rq.ctx, req, rq.now(a))
	return a.scheduleOut(http.StatusCreated, s, err)
}

// scheduleList serves GET /queues/{queue}/schedules?limit=&cursor=: the
// schedules that fire into the queue.
func (a *API) scheduleList(rq *request) (reply, error) {
	sc, err := a.scheduler(rq)
	if err != nil {
		return reply{}, err
	}
	req := schedule.ListRequest{Cursor: rq.query["cursor"], Queue: rq.queue}
	if req.Limit, err = queryLimit(rq); err != nil {
		return reply{}, err
	}
	res, err := sc.List(rq.ctx, req, rq.now(a))
	if err != nil {
		return reply{}, err
	}
	return reply{status: http.StatusOK, body: res}, nil
}

// scheduleGet serves GET /queues/{queue}/schedules/{id}: the schedule and its next 5 fire times.
func (a *API) scheduleGet(rq *request) (reply, error) {
	sc, err := a.scheduler(rq)
	if err != nil {
		return reply{}, err
	}
	s, err := sc.Get(rq.ctx, rq.id, rq.now(a))
	if err == nil {
		err = notInQueue(rq, s)
	}
	return a.scheduleOut(http.StatusOK, s, err)
}

// scheduleUpdate serves PUT /queues/{queue}/schedules/{id}: the whole definition replaced.
func (a *API) scheduleUpdate(rq *request) (reply, error) {
	sc, req, err := a.scheduleRequest(rq)
	if err != nil {
		return reply{}, err
	}
	s, err := sc.Update(rq.ctx, rq.id, req, rq.now(a))
	return a.scheduleOut(http.StatusOK, s, err)
}

// scheduleDelete serves DELETE /queues/{queue}/schedules/{id}: 204.
func (a *API) scheduleDelete(rq *request) (reply, error) {
	sc, err := a.scheduler(rq)
	if err != nil {
		return reply{}, err
	}
	if err := decodeObject(rq.body, &struct{}{}, ""); err != nil { // none, or {}, as DELETE /queues/{queue} takes
		return reply{}, err
	}
	if err := sc.Delete(rq.ctx, rq.id, rq.now(a)); err != nil {
		return reply{}, err
	}
	return reply{status: http.StatusNoContent}, nil
}

// schedulePause serves POST /queues/{queue}/schedules/{id}/pause.
func (a *API) schedulePause(rq *request) (reply, error) {
	return a.scheduleAction(rq, (*schedule.Scheduler).Pause)
}

// scheduleResume serves POST /queues/{queue}/schedules/{id}/resume.
func (a *API) scheduleResume(rq *request) (reply, error) {
	return a.scheduleAction(rq, (*schedule.Scheduler).Resume)
}

// scheduleAction serves a POST on one schedule with an empty body.
func (a *API) scheduleAction(rq *request, act func(*schedule.Scheduler, context.Context, string, time.Time) (schedule.Schedule, error)) (reply, error) {
	sc, err := a.scheduler(rq)
	if err != nil {
		return reply{}, err
	}
	if err := decodeObject(rq.body, &struct{}{}, ""); err != nil {
		return reply{}, err
	}
	s, err := act(sc, rq.ctx, rq.id, rq.now(a))
	return a.scheduleOut(http.StatusOK, s, err)
}

// scheduleTrigger serves POST /queues/{queue}/schedules/{id}/trigger: {"fire": {...}}.
func (a *API) scheduleTrigger(rq *request) (reply, error) {
	sc, err := a.scheduler(rq)
	if err != nil {
		return reply{}, err
	}
	if err := decodeObject(rq.body, &struct{}{}, ""); err != nil {
		return reply{}, err
	}
	f, err := sc.Trigger(rq.ctx, rq.id, rq.now(a))
	if err != nil {
		return reply{}, err
	}
	rq.log.addIDs(f.TaskID)
	return reply{status: http.StatusOK, body: fireReply{Fire: f}}, nil
}

// scheduleHistory serves GET /queues/{queue}/schedules/{id}/history?since=&limit=&cursor=.
func (a *API) scheduleHistory(rq *request) (reply, error) {
	sc, err := a.scheduler(rq)
	if err != nil {
		return reply{}, err
	}
	req := schedule.HistoryRequest{Cursor: rq.query["cursor"]}
	if req.Limit, err = queryLimit(rq); err != nil {
		return reply{}, err
	}
	if s, ok := rq.query["since"]; ok {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return reply{}, badInput("since", "%q is not an RFC 3339 time", clip(s))
		}
		req.Since = &t
	}
	res, err := sc.History(rq.ctx, rq.id, req)
	if err != nil {
		return reply{}, err
	}
	return reply{status: http.StatusOK, body: res}, nil
}

// queryLimit reads an optional positive ?limit=.
func queryLimit(rq *request) (int, error) {
	s, ok := rq.query["limit"]
	if !ok {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, badInput("limit", "%q is not an integer", clip(s))
	}
	if n < 1 {
		return 0, badInput("limit", "must be at least 1")
	}
	return n, nil
}
