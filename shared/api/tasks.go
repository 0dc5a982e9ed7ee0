package api

import (
	"net/http"
	"strconv"

	"github.com/s3q/s3q/shared/queue"
)

// get serves GET /queues/{queue}/tasks/{id}: the task, with expires_in_seconds when it
// has a deadline.
func (a *API) get(rq *request) (reply, error) {
	t, err := rq.q.Get(rq.ctx, rq.id)
	if err != nil {
		return reply{}, err
	}
	return reply{status: http.StatusOK, body: taskReply{Task: view(t, a.now())}}, nil
}

// list serves GET /queues/{queue}/tasks?status=&task_type=&limit=&cursor=
// and the operator route GET /tasks?status=&queue=&task_type=...: a page
// of tasks, oldest first, and next_cursor when more may follow.
func (a *API) list(rq *request) (reply, error) {
	req := queue.ListRequest{
		Status:   queue.Status(rq.query["status"]),
		Queue:    rq.query["queue"],
		TaskType: rq.query["task_type"],
		Cursor:   rq.query["cursor"],
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
	now := a.now()
	out := listReply{Tasks: make([]taskView, len(res.Tasks)), NextCursor: res.NextCursor}
	for i, t := range res.Tasks {
		out.Tasks[i] = view(t, now)
	}
	return reply{status: http.StatusOK, body: out}, nil
}

// history serves GET /queues/{queue}/tasks/{id}/history: every stored version of the
// record, oldest first.
func (a *API) history(rq *request) (reply, error) {
	versions, err := rq.q.History(rq.ctx, rq.id)
	if err != nil {
		return reply{}, err
	}
	now := a.now()
	out := historyReply{Versions: make([]versionView, len(versions))}
	for i, v := range versions {
		out.Versions[i] = versionView{VersionID: v.VersionID, ModifiedAt: v.ModifiedAt, Task: view(v.Task, now)}
	}
	return reply{status: http.StatusOK, body: out}, nil
}
