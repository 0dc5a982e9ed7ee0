package api

import (
	"net/http"

	"github.com/s3q/s3q/shared/queue"
)

// The queue operations (docs/operations.md): pause and resume, stats,
// purge and the bulk retry, cancel and expire. They are management
// routes, served by the tasks function beside the other queue routes,
// each with a path of its own so that an IAM policy can grant one without
// the others (purge apart from the rest).

// queuePause serves POST /queues/{queue}/pause: claims, pull or push,
// take nothing from the queue until it is resumed; submits go on.
func (a *API) queuePause(rq *request) (reply, error) {
	return a.setPaused(rq, true)
}

// queueResume serves POST /queues/{queue}/resume.
func (a *API) queueResume(rq *request) (reply, error) {
	return a.setPaused(rq, false)
}

func (a *API) setPaused(rq *request, paused bool) (reply, error) {
	if err := decodeObject(rq.body, &struct{}{}, ""); err != nil {
		return reply{}, err
	}
	op := a.decls.Resume
	if paused {
		op = a.decls.Pause
	}
	d, err := op(rq.ctx, rq.queue, rq.now(a))
	if err != nil {
		return reply{}, err
	}
	return reply{status: http.StatusOK, body: queueReply{Queue: queueOf(d)}}, nil
}

type statsReply struct {
	Stats queue.QueueStats `json:"stats"`
}

// queueStats serves GET /queues/{queue}/stats: counts by status, the
// oldest due pending task, the rare ends of the last hour.
func (a *API) queueStats(rq *request) (reply, error) {
	d, err := a.decls.Get(rq.ctx, rq.queue, rq.now(a))
	if err != nil {
		return reply{}, err
	}
	st, err := a.q.Stats(rq.ctx, d.Settings(), rq.now(a))
	if err != nil {
		return reply{}, err
	}
	return reply{status: http.StatusOK, body: statsReply{Stats: st}}, nil
}

// bulkBody is the body of POST /queues/{queue}/purge and
// /queues/{queue}/bulk/{retry,cancel,expire}.
type bulkBody struct {
	Status    queue.Status    `json:"status"`
	TaskType  string          `json:"task_type"`
	OlderThan *queue.Duration `json:"older_than"`
	Limit     int             `json:"limit"`
	Cursor    string          `json:"cursor"`
	DryRun    bool            `json:"dry_run"`
}

// bulk returns the handler of one bulk operation: 200 with what it did.
func bulk(op queue.BulkOp) handler {
	return func(a *API, rq *request) (reply, error) {
		var body bulkBody
		if err := decodeObject(rq.body, &body, ""); err != nil {
			return reply{}, err
		}
		res, err := rq.q.Bulk(rq.ctx, op, queue.BulkRequest{
			Queue: rq.queue, Status: body.Status, TaskType: body.TaskType, OlderThan: body.OlderThan,
			Limit: body.Limit, Cursor: body.Cursor, DryRun: body.DryRun,
		}, rq.now(a))
		if err != nil {
			return reply{}, err
		}
		rq.log.addIDs(res.TaskIDs...)
		return reply{status: http.StatusOK, body: res}, nil
	}
}
