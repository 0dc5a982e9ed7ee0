package client

import (
	"context"
	"net/http"

	"github.com/s3q/s3q/shared/wire"
)

// Queue routes of the API: PUT|GET|DELETE /queues/{queue},
// GET /queues.

// The queue bodies, as the server encodes and decodes them.
type (
	// QueueInfo is a declared queue as the API returns it: the
	// declaration and, when asked for, its counts.
	QueueInfo = wire.Queue
	// QueueRequest is a queue's settable fields (PUT /queues/{queue}).
	QueueRequest = wire.QueueRequest
	// Target is a queue's push target: one of Lambda and URL (with Secret).
	Target = wire.Target
	// QueueStats are a queue's counts, oldest due task and recent ends.
	QueueStats = wire.QueueStats
)

// DeclareQueue creates the queue name with the settings of req, or
// replaces its settings (shards cannot change). It returns the stored
// declaration and whether it was created.
func (c *Client) DeclareQueue(ctx context.Context, name string, req QueueRequest) (QueueInfo, bool, error) {
	var res wire.QueueReply
	status, err := c.do(ctx, http.MethodPut, queuePath(name, ""), nil, req, &res)
	return res.Queue, status == http.StatusCreated, err
}

// GetQueue returns a declared queue with its counts; an undeclared one is
// an *Error with code "queue_not_found".
func (c *Client) GetQueue(ctx context.Context, name string) (QueueInfo, error) {
	var res wire.QueueReply
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
type ListQueuesResult = wire.QueueList

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
