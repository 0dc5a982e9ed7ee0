package client

import (
	"context"
	"net/http"

	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
)

// Queue routes of the API: PUT|GET|DELETE /queues/{queue},
// GET /queues.

// QueueInfo is a declared queue as the API returns it: the declaration
// and, when asked for, its counts.
type QueueInfo struct {
	queues.Declaration
	Counts *queue.QueueCounts `json:"counts,omitempty"`
}

// queueBody is what a declaration sends: its settable fields.
type queueBody struct {
	TTL            *queue.Duration `json:"ttl,omitempty"`
	TTLFrom        queue.TTLFrom   `json:"ttl_from,omitempty"`
	MaxAttempts    int             `json:"max_attempts,omitempty"`
	Timeout        *queue.Duration `json:"timeout,omitempty"`
	Shards         int             `json:"shards,omitempty"`
	MaxConcurrency int             `json:"max_concurrency,omitempty"`
	Priority       int             `json:"priority,omitempty"`
	Target         *queues.Target  `json:"target,omitempty"`
}

// DeclareQueue creates the queue d.Name, or replaces its settings (the
// fields of d a caller may set; shards cannot change). It returns the
// stored declaration and whether it was created.
func (c *Client) DeclareQueue(ctx context.Context, d queues.Declaration) (QueueInfo, bool, error) {
	var res struct {
		Queue QueueInfo `json:"queue"`
	}
	body := queueBody{TTL: d.TTL, TTLFrom: d.TTLFrom, MaxAttempts: d.MaxAttempts, Timeout: d.Timeout,
		Shards: d.Shards, MaxConcurrency: d.MaxConcurrency, Priority: d.Priority, Target: d.Target}
	status, err := c.do(ctx, http.MethodPut, queuePath(d.Name, ""), nil, body, &res)
	return res.Queue, status == http.StatusCreated, err
}

// GetQueue returns a declared queue with its counts; an undeclared one is
// an *Error with code "queue_not_found".
func (c *Client) GetQueue(ctx context.Context, name string) (QueueInfo, error) {
	var res struct {
		Queue QueueInfo `json:"queue"`
	}
	_, err := c.do(ctx, http.MethodGet, queuePath(name, ""), nil, nil, &res)
	return res.Queue, err
}

// ListQueuesRequest pages GET /queues.
type ListQueuesRequest struct {
	Limit  int    // defaults to 100
	Cursor string // the NextCursor of the previous page
	// NoCounts leaves the counts out (each costs the server LISTs).
	NoCounts bool
}

// ListQueuesResult is one page of declared queues, by name.
type ListQueuesResult struct {
	Queues     []QueueInfo `json:"queues"`
	NextCursor string      `json:"next_cursor,omitempty"`
}

// ListQueues returns one page of declared queues.
func (c *Client) ListQueues(ctx context.Context, req ListQueuesRequest) (ListQueuesResult, error) {
	q := pageQuery(req.Limit, req.Cursor)
	if req.NoCounts {
		q.Set("counts", "false")
	}
	var res ListQueuesResult
	_, err := c.do(ctx, http.MethodGet, "/queues", q, nil, &res)
	return res, err
}

// DeleteQueue deletes a queue's declaration; one that still holds live
// tasks is an *Error with code "queue_not_empty" (409).
func (c *Client) DeleteQueue(ctx context.Context, name string) error {
	_, err := c.do(ctx, http.MethodDelete, queuePath(name, ""), nil, nil, nil)
	return err
}
