package api

import (
	"net/http"

	"github.com/s3q/s3q/shared/queue"
)

// cancelBody is the body of POST /tasks/{id}/cancel: nothing. A lease
// token is refused by name: a worker acknowledges a cancel on its own
// route (cancelAck), so that a role that may only work a queue cannot
// cancel its pending tasks.
type cancelBody struct {
	LeaseToken string `json:"lease_token"`
}

// cancel serves POST /queues/{queue}/tasks/{id}/cancel: a pending task is
// cancelled at once, a running one gets cancel_requested.
func (a *API) cancel(rq *request) (reply, error) {
	var body cancelBody
	if err := decodeObject(rq.body, &body, ""); err != nil {
		return reply{}, err
	}
	if body.LeaseToken != "" {
		return reply{}, badInput("lease_token", "a lease holder acknowledges a cancel with POST /queues/{queue}/tasks/{id}/cancel-ack; this route takes no body")
	}
	t, err := rq.q.Cancel(rq.ctx, rq.id, rq.now(a))
	return a.taskOrError(rq, t, err)
}

// cancelAckBody is the body of POST /tasks/{id}/cancel-ack.
type cancelAckBody struct {
	LeaseToken string `json:"lease_token"`
}

// cancelAck serves POST /queues/{queue}/tasks/{id}/cancel-ack: the lease
// holder's acknowledgement of a cancel request (or its own decision to
// give up): the running task becomes cancelled. A lease operation, as
// complete and fail are.
func (a *API) cancelAck(rq *request) (reply, error) {
	var body cancelAckBody
	if err := decodeLease(rq, &body, &body.LeaseToken); err != nil {
		return reply{}, err
	}
	t, err := rq.q.AckCancel(rq.ctx, queue.AckCancelRequest{ID: rq.id, LeaseToken: body.LeaseToken}, rq.now(a))
	return a.taskOrError(rq, t, err)
}

// retry serves POST /queues/{queue}/tasks/{id}/retry: a failed or cancelled task goes
// back to pending with fresh attempts.
func (a *API) retry(rq *request) (reply, error) {
	if err := decodeObject(rq.body, &struct{}{}, ""); err != nil {
		return reply{}, err
	}
	t, err := rq.q.Retry(rq.ctx, rq.id, rq.now(a))
	return a.taskOrError(rq, t, err)
}

// expire serves POST /queues/{queue}/tasks/{id}/expire: a pending task is marked expired
// by hand (reason "manual").
func (a *API) expire(rq *request) (reply, error) {
	if err := decodeObject(rq.body, &struct{}{}, ""); err != nil {
		return reply{}, err
	}
	t, err := rq.q.Expire(rq.ctx, rq.id, rq.now(a))
	return a.taskOrError(rq, t, err)
}

// taskOrError is the 200 {"task": ...} of an operation, or its error.
func (a *API) taskOrError(rq *request, t queue.Task, err error) (reply, error) {
	if err != nil {
		return reply{}, err
	}
	return reply{status: http.StatusOK, body: taskReply{Task: view(t, rq.now(a))}}, nil
}
