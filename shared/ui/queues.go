package ui

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/s3q/s3q/shared/client"
	"github.com/s3q/s3q/shared/queue"
)

// queueRow is one queue as the queues page and a queue's page show it.
type queueRow struct {
	Name          string
	Live, Delayed int
	Ready         int  // live, available now and not known to be running
	Running       *int // known for a queue with max_concurrency (its slots)
	// Failed, Cancelled, Expired and Completed are counted by an API
	// with counts by status; nil otherwise.
	Failed, Cancelled, Expired, Completed *int
	AtLeast                               bool
	Counted                               bool
	Paused                                bool
	// HasStats is true when the API gave the queue's stats: OldestAt (when
	// the oldest due pending task became due, nil when none; a time, not
	// an age, so that a page's digest holds still) and Recent.
	HasStats       bool
	OldestAt       *time.Time
	RecentFailed   int
	RecentExpired  int
	MaxConcurrency int
	Priority       int // the queue's default priority; 0: none (3)
	// RateLimit is the queue's max_per_second and burst ("10 a second,
	// bursts of 10"); "" for none.
	RateLimit string
	// RateShort is RateLimit for the queues table ("10/s, burst 10").
	RateShort    string
	Shards       int
	Target       string
	Defaults     string
	AutoDeclared bool
	UpdatedAt    time.Time
}

// newQueueRow makes the row of a queue, with its stats when the API gave
// them (their counts then replace the declaration's).
func newQueueRow(q queueJSON, st *statsJSON) queueRow {
	r := queueRow{
		Name: q.Name, MaxConcurrency: q.MaxConcurrency, Priority: q.Priority, Shards: q.Shards, Target: describeTarget(q.Target),
		Defaults: describeDefaults(q.Declaration), AutoDeclared: q.AutoDeclared, UpdatedAt: q.UpdatedAt, Paused: q.Paused,
		RateLimit: describeRate(q.MaxPerSecond, q.Burst), RateShort: shortRate(q.MaxPerSecond, q.Burst),
	}
	c := q.Counts
	if st != nil {
		c = &st.Counts
		r.HasStats, r.Paused, r.OldestAt = true, st.Paused, st.OldestPendingAt
		r.RecentFailed, r.RecentExpired = st.Recent.Failed, st.Recent.Expired
	}
	if c != nil {
		r.Counted, r.Live, r.Delayed, r.Running, r.AtLeast = true, c.Live, c.Delayed, c.Running, c.liveAtLeast()
		r.Failed, r.Cancelled, r.Expired, r.Completed = c.Failed, c.Cancelled, c.Expired, c.Completed
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
	Queues []queueRow
	// ByStatus is true when the API counts failed, cancelled and expired
	// tasks; Completed when it counts completed ones; Stats when it gave
	// each queue's stats.
	ByStatus, Completed, Stats bool
	Cursor                     string
	NextCursor                 string
}

// queuesPerPage is how many queues the queues page shows: the stats of
// each cost about 7 S3 requests, so a page of them is bounded (about 150
// requests), and its refreshes within statsReuse reuse them.
const queuesPerPage = 20

// queuesPage is /: one page of GET /queues, then each queue's
// GET /queues/{queue}/stats (counts by status and the oldest pending
// task) from an API that has them, else GET /queues with its counts.
func (c *Console) queuesPage(r *http.Request) (*view, error) {
	ctx := r.Context()
	cursor := r.URL.Query().Get("cursor")
	qs, next, err := c.listQueues(ctx, cursor, false, queuesPerPage)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(qs))
	for i, q := range qs {
		names[i] = q.Name
	}
	stats, err := c.statsOf(ctx, names)
	if err != nil {
		return nil, err
	}
	if stats == nil { // an API without stats: its counts come with the list
		if qs, next, err = c.listQueues(ctx, cursor, true, queuesPerPage); err != nil {
			return nil, err
		}
		stats = make([]*statsJSON, len(qs))
	}
	v := queuesView{Cursor: cursor, NextCursor: next}
	for i, q := range qs {
		row := newQueueRow(q, stats[i])
		v.ByStatus = v.ByStatus || row.Failed != nil
		v.Completed = v.Completed || row.Completed != nil
		v.Stats = v.Stats || row.HasStats
		v.Queues = append(v.Queues, row)
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
	Queue    queueRow
	QueueErr *pageErr
	Status   string
	Type     string
	Priority int // the priority filter; 0: any
	// PriorityParam is the filter as the page's links carry it.
	PriorityParam string
	Priorities    []int
	Statuses      []queue.Status
	Tasks         []taskRow
	Cursor        string
	NextCursor    string
	PageSize      int
	Err           *pageErr // the listing's error (a bad filter), shown by the form
	Back          string
	// Bulk lists the bulk operations that apply to the status shown, when
	// the API has them.
	Bulk []string
}

// tasksPage is /queues/{queue}: GET /queues/{queue} (counts) and one page
// of GET /queues/{queue}/tasks with the filters.
func (c *Console) tasksPage(r *http.Request) (*view, error) {
	name := r.PathValue("queue")
	q := r.URL.Query()
	v := tasksView{Status: q.Get("status"), Type: q.Get("type"), Cursor: q.Get("cursor"), Statuses: queue.Statuses,
		PageSize: c.opts.PageSize, Back: r.URL.RequestURI(), Priorities: []int{1, 2, 3, 4, 5}}
	if s := q.Get("priority"); s != "" {
		v.PriorityParam = s
		if n, err := strconv.Atoi(s); err == nil && n != 0 {
			v.Priority = n
		} else {
			v.Priority = -1 // refused by the API, which names the field (0 would list every priority)
		}
	}
	info, err := c.getQueue(r.Context(), name)
	if err != nil {
		pe := toPageErr(err)
		if pe.Code != "queue_not_found" {
			return nil, err
		}
		// An undeclared queue may still hold tasks (auto_declare off since).
		v.QueueErr = pe
		v.Queue = queueRow{Name: name}
	} else {
		st, err := c.stats(r.Context(), name)
		if err != nil && !errors.Is(err, errNoRoute) {
			return nil, err
		}
		v.Queue = newQueueRow(info, st)
	}
	res, err := c.api.List(r.Context(), client.ListRequest{Queue: name, Status: queue.Status(v.Status), TaskType: v.Type, Priority: v.Priority,
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
	if v.Err == nil {
		// The bulk operations came with the stats.
		v.Bulk = bulkFor(v.Status, v.Queue.HasStats)
	}
	status := http.StatusOK
	if v.Err != nil {
		status = v.Err.Status
	}
	return &view{template: "tasks", title: "Queue " + name, nav: "queues", data: v, refresh: v.Err == nil, status: status}, nil
}

// describeRate says what a queue's rate limit is: "10 tasks started a
// second, bursts of 10"; "" for none.
func describeRate(perSecond *float64, burst *int) string {
	if perSecond == nil {
		return ""
	}
	b := queue.DefaultBurst(*perSecond)
	if burst != nil {
		b = *burst
	}
	return strconv.FormatFloat(*perSecond, 'g', -1, 64) + " tasks started a second, bursts of " + strconv.Itoa(b)
}

// shortRate is describeRate for a table cell: "10/s, burst 10"; "" for
// none.
func shortRate(perSecond *float64, burst *int) string {
	if perSecond == nil {
		return ""
	}
	b := queue.DefaultBurst(*perSecond)
	if burst != nil {
		b = *burst
	}
	return strconv.FormatFloat(*perSecond, 'g', -1, 64) + "/s, burst " + strconv.Itoa(b)
}
