package api

import (
	"net/http"
	"strconv"

	"github.com/s3q/s3q/shared/queue"
)

// get serves GET /queues/{queue}/tasks/{id}: the task, with expires_in_seconds when it
// has a deadline; a pending task whose deadline has passed is answered
// expired, whether or not the sweep has written it yet.
func (a *API) get(rq *request) (reply, error) {
	t, err := rq.q.Get(rq.ctx, rq.id)
	if err != nil {
		return reply{}, err
	}
	now := rq.now(a)
	// A pending task past its deadline reads expired (queue.Task.AsOf).
	return reply{status: http.StatusOK, body: taskReply{Task: view(t.AsOf(now), now)}}, nil
}

// list serves GET /queues/{queue}/tasks?status=&task_type=&limit=&cursor=
// and the operator route GET /tasks?status=&queue=&task_type=...: a page
// of tasks and next_cursor when more may follow. Under /queues/{queue} it
// reads only that queue's folder; GET /tasks without queue walks the
// queues in name order, its cursor {queue}/{cursor in it}. Each call examines at
// most queue.MaxExamined records per queue; failed, expired and cancelled tasks
// come from their index (see queue.Queue.List for what each costs).
func (a *API) list(rq *request) (reply, error) {
	req := queue.ListRequest{
		Status:   queue.Status(rq.query["status"]),
		Queue:    rq.query["queue"],
		TaskType: rq.query["task_type"],
		Cursor:   rq.query["cursor"],
		Now:      rq.now(a), // stale status/ markers met are repaired
	}
	if s, ok := rq.query["priority"]; ok {
		n, err := strconv.Atoi(s)
		if err != nil || n == 0 {
			return reply{}, badInput("priority", "%q is not a priority: 1 (highest) to 5 (lowest)", clip(s))
		}
		req.Priority = n
	}
	if s, ok := rq.query["limit"]; ok {
		n, err := strconv.Atoi(s)
		if err != nil {
			return reply{}, badInput("limit", "%q is not an integer", clip(s))
		}
		if n < 1 {
			return reply{}, badInput("limit", "must be at least 1")
		}
		req.Limit = n
	}
	res, err := rq.q.List(rq.ctx, req)
	if err != nil {
		return reply{}, err
	}
	now := rq.now(a)
	out := listReply{Tasks: make([]taskView, len(res.Tasks)), NextCursor: res.NextCursor}
	for i, t := range res.Tasks {
		out.Tasks[i] = view(t, now)
	}
	return reply{status: http.StatusOK, body: out}, nil
}

// history serves GET /queues/{queue}/tasks/{id}/history?limit=&cursor=: one page of the
// stored versions of the record, newest first (limit defaults to 100, at
// most 1000), with next_cursor (older versions) when more follow. It
// costs one LIST of at most limit versions and one GET per version
// returned (one more to check a cursor), whatever the task stores.
func (a *API) history(rq *request) (reply, error) {
	req := queue.HistoryRequest{ID: rq.id, Cursor: rq.query["cursor"]}
	var err error
	if req.Limit, err = queryLimit(rq); err != nil {
		return reply{}, err
	}
	res, err := rq.q.History(rq.ctx, req)
	if err != nil {
		return reply{}, err
	}
	now := rq.now(a)
	out := historyReply{Versions: make([]versionView, len(res.Versions)), NextCursor: res.NextCursor}
	for i, v := range res.Versions {
		out.Versions[i] = versionView{VersionID: v.VersionID, ModifiedAt: v.ModifiedAt, Task: view(v.Task, now)}
	}
	return reply{status: http.StatusOK, body: out}, nil
}
