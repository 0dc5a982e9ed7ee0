package client

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/s3q/s3q/shared/queue"
)

// ClaimRequest asks for work.
type ClaimRequest struct {
	Queue     string   // defaults to the client's queue
	TaskTypes []string // defaults to any
	LeaseFor  time.Duration
	WorkerID  string
	MaxTasks  int           // defaults to 1
	Wait      time.Duration // long-poll up to this long (≤ 20s) when nothing is available
}

// Claim leases up to MaxTasks tasks; an empty slice means nothing was
// available (within Wait). A claim with a Wait goes to
// POST /queues/{queue}/claim/wait, the route of held waits.
func (c *Client) Claim(ctx context.Context, req ClaimRequest) ([]Claimed, error) {
	body := map[string]any{}
	q := c.queue
	if req.Queue != "" {
		q = req.Queue
	}
	if len(req.TaskTypes) > 0 {
		body["task_types"] = req.TaskTypes
	}
	if req.LeaseFor > 0 {
		body["lease_for"] = queue.FormatDuration(req.LeaseFor)
	}
	if req.WorkerID != "" {
		body["worker_id"] = req.WorkerID
	}
	if req.MaxTasks > 0 {
		body["max_tasks"] = req.MaxTasks
	}
	if req.Wait > 0 {
		body["wait"] = queue.FormatDuration(req.Wait)
	}
	var res struct {
		Tasks []Claimed `json:"tasks"`
	}
	path := "/claim"
	if req.Wait > 0 {
		path = "/claim/wait" // long-polls run apart, on the waits function
	}
	status, err := c.do(ctx, http.MethodPost, queuePath(q, path), nil, body, &res)
	if err != nil || status == http.StatusNoContent {
		return []Claimed{}, err
	}
	return res.Tasks, nil
}

// The lease operations below are retried on a 503, another 5xx or a
// network error (Options.MaxRetries): the same operation with the same
// token whose first attempt landed answers as that attempt did.

// Heartbeat extends a lease (0: the task's timeout) and returns the task,
// whose CancelRequested asks the worker to stop.
func (c *Client) Heartbeat(ctx context.Context, l Lease, leaseFor time.Duration) (Claimed, error) {
	body := map[string]any{"lease_token": l.Token}
	if leaseFor > 0 {
		body["lease_for"] = queue.FormatDuration(leaseFor)
	}
	var res Claimed
	_, err := c.doRetry(ctx, http.MethodPost, c.taskPath(l.TaskID, "/heartbeat"), nil, body, &res)
	return res, err
}

// Complete finishes a task with an output (JSON; nil for none).
func (c *Client) Complete(ctx context.Context, l Lease, output json.RawMessage) (Task, error) {
	body := map[string]any{"lease_token": l.Token}
	if len(output) > 0 {
		body["output"] = output
	}
	return c.taskOp(ctx, l.TaskID, "complete", body, true)
}

// Fail records a failed attempt; the server retries it with backoff while
// attempts remain and retryable is true, else dead-letters it.
func (c *Client) Fail(ctx context.Context, l Lease, msg string, retryable bool) (Task, error) {
	return c.taskOp(ctx, l.TaskID, "fail", map[string]any{"lease_token": l.Token, "error": msg, "retryable": retryable}, true)
}

// Reschedule puts a running task back, available after delay, optionally
// moving its deadline later by extend.
func (c *Client) Reschedule(ctx context.Context, l Lease, delay, extend time.Duration) (Task, error) {
	body := map[string]any{"lease_token": l.Token, "delay": queue.FormatDuration(delay)}
	if extend > 0 {
		body["extend_expiration"] = queue.FormatDuration(extend)
	}
	return c.taskOp(ctx, l.TaskID, "reschedule", body, true)
}

// AckCancel acknowledges a cancel request: the running task is cancelled.
func (c *Client) AckCancel(ctx context.Context, l Lease) (Task, error) {
	return c.taskOp(ctx, l.TaskID, "cancel-ack", map[string]any{"lease_token": l.Token}, true)
}
