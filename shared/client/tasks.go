package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/s3q/s3q/shared/wire"
)

// The client decodes the API's answers into the bodies the server
// encodes (package wire), never into the server's stored records.
type (
	// Task is a task as the API returns it: what the wire shows of it,
	// plus the seconds left until its deadline (expires_in_seconds).
	Task = wire.TaskView
	// Lease is a claim on a running task.
	Lease = wire.Lease
	// Claimed is a task handed to a worker with its lease.
	Claimed = wire.Claimed
	// Version is one stored version of a task record.
	Version = wire.Version
	// HistoryResult is one page of a task's history, newest first.
	HistoryResult = wire.History
	// ListResult is one page of tasks.
	ListResult = wire.TaskList
	// Status is a task's status (wire.StatusPending, ...).
	Status = wire.Status
	// Duration is a duration written "90s", "30m", "1h", "7d".
	Duration = wire.Duration
)

// NewID returns a fresh task id, a lowercase UUIDv7: what Submit gives a
// request without one.
func NewID(now time.Time) string { return wire.NewID(now) }

// SubmitRequest is a submit: the request plus an optional wait.
type SubmitRequest struct {
	wire.SubmitRequest
	// Wait, when > 0, waits up to this long (at most 25s) for the outcome.
	Wait time.Duration `json:"-"`
}

// MarshalJSON writes the queue request with "wait" as a duration string.
func (r SubmitRequest) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(r.SubmitRequest)
	if err != nil || r.Wait <= 0 {
		return b, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	m["wait"], _ = json.Marshal(wire.FormatDuration(r.Wait))
	return json.Marshal(m)
}

// SubmitResult is the answer to a submit.
type SubmitResult struct {
	// TaskReply is the answer's body: the task, Deduplicated when a live
	// task held the dedup key, Replayed when the task with the request's
	// id already existed (an earlier attempt of this submit made it).
	wire.TaskReply
	// Status is the HTTP status: 201 created, 200 deduplicated, replayed
	// or (with a wait) finished, 202 still running when the wait ran out.
	Status int `json:"-"`
}

// Submit submits one task to req.Queue, or else the client's queue,
// exactly once: a request without an ID gets a
// fresh UUIDv7, and a 503, another 5xx or a network error is retried
// with the same id (Options.MaxRetries), so a retry whose first attempt
// landed returns that task (Replayed) instead of making a second. With a
// Wait, it goes to POST /queues/{queue}/tasks/wait (the route of held
// waits), and a task whose deadline passes during the wait returns an
// *Error with code "deadline_exceeded" (504). Its trace context is
// req's Traceparent and Tracestate, or else the span context of ctx (an
// OpenTelemetry span, a worker handler's run), sent as the traceparent
// and tracestate headers (trace.go).
func (c *Client) Submit(ctx context.Context, req SubmitRequest) (SubmitResult, error) {
	if req.ID == "" {
		req.ID = wire.NewID(time.Now())
	}
	var res SubmitResult
	q := c.queue
	if req.Queue != "" {
		q = req.Queue
	}
	path := "/tasks"
	if req.Wait > 0 {
		path = "/tasks/wait" // waits run apart, on the waits function
	}
	var hdr http.Header
	hdr, req.SubmitRequest = traceHeader(ctx, req.SubmitRequest)
	status, err := c.doRetry(ctx, http.MethodPost, queuePath(q, path), nil, withHeader{req, hdr}, &res.TaskReply)
	res.Status = status
	return res, err
}

// BatchItem is one result of a batch submit: a task or an error.
type BatchItem struct {
	Task         *Task  `json:"task,omitempty"`
	Deduplicated bool   `json:"deduplicated,omitempty"`
	Replayed     bool   `json:"replayed"`
	Error        *Error `json:"error,omitempty"`
}

