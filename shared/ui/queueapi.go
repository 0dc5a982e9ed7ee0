package ui

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/s3q/s3q/shared/client"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
)

// The queue routes, read loosely: an API with the queue operations
// (GET /queues/{queue}/stats, POST /queues/{queue}/pause and /resume,
// POST /queues/{queue}/bulk/{op}) and counts by status gets them shown;
// an older one, without them, gets the rest.

// queueJSON is a declared queue as GET /queues and GET /queues/{queue}
// answer it.
type queueJSON struct {
	queues.Declaration
	Paused bool        `json:"paused"`
	Counts *countsJSON `json:"counts,omitempty"`
}

// countsJSON are a queue's counts; the pointers are absent from an API
// that does not count them.
type countsJSON struct {
	Live      int  `json:"live"`
	Delayed   int  `json:"delayed"`
	Running   *int `json:"running"`
	Failed    *int `json:"failed"`
	Cancelled *int `json:"cancelled"`
	Expired   *int `json:"expired"`
	Completed *int `json:"completed"`
	AtLeast   bool `json:"at_least"`
	// Capped names the counts that are lower bounds (an API without it
	// says only AtLeast: then any may be).
	Capped []string `json:"capped"`
}

// liveAtLeast reports whether the live count is a lower bound.
func (c *countsJSON) liveAtLeast() bool {
	if c.Capped == nil {
		return c.AtLeast
	}
	return slices.Contains(c.Capped, "live")
}

// statsJSON is the answer of GET /queues/{queue}/stats.
type statsJSON struct {
	Paused          bool       `json:"paused"`
	Counts          countsJSON `json:"counts"`
	OldestPendingAt *time.Time `json:"oldest_pending_at"`
	Recent          struct {
		WindowSeconds int64 `json:"window_seconds"`
		Failed        int   `json:"failed"`
		Cancelled     int   `json:"cancelled"`
		Expired       int   `json:"expired"`
	} `json:"recent"`
}

// unsupported reports whether err says the API has no such route: a 404
// not_found from the API itself, or API Gateway's own 404 for a route it
// does not have ({"message":"Not Found"}). An unknown queue is
// queue_not_found.
func unsupported(err error) bool {
	var e *client.Error
	return errors.As(err, &e) && e.Status == http.StatusNotFound && (e.Code == "not_found" || e.Code == http.StatusText(http.StatusNotFound))
}

// listQueues is one page of GET /queues, at most limit queues.
func (c *Console) listQueues(ctx context.Context, cursor string, counts bool, limit int) ([]queueJSON, string, error) {
	q := url.Values{"limit": {strconv.Itoa(limit)}}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	if !counts {
		q.Set("counts", "false")
	}
	var res struct {
		Queues     []queueJSON `json:"queues"`
		NextCursor string      `json:"next_cursor"`
	}
	_, err := c.api.Call(ctx, http.MethodGet, "/queues", q, nil, &res)
	return res.Queues, res.NextCursor, err
}

// getQueue is GET /queues/{queue}.
func (c *Console) getQueue(ctx context.Context, name string) (queueJSON, error) {
	var res struct {
		Queue queueJSON `json:"queue"`
	}
	_, err := c.api.Call(ctx, http.MethodGet, "/queues/"+url.PathEscape(name), nil, nil, &res)
	return res.Queue, err
}

// errNoRoute is what a call of a route the API lacks returns.
var errNoRoute = errors.New("ui: the API has no such route")

// stats is GET /queues/{queue}/stats; errNoRoute from an API without it.
func (c *Console) stats(ctx context.Context, name string) (*statsJSON, error) {
	var res struct {
		Stats statsJSON `json:"stats"`
	}
	_, err := c.api.Call(ctx, http.MethodGet, "/queues/"+url.PathEscape(name)+"/stats", nil, nil, &res)
	if unsupported(err) {
		return nil, errNoRoute
	}
	if err != nil {
		return nil, err
	}
	return &res.Stats, nil
}

// statsOf reads the stats of many queues, 8 at a time. It returns nil,
// nil from an API without stats; a queue deleted meanwhile has none.
func (c *Console) statsOf(ctx context.Context, names []string) ([]*statsJSON, error) {
	out := make([]*statsJSON, len(names))
	errs := make([]error, len(names))
	get := func(i int) {
		if st := c.recent.get(names[i], time.Now()); st != nil {
			out[i] = st // read within statsReuse: reuse it, at no cost
			return
		}
		out[i], errs[i] = c.stats(ctx, names[i])
		if errs[i] == nil {
			c.recent.put(names[i], out[i], time.Now())
		}
		if errors.Is(errs[i], queue.ErrQueueNotFound) || errors.Is(errs[i], errNoRoute) && i > 0 {
			errs[i] = nil
		}
	}
	if len(names) == 0 {
		return out, nil
	}
	// The first answer says whether the API has stats at all.
	if get(0); errors.Is(errs[0], errNoRoute) {
		return nil, nil
	}
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i := 1; i < len(names); i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			get(i)
		}()
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// bulkJSON is the answer of POST /queues/{queue}/bulk/{op}.
type bulkJSON struct {
	Matched int      `json:"matched"`
	Changed int      `json:"changed"`
	TaskIDs []string `json:"task_ids"`
	Skipped []struct {
		ID     string `json:"id"`
		Reason string `json:"reason"`
	} `json:"skipped"`
	NextCursor string `json:"next_cursor"`
}

// bulk is POST /queues/{queue}/bulk/{op}: op on up to limit (at most
// 100) tasks of a queue in status (of type taskType when set), from
// cursor.
func (c *Console) bulk(ctx context.Context, name, op, status, taskType, cursor string, limit int, dryRun bool) (bulkJSON, error) {
	body := map[string]any{"status": status, "limit": min(max(limit, 1), maxSelected), "dry_run": dryRun}
	if taskType != "" {
		body["task_type"] = taskType
	}
	if cursor != "" {
		body["cursor"] = cursor
	}
	var res bulkJSON
	_, err := c.api.Call(ctx, http.MethodPost, "/queues/"+url.PathEscape(name)+"/bulk/"+op, nil, body, &res)
	return res, err
}

// statsReuse is how long the queues page reuses a queue's stats: its
// refreshes within that time cost one GET /queues, not the stats of every
// queue shown again.
const statsReuse = 30 * time.Second

// maxRecentStats bounds the stats kept for reuse.
const maxRecentStats = 1000

// recentStats are the stats the console read lately, by queue.
type recentStats struct {
	mu sync.Mutex
	m  map[string]recentStat
}

type recentStat struct {
	st *statsJSON
	at time.Time
}

func (r *recentStats) get(name string, now time.Time) *statsJSON {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e, ok := r.m[name]; ok && now.Sub(e.at) < statsReuse {
		return e.st
	}
	return nil
}

func (r *recentStats) put(name string, st *statsJSON, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil || len(r.m) >= maxRecentStats {
		r.m = map[string]recentStat{} // start again rather than grow
	}
	r.m[name] = recentStat{st, now}
}

// clear drops every stat kept: an action changed them.
func (r *recentStats) clear() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.m = nil
}
