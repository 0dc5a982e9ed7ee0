package client

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/s3q/s3q/shared/wire"
)

// Schedule routes of the API, under the client's queue (or
// the queue a request names): POST|GET /queues/{queue}/schedules,
// GET|PUT|DELETE /queues/{queue}/schedules/{id},
// POST /queues/{queue}/schedules/{id}/pause|resume|trigger,
// GET /queues/{queue}/schedules/{id}/history. A schedule of another queue
// is a 404 *Error.

// The schedule bodies, as the server encodes and decodes them.
type (
	// Schedule is a schedule as the API shows it.
	Schedule = wire.Schedule
	// ScheduleRequest creates or replaces a schedule.
	ScheduleRequest = wire.ScheduleRequest
	// ScheduleList is one page of schedules.
	ScheduleList = wire.ScheduleList
	// Fire is one entry of a schedule's history.
	Fire = wire.Fire
	// ScheduleHistory is one page of a schedule's fires, oldest first.
	ScheduleHistory = wire.ScheduleHistory
)

type scheduleReply = wire.ScheduleReply

// ListSchedulesRequest pages the schedules of a queue.
type ListSchedulesRequest struct {
	// Queue is the queue whose schedules are listed. Defaults to the
	// client's.
	Queue string
	// Limit is the most schedules in the page. Defaults to the server's.
	Limit int
	// Cursor is the NextCursor of the previous page.
	Cursor string
}

// ScheduleHistoryRequest pages a schedule's fires.
type ScheduleHistoryRequest struct {
	// Since starts the page at this fire time (inclusive). Optional.
	Since *time.Time
	// Cursor is the NextCursor of the previous page.
	Cursor string
	// Limit is the most fires returned. Defaults to 100; at most 1000.
	Limit int
}

// CreateSchedule creates a cron schedule.
func (c *Client) CreateSchedule(ctx context.Context, req ScheduleRequest) (Schedule, error) {
	var res scheduleReply
	_, err := c.do(ctx, http.MethodPost, c.schedulePath(req.Queue, ""), nil, req, &res)
	return res.Schedule, err
}

// UpdateSchedule replaces a schedule's definition (Enabled nil: unchanged).
func (c *Client) UpdateSchedule(ctx context.Context, id string, req ScheduleRequest) (Schedule, error) {
	var res scheduleReply
	_, err := c.do(ctx, http.MethodPut, c.schedulePath(req.Queue, "/"+url.PathEscape(id)), nil, req, &res)
	return res.Schedule, err
}

// GetSchedule returns a schedule with its next 5 fire times.
func (c *Client) GetSchedule(ctx context.Context, id string) (Schedule, error) {
	var res scheduleReply
	_, err := c.do(ctx, http.MethodGet, c.scheduleIDPath(id, ""), nil, nil, &res)
	return res.Schedule, err
}

// ListSchedules returns one page of schedules.
func (c *Client) ListSchedules(ctx context.Context, req ListSchedulesRequest) (ScheduleList, error) {
	q := pageQuery(req.Limit, req.Cursor)
	var res ScheduleList
	_, err := c.do(ctx, http.MethodGet, c.schedulePath(req.Queue, ""), q, nil, &res)
	return res, err
}

// DeleteSchedule deletes a schedule; the tasks it fired stay.
func (c *Client) DeleteSchedule(ctx context.Context, id string) error {
	_, err := c.do(ctx, http.MethodDelete, c.scheduleIDPath(id, ""), nil, nil, nil)
	return err
}

func (c *Client) scheduleOp(ctx context.Context, id, op string) (Schedule, error) {
	var res scheduleReply
	_, err := c.do(ctx, http.MethodPost, c.scheduleIDPath(id, "/"+op), nil, struct{}{}, &res)
	return res.Schedule, err
}

// PauseSchedule stops a schedule from firing.
func (c *Client) PauseSchedule(ctx context.Context, id string) (Schedule, error) {
	return c.scheduleOp(ctx, id, "pause")
}

// ResumeSchedule lets a paused schedule fire again, from now on.
func (c *Client) ResumeSchedule(ctx context.Context, id string) (Schedule, error) {
	return c.scheduleOp(ctx, id, "resume")
}

// TriggerSchedule fires a schedule once, now.
func (c *Client) TriggerSchedule(ctx context.Context, id string) (Fire, error) {
	var res wire.FireReply
	_, err := c.do(ctx, http.MethodPost, c.scheduleIDPath(id, "/trigger"), nil, struct{}{}, &res)
	return res.Fire, err
}

// ScheduleHistory returns one page of a schedule's fires, oldest first.
func (c *Client) ScheduleHistory(ctx context.Context, id string, req ScheduleHistoryRequest) (ScheduleHistory, error) {
	q := pageQuery(req.Limit, req.Cursor)
	if req.Since != nil {
		q.Set("since", req.Since.UTC().Format(time.RFC3339Nano))
	}
	var res ScheduleHistory
	_, err := c.do(ctx, http.MethodGet, c.scheduleIDPath(id, "/history"), q, nil, &res)
	return res, err
}

// schedulePath is /queues/{queue}/schedules{rest}, for the queue a request
// names or else the client's.
func (c *Client) schedulePath(name, rest string) string {
	if name == "" {
		name = c.queue
	}
	return queuePath(name, "/schedules"+rest)
}

// scheduleIDPath is /queues/{queue}/schedules/{id}{rest}, in the client's
// queue.
func (c *Client) scheduleIDPath(id, rest string) string {
	return c.qpath("/schedules/" + url.PathEscape(id) + rest)
}