// UnmarshalJSON reads the item; an error object becomes an *Error.
func (b *BatchItem) UnmarshalJSON(raw []byte) error {
	var v struct {
		Task         *Task `json:"task"`
		Deduplicated bool  `json:"deduplicated"`
		Replayed     bool  `json:"replayed"`
		Error        *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
			Field   string `json:"field"`
		} `json:"error"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return err
	}
	b.Task, b.Deduplicated, b.Replayed = v.Task, v.Deduplicated, v.Replayed
	if v.Error != nil {
		b.Error = &Error{Status: itemStatus(v.Error.Code), Code: v.Error.Code, Message: v.Error.Message, Field: v.Error.Field}
	}
	return nil
}

// itemStatus is the HTTP status a batch item's error code goes with.
func itemStatus(code string) int {
	switch code {
	case "not_found":
		return http.StatusNotFound
	case "conflict", "invalid_state":
		return http.StatusConflict
	case "too_large":
		return http.StatusRequestEntityTooLarge
	case "throttled":
		return http.StatusServiceUnavailable
	case "internal":
		return http.StatusInternalServerError
	}
	return http.StatusBadRequest
}

// SubmitBatch submits up to 500 tasks to one queue: the Queue the first
// request names, or else the client's. A request naming another queue
// gets its own 400 result naming "queue". One result per request, in order.
// As Submit, it gives every request without an ID a fresh UUIDv7 (the
// caller's slice is not changed) and retries with the same ids: the
// whole batch on a 503, another 5xx or a network error, and the items
// that failed with such an error on their own. The span context of ctx,
// when it carries one, is the trace context of every request without its
// own Traceparent.
func (c *Client) SubmitBatch(ctx context.Context, reqs []wire.SubmitRequest) ([]BatchItem, error) {
	reqs = append([]wire.SubmitRequest(nil), reqs...)
	now := time.Now()
	for i := range reqs {
		if reqs[i].ID == "" {
			reqs[i].ID = wire.NewID(now)
		}
	}
	q := c.queue
	if len(reqs) > 0 && reqs[0].Queue != "" {
		q = reqs[0].Queue
	}
	out := make([]BatchItem, len(reqs))
	todo := make([]int, len(reqs)) // indexes into reqs still to send
	for i := range todo {
		todo[i] = i
	}
	for n := 0; ; n++ {
		send := make([]wire.SubmitRequest, len(todo))
		for j, i := range todo {
			send[j] = reqs[i]
		}
		var res struct {
			Results []BatchItem `json:"results"`
		}
		if _, err := c.doRetry(ctx, http.MethodPost, queuePath(q, "/tasks/batch"), nil, withHeader{map[string]any{"tasks": send}, ctxTraceHeader(ctx)}, &res); err != nil {
			if n == 0 {
				return nil, err
			}
			return out, err // the earlier answers stand; the rest keep their last error
		}
		if len(res.Results) != len(send) {
			return nil, fmt.Errorf("client: batch of %d answered %d results", len(send), len(res.Results))
		}
		var again []int
		for j, i := range todo {
			out[i] = res.Results[j]
			if e := out[i].Error; e != nil && n < c.retries && retryable(ctx, e) {
				again = append(again, i)
			}
		}
		if len(again) == 0 {
			return out, nil
		}
		if err := c.wait(ctx, n, out[again[0]].Error); err != nil {
			return out, nil
		}
		todo = again
	}
}

// Get returns one task of the client's queue (a task of another queue is
// a 404 *Error).
func (c *Client) Get(ctx context.Context, id string) (Task, error) {
	var res wire.TaskReply
	_, err := c.doRetry(ctx, http.MethodGet, c.taskPath(id, ""), nil, nil, &res)
	return res.Task, err
}

// ListRequest chooses a page of tasks.
type ListRequest struct {
	// Queue is the queue listed; empty lists every queue (GET /tasks,
	// the operator's route).
	Queue string
	// Status, when set, lists only tasks in this status.
	Status Status
	// TaskType, when set, lists only tasks of this type.
	TaskType string
	// Priority, when set (1 to 5), lists only tasks of this priority.
	Priority int
	// Limit is the most tasks in the page. Defaults to the server's (100).
	Limit int
	// Cursor is the NextCursor of the previous page.
	Cursor string
}

// List returns one page of tasks matching the filters: of req.Queue
// (GET /queues/{queue}/tasks), or of every queue when it is empty (GET
// /tasks, the operator's route).
func (c *Client) List(ctx context.Context, req ListRequest) (ListResult, error) {
	q := pageQuery(req.Limit, req.Cursor)
	if req.Status != "" {
		q.Set("status", string(req.Status))
	}
	if req.TaskType != "" {
		q.Set("task_type", req.TaskType)
	}
	if req.Priority != 0 {
		q.Set("priority", fmt.Sprint(req.Priority))
	}
	path := "/tasks"
	if req.Queue != "" {
		path = queuePath(req.Queue, "/tasks")
	}
	var res ListResult
	_, err := c.doRetry(ctx, http.MethodGet, path, q, nil, &res)
	return res, err
}

// HistoryRequest pages a task's history.
type HistoryRequest struct {
	// Limit is the most versions in the page. Defaults to the server's (100).
	Limit int
	// Cursor is the NextCursor of the previous page.
	Cursor string
}

// History returns one page of the versions of a task's record, newest
// first: req.Limit of them (the server's default, 100, when 0), from
// req.Cursor, a previous page's NextCursor.
func (c *Client) History(ctx context.Context, id string, req HistoryRequest) (HistoryResult, error) {
	q := pageQuery(req.Limit, req.Cursor)
	var res HistoryResult
	_, err := c.doRetry(ctx, http.MethodGet, c.taskPath(id, "/history"), q, nil, &res)
	return res, err
}

// taskOp posts op on task id. Lease operations (retry true) are sent
// again on a 503, another 5xx or a network error: one whose first attempt
// landed answers as that attempt did. Cancel, retry and expire are not
// (a second try would find the first one's outcome and refuse).
func (c *Client) taskOp(ctx context.Context, id, op string, body any, retry bool) (Task, error) {
	var res wire.TaskReply
	if body == nil {
		body = struct{}{}
	}
	do := c.do
	if retry {
		do = c.doRetry
	}
	_, err := do(ctx, http.MethodPost, c.taskPath(id, "/"+op), nil, body, &res)
	return res.Task, err
}

// Cancel cancels a pending task or asks a running one to stop.
func (c *Client) Cancel(ctx context.Context, id string) (Task, error) {
	return c.taskOp(ctx, id, "cancel", nil, false)
}

// Retry puts a failed or cancelled task back to pending.
func (c *Client) Retry(ctx context.Context, id string) (Task, error) {
	return c.taskOp(ctx, id, "retry", nil, false)
}

// Expire marks a pending task expired by hand.
func (c *Client) Expire(ctx context.Context, id string) (Task, error) {
	return c.taskOp(ctx, id, "expire", nil, false)
}
