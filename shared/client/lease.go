package client

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/s3q/s3q/shared/wire"
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
// POST /queues/{queue}/claim/wait, the route of held waits. A claim the
// queue's rate limit (max_per_second) held back returns no task and a
// *wire.RateLimitedError (errors.Is wire.ErrRateLimited, and
// queue.ErrRateLimited) whose RetryAfter says when to claim again.
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
		body["lease_for"] = wire.FormatDuration(req.LeaseFor)
	}
	if req.WorkerID != "" {
		body["worker_id"] = req.WorkerID
	}
	if req.MaxTasks > 0 {
		body["max_tasks"] = req.MaxTasks
	}
	if req.Wait > 0 {
		body["wait"] = wire.FormatDuration(req.Wait)
	}
	var res wire.ClaimReply
	path := "/claim"
	if req.Wait > 0 {
		path = "/claim/wait" // long-polls run apart, on the waits function
	}
	status, header, err := c.send(ctx, http.MethodPost, queuePath(q, path), nil, body, &res)
	if err != nil {
		return []Claimed{}, err
	}
	if status == http.StatusNoContent {
		if wait, ok := retryAfter(header); ok {
			return []Claimed{}, &wire.RateLimitedError{Queue: q, RetryAfter: wait}
		}
		return []Claimed{}, nil
	}
	return res.Tasks, nil
}

// The lease operations below each take a request struct naming the lease
// the claim returned, as the core's do. They are retried on a 503,
// another 5xx or a network error (Options.MaxRetries): the same
// operation with the same token whose first attempt landed answers as
// that attempt did.

// HeartbeatRequest extends a lease.
type HeartbeatRequest struct {
	// Lease is the lease the claim returned. Required.
	Lease Lease
	// LeaseFor is the new lease length from now. Defaults to the task's
	// timeout.
	LeaseFor time.Duration
}

// Heartbeat extends a lease and returns the task, whose CancelRequested
// asks the worker to stop.
func (c *Client) Heartbeat(ctx context.Context, req HeartbeatRequest) (Claimed, error) {
	body := map[string]any{"lease_token": req.Lease.Token}
	if req.LeaseFor > 0 {
		body["lease_for"] = wire.FormatDuration(req.LeaseFor)
	}
	var res Claimed
	_, err := c.doRetry(ctx, http.MethodPost, c.taskPath(req.Lease.TaskID, "/heartbeat"), nil, body, &res)
	return res, err
}

// CompleteRequest finishes a task.
type CompleteRequest struct {
	// Lease is the lease the claim returned. Required.
	Lease Lease
	// Output is the task's result (JSON). Defaults to none.
	Output json.RawMessage
}

// Complete finishes a task with its output.
func (c *Client) Complete(ctx context.Context, req CompleteRequest) (Task, error) {
	body := map[string]any{"lease_token": req.Lease.Token}
	if len(req.Output) > 0 {
		body["output"] = req.Output
	}
	return c.taskOp(ctx, req.Lease.TaskID, "complete", body, true)
}

// FailRequest reports a failed attempt.
type FailRequest struct {
	// Lease is the lease the claim returned. Required.
	Lease Lease
	// Error is the failure message, kept as the task's last_error.
	// Defaults to "".
	Error string
	// Permanent says that no attempt can succeed: the task fails at once
	// instead of being retried. Defaults to false (retried with backoff
	// while attempts remain).
	Permanent bool
}

// Fail records a failed attempt; the server retries the task with backoff
// while attempts remain and the failure is not permanent, else
// dead-letters it.
func (c *Client) Fail(ctx context.Context, req FailRequest) (Task, error) {
	return c.taskOp(ctx, req.Lease.TaskID, "fail", map[string]any{"lease_token": req.Lease.Token, "error": req.Error, "retryable": !req.Permanent}, true)
}

// RescheduleRequest puts a running task back for later.
type RescheduleRequest struct {
	// Lease is the lease the claim returned. Required.
	Lease Lease
	// Delay until the task is available again. Defaults to 0 (now).
	Delay time.Duration
	// ExtendExpiration moves the task's deadline later by this much.
	// Defaults to 0 (the deadline stays).
	ExtendExpiration time.Duration
}

// Reschedule puts a running task back, available after Delay, and gives
// back the attempt its claim used.
func (c *Client) Reschedule(ctx context.Context, req RescheduleRequest) (Task, error) {
	body := map[string]any{"lease_token": req.Lease.Token, "delay": wire.FormatDuration(req.Delay)}
	if req.ExtendExpiration > 0 {
		body["extend_expiration"] = wire.FormatDuration(req.ExtendExpiration)
	}
	return c.taskOp(ctx, req.Lease.TaskID, "reschedule", body, true)
}

// AckCancelRequest acknowledges a cancel request (or gives up the task).
type AckCancelRequest struct {
	// Lease is the lease the claim returned. Required.
	Lease Lease
}

// AckCancel acknowledges a cancel request: the running task is cancelled.
func (c *Client) AckCancel(ctx context.Context, req AckCancelRequest) (Task, error) {
	return c.taskOp(ctx, req.Lease.TaskID, "cancel-ack", map[string]any{"lease_token": req.Lease.Token}, true)
}

// retryAfter is the wait a claim's 204 asks for: S3q-Retry-After-Ms, else
// Retry-After in seconds; false when it asks for none (nothing was
// available).
func retryAfter(h http.Header) (time.Duration, bool) {
	if ms, err := strconv.ParseInt(h.Get(wire.HeaderRetryAfterMs), 10, 64); err == nil && ms >= 0 {
		return time.Duration(ms) * time.Millisecond, true
	}
	if s, err := strconv.ParseInt(h.Get("Retry-After"), 10, 64); err == nil && s >= 0 {
		return time.Duration(s) * time.Second, true
	}
	return 0, false
}
