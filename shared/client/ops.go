package client

import (
	"context"
	"net/http"

	"github.com/s3q/s3q/shared/wire"
)

// The queue operations (docs/operations.md): pause and resume, stats,
// purge and the bulk retry, cancel and expire. Each is safe to send
// again, so each is retried on a 503, another 5xx or a network error; a
// bulk call retried after its first attempt landed reports only what the
// retry itself changed.

// The bulk bodies.
type (
	// BulkOp is a bulk operation: wire.OpPurge, OpRetry, OpCancel, OpExpire.
	BulkOp = wire.BulkOp
	// BulkRequest chooses the tasks of a bulk operation in one queue.
	BulkRequest = wire.BulkRequest
	// BulkResult is what one bulk call did (or would do, on a dry run).
	BulkResult = wire.BulkResult
)

// PauseQueue pauses a queue: claims and push deliveries take nothing from
// it until ResumeQueue; submits go on.
func (c *Client) PauseQueue(ctx context.Context, name string) (QueueInfo, error) {
	return c.queueOp(ctx, name, "/pause")
}

// ResumeQueue resumes a paused queue.
func (c *Client) ResumeQueue(ctx context.Context, name string) (QueueInfo, error) {
	return c.queueOp(ctx, name, "/resume")
}

func (c *Client) queueOp(ctx context.Context, name, op string) (QueueInfo, error) {
	var res wire.QueueReply
	_, err := c.doRetry(ctx, http.MethodPost, queuePath(name, op), nil, struct{}{}, &res)
	return res.Queue, err
}

// QueueStats returns a queue's counts by status, its oldest due pending
// task and the failures, cancels and expiries of the last hour.
func (c *Client) QueueStats(ctx context.Context, name string) (QueueStats, error) {
	var res struct {
		Stats QueueStats `json:"stats"`
	}
	_, err := c.doRetry(ctx, http.MethodGet, queuePath(name, "/stats"), nil, nil, &res)
	return res.Stats, err
}

// Purge deletes up to req.Limit (at most 100) pending or finished tasks
// of the client's queue (or req.Queue) chosen by req (docs/operations.md). A
// result with NextCursor has more: call again with it as req.Cursor.
func (c *Client) Purge(ctx context.Context, req BulkRequest) (BulkResult, error) {
	return c.Bulk(ctx, wire.OpPurge, req)
}

// Bulk runs a bulk operation (wire.OpPurge, OpRetry, OpCancel or
// OpExpire) on up to req.Limit tasks of the client's queue (or
// req.Queue) chosen by req, or reports what it would do when req.DryRun
// is set.
func (c *Client) Bulk(ctx context.Context, op BulkOp, req BulkRequest) (BulkResult, error) {
	name := req.Queue
	if name == "" {
		name = c.queue
	}
	path := "/bulk/" + string(op)
	if op == wire.OpPurge {
		path = "/purge"
	}
	var res BulkResult
	_, err := c.doRetry(ctx, http.MethodPost, queuePath(name, path), nil, req, &res)
	return res, err
}
