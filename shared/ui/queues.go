package ui

import (
	"net/http"
	"time"

	"github.com/s3q/s3q/shared/client"
	"github.com/s3q/s3q/shared/queue"
)

// queueRow is one queue as the queues page and a queue's page show it.
type queueRow struct {
	Name           string
	Live, Delayed  int
	Ready          int  // live, available now and not known to be running
	Running        *int // known for a queue with max_concurrency (its slots)
	AtLeast        bool
	Counted        bool
	MaxConcurrency int
	Shards         int
	Target         string
	Defaults       string
	AutoDeclared   bool
	UpdatedAt      time.Time
}

func newQueueRow(q client.QueueInfo) queueRow {
	r := queueRow{
		Name: q.Name, MaxConcurrency: q.MaxConcurrency, Shards: q.Shards, Target: describeTarget(q.Target),
		Defaults: describeDefaults(q.Declaration), AutoDeclared: q.AutoDeclared, UpdatedAt: q.UpdatedAt,
	}
	if c := q.Counts; c != nil {
		r.Counted, r.Live, r.Delayed, r.Running, r.AtLeast = true, c.Live, c.Delayed, c.Running, c.AtLeast
		r.Ready = c.Live - c.Delayed
		if c.Running != nil {
			r.Ready -= *c.Running
		}
		r.Ready = max(r.Ready, 0)
	}
	return r
}

// queuesView is the queues page: one page of declared queues.
type queuesView struct {
	Queues     []queueRow
	Cursor     string
	NextCursor string
}

// queuesPage is /: GET /queues with counts, one page of 100 queues.
func (c *Console) queuesPage(r *http.Request) (*view, error) {
	cursor := r.URL.Query().Get("cursor")
	res, err := c.api.ListQueues(r.Context(), client.ListQueuesRequest{Limit: 100, Cursor: cursor})
	if err != nil {
		return nil, err
	}
	v := queuesView{Cursor: cursor, NextCursor: res.NextCursor}
	for _, q := range res.Queues {
		v.Queues = append(v.Queues, newQueueRow(q))
	}
	return &view{template: "queues", title: "Queues", nav: "queues", data: v, refresh: true}, nil
}

// taskRow is one task in a listing.
type taskRow struct {
	client.Task
	// Waiting is true for a pending task not yet available.
	Waiting bool
}

// tasksView is a queue's page: its counts and settings, and one page of
// its tasks.
type tasksView struct {
	Queue      queueRow
	QueueErr   *pageErr
	Status     string
	Type       string
	Statuses   []queue.Status
	Tasks      []taskRow
	Cursor     string
	NextCursor string
	PageSize   int
	Err        *pageErr // the listing's error (a bad filter), shown by the form
	Back       string
}

// tasksPage is /queues/{queue}: GET /queues/{queue} (counts) and one page
// of GET /queues/{queue}/tasks with the filters.
func (c *Console) tasksPage(r *http.Request) (*view, error) {
	name := r.PathValue("queue")
	q := r.URL.Query()
	v := tasksView{Status: q.Get("status"), Type: q.Get("type"), Cursor: q.Get("cursor"), Statuses: queue.Statuses,
		PageSize: c.opts.PageSize, Back: r.URL.RequestURI()}
	info, err := c.api.GetQueue(r.Context(), name)
	if err != nil {
		pe := toPageErr(err)
		if pe.Code != "queue_not_found" {
			return nil, err
		}
		// An undeclared queue may still hold tasks (auto_declare off since).
		v.QueueErr = pe
		v.Queue = queueRow{Name: name}
	} else {
		v.Queue = newQueueRow(info)
	}
	res, err := c.api.List(r.Context(), queue.ListRequest{Queue: name, Status: queue.Status(v.Status), TaskType: v.Type,
		Limit: c.opts.PageSize, Cursor: v.Cursor})
	if err != nil {
		pe := toPageErr(err)
		if pe.Status != http.StatusBadRequest {
			return nil, err
		}
		v.Err = pe
	}
	now := c.opts.Now()
	for _, t := range res.Tasks {
		t.ExpiresInSeconds = nil // the page counts down from expires_at; this would change every second
		v.Tasks = append(v.Tasks, taskRow{Task: t, Waiting: t.Status == queue.StatusPending && t.AvailableAt.After(now)})
	}
	v.NextCursor = res.NextCursor
	status := http.StatusOK
	if v.Err != nil {
		status = v.Err.Status
	}
	return &view{template: "tasks", title: "Queue " + name, nav: "queues", data: v, refresh: v.Err == nil, status: status}, nil
}
