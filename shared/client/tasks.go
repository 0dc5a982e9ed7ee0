package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/s3q/s3q/shared/queue"
)

// Task is a task as the API returns it: the queue's record without its
// lease token, plus the seconds left until its deadline.
type Task struct {
	queue.Task
	// ExpiresInSeconds is the time left until expires_at when the answer
	// was made (negative once passed); nil when the task has no deadline.
	ExpiresInSeconds *int64 `json:"expires_in_seconds,omitempty"`
}

// Lease is a claim on a running task.
type Lease = queue.Lease

// Claimed is a task handed to a worker with its lease.
type Claimed struct {
	Task  Task  `json:"task"`
	Lease Lease `json:"lease"`
}

// SubmitRequest is a submit: the queue's request plus an optional wait.
type SubmitRequest struct {
	queue.SubmitRequest
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
	m["wait"], _ = json.Marshal(queue.FormatDuration(r.Wait))
	return json.Marshal(m)
}

// SubmitResult is the answer to a submit.
type SubmitResult struct {
	Task         Task `json:"task"`
	Deduplicated bool `json:"deduplicated,omitempty"`
	// Status is the HTTP status: 201 created, 200 deduplicated or (with a
	// wait) finished, 202 still running when the wait ran out.
	Status int `json:"-"`
}

// Submit submits one task to req.Queue, or else the client's queue. With
// a Wait, a task whose deadline passes during the wait returns an *Error
// with code "deadline_exceeded" (504).
func (c *Client) Submit(ctx context.Context, req SubmitRequest) (SubmitResult, error) {
	var res SubmitResult
	q := c.queue
	if req.Queue != "" {
		q = req.Queue
	}
	status, err := c.do(ctx, http.MethodPost, queuePath(q, "/tasks"), nil, req, &res)
	res.Status = status
	return res, err
}

// BatchItem is one result of a batch submit: a task or an error.
type BatchItem struct {
	Task         *Task  `json:"task,omitempty"`
	Deduplicated bool   `json:"deduplicated,omitempty"`
	Error        *Error `json:"error,omitempty"`
}

// UnmarshalJSON reads the item; an error object becomes an *Error.
func (b *BatchItem) UnmarshalJSON(raw []byte) error {
	var v struct {
		Task         *Task `json:"task"`
		Deduplicated bool  `json:"deduplicated"`
		Error        *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
			Field   string `json:"field"`
		} `json:"error"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return err
	}
	b.Task, b.Deduplicated = v.Task, v.Deduplicated
	if v.Error != nil {
		b.Error = &Error{Status: http.StatusBadRequest, Code: v.Error.Code, Message: v.Error.Message, Field: v.Error.Field}
	}
	return nil
}

// SubmitBatch submits up to 500 tasks to one queue: the Queue the first
// request names, or else the client's. A request naming another queue
// gets its own 400 result naming "queue". One result per request, in order.
func (c *Client) SubmitBatch(ctx context.Context, reqs []queue.SubmitRequest) ([]BatchItem, error) {
	var res struct {
		Results []BatchItem `json:"results"`
	}
	q := c.queue
	if len(reqs) > 0 && reqs[0].Queue != "" {
		q = reqs[0].Queue
	}
	_, err := c.do(ctx, http.MethodPost, queuePath(q, "/tasks/batch"), nil, map[string]any{"tasks": reqs}, &res)
	return res.Results, err
}

// Get returns one task of the client's queue (a task of another queue is
// a 404 *Error).
func (c *Client) Get(ctx context.Context, id string) (Task, error) {
	var res struct {
		Task Task `json:"task"`
	}
	_, err := c.do(ctx, http.MethodGet, c.qpath("/tasks/"+url.PathEscape(id)), nil, nil, &res)
	return res.Task, err
}

// ListResult is one page of tasks.
type ListResult struct {
	Tasks      []Task `json:"tasks"`
	NextCursor string `json:"next_cursor,omitempty"`
}

// List returns one page of tasks matching the filters: of req.Queue
// (GET /queues/{queue}/tasks), or of every queue when it is empty (GET
// /tasks, the operator's route).
func (c *Client) List(ctx context.Context, req queue.ListRequest) (ListResult, error) {
	q := url.Values{}
	set := func(k, v string) {
		if v != "" {
			q.Set(k, v)
		}
	}
	set("status", string(req.Status))
	set("task_type", req.TaskType)
	set("cursor", req.Cursor)
	if req.Limit > 0 {
		q.Set("limit", strconv.Itoa(req.Limit))
	}
	path := "/tasks"
	if req.Queue != "" {
		path = queuePath(req.Queue, "/tasks")
	}
	var res ListResult
	_, err := c.do(ctx, http.MethodGet, path, q, nil, &res)
	return res, err
}

// Version is one stored version of a task record.
type Version struct {
	VersionID  string    `json:"version_id"`
	ModifiedAt time.Time `json:"modified_at"`
	Task       Task      `json:"task"`
}

// History returns every version of a task's record, oldest first.
func (c *Client) History(ctx context.Context, id string) ([]Version, error) {
	var res struct {
		Versions []Version `json:"versions"`
	}
	_, err := c.do(ctx, http.MethodGet, c.qpath("/tasks/"+url.PathEscape(id)+"/history"), nil, nil, &res)
	return res.Versions, err
}

func (c *Client) taskOp(ctx context.Context, id, op string, body any) (Task, error) {
	var res struct {
		Task Task `json:"task"`
	}
	if body == nil {
		body = struct{}{}
	}
	_, err := c.do(ctx, http.MethodPost, c.qpath("/tasks/"+url.PathEscape(id)+"/"+op), nil, body, &res)
	return res.Task, err
}

// Cancel cancels a pending task or asks a running one to stop.
func (c *Client) Cancel(ctx context.Context, id string) (Task, error) {
	return c.taskOp(ctx, id, "cancel", nil)
}

// Retry puts a failed or cancelled task back to pending.
func (c *Client) Retry(ctx context.Context, id string) (Task, error) {
	return c.taskOp(ctx, id, "retry", nil)
}

// Expire marks a pending task expired by hand.
func (c *Client) Expire(ctx context.Context, id string) (Task, error) {
	return c.taskOp(ctx, id, "expire", nil)
}
