package api

import (
	"encoding/json"
	"net/http"

	"github.com/s3q/s3q/shared/queue"
)

// decodeLease decodes a lease operation's body and checks that it names
// a lease token (*token), the token of the lease a claim handed out.
func decodeLease(rq *request, body any, token *string) error {
	if err := decodeObject(rq.body, body, ""); err != nil {
		return err
	}
	if *token == "" {
		return badInput("lease_token", "is required: give the token of the lease the claim returned")
	}
	return nil
}

// heartbeatBody is the body of POST /tasks/{id}/heartbeat.
type heartbeatBody struct {
	LeaseToken string `json:"lease_token"`
	// LeaseFor is the new lease length from now. Defaults to the task's timeout.
	LeaseFor *queue.Duration `json:"lease_for"`
}

// heartbeat serves POST /queues/{queue}/tasks/{id}/heartbeat: the lease is extended and
// the task returned with the lease; cancel_requested tells the worker to stop.
func (a *API) heartbeat(rq *request) (reply, error) {
	var body heartbeatBody
	if err := decodeLease(rq, &body, &body.LeaseToken); err != nil {
		return reply{}, err
	}
	var d queue.Duration
	if body.LeaseFor != nil {
		d = *body.LeaseFor
	}
	c, err := rq.q.Heartbeat(rq.ctx, queue.HeartbeatRequest{ID: rq.id, LeaseToken: body.LeaseToken, LeaseFor: d.Std()}, rq.now(a))
	if err != nil {
		return reply{}, err
	}
	return reply{status: http.StatusOK, body: claimedView{Task: view(c.Task, rq.now(a)), Lease: c.Lease}}, nil
}

// completeBody is the body of POST /tasks/{id}/complete.
type completeBody struct {
	LeaseToken string          `json:"lease_token"`
	Output     json.RawMessage `json:"output"`
}

// complete serves POST /queues/{queue}/tasks/{id}/complete.
func (a *API) complete(rq *request) (reply, error) {
	var body completeBody
	if err := decodeLease(rq, &body, &body.LeaseToken); err != nil {
		return reply{}, err
	}
	t, err := rq.q.Complete(rq.ctx, queue.CompleteRequest{ID: rq.id, LeaseToken: body.LeaseToken, Output: body.Output}, rq.now(a))
	return a.taskOrError(rq, t, err)
}

// failBody is the body of POST /tasks/{id}/fail.
type failBody struct {
	LeaseToken string `json:"lease_token"`
	// Error is the failure message, kept as last_error.
	Error string `json:"error"`
	// Retryable says whether another attempt may succeed. Defaults to true.
	Retryable *bool `json:"retryable,omitempty"`
}

// fail serves POST /queues/{queue}/tasks/{id}/fail: the core retries the task with
// backoff, or dead-letters it (status failed).
func (a *API) fail(rq *request) (reply, error) {
	var body failBody
	if err := decodeLease(rq, &body, &body.LeaseToken); err != nil {
		return reply{}, err
	}
	t, err := rq.q.Fail(rq.ctx, queue.FailRequest{
		ID: rq.id, LeaseToken: body.LeaseToken, Error: body.Error, Retryable: body.Retryable,
	}, rq.now(a))
	return a.taskOrError(rq, t, err)
}

// rescheduleBody is the body of POST /tasks/{id}/reschedule.
type rescheduleBody struct {
	LeaseToken string `json:"lease_token"`
	// Delay until the task is available again. Defaults to 0 (now).
	Delay queue.Duration `json:"delay,omitempty"`
	// ExtendExpiration moves the task's deadline later. Defaults to 0.
	ExtendExpiration queue.Duration `json:"extend_expiration,omitempty"`
}

// reschedule serves POST /queues/{queue}/tasks/{id}/reschedule: the task goes back to
// pending after delay, its deadline moved by extend_expiration.
func (a *API) reschedule(rq *request) (reply, error) {
	var body rescheduleBody
	if err := decodeLease(rq, &body, &body.LeaseToken); err != nil {
		return reply{}, err
	}
	t, err := rq.q.Reschedule(rq.ctx, queue.RescheduleRequest{
		ID: rq.id, LeaseToken: body.LeaseToken, Delay: body.Delay, ExtendExpiration: body.ExtendExpiration,
	}, rq.now(a))
	return a.taskOrError(rq, t, err)
}
