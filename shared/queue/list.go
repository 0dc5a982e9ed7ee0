package queue

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/s3q/s3q/shared/internal/clip"
	"github.com/s3q/s3q/shared/store"
)

// ListRequest filters and pages a listing of tasks.
type ListRequest struct {
	Status   Status `json:"status,omitempty"`    // only this status
	Queue    string `json:"queue,omitempty"`     // only this queue
	TaskType string `json:"task_type,omitempty"` // only this type
	Priority int    `json:"priority,omitempty"`  // only this priority (1-5); 0: any
	// Limit is the most tasks to return. Defaults to 100, at most 1000.
	Limit int `json:"limit,omitempty"`
	// Cursor continues a listing from a previous NextCursor.
	Cursor string `json:"cursor,omitempty"`
	// Now is the time of the listing: a pending task whose expires_at is
	// at or before Now is listed as expired (Task.AsOf), and, for repairs,
	// a status/ marker whose record is gone or in another status is
	// deleted once the store wrote it StaleMarkerGrace before Now.
	// Defaults to none: records as stored, no repair.
	Now time.Time `json:"-"`
	// At is the time a newest-first listing looks back from (see List).
	// Defaults to Now, else to the newest id a first LIST page shows.
	At time.Time `json:"-"`
}

// ListResult is one page of a listing.
type ListResult struct {
	Tasks []Task `json:"tasks"`
	// NextCursor continues the listing; empty when it is complete.
	NextCursor string `json:"next_cursor,omitempty"`
}

// MaxExamined is the most records (or index markers) one List call
// examines: one LIST page of at most this many keys, and a GET for each
// examined until Limit tasks match.
const MaxExamined = 200

// MaxQueuesPerList is the most queues a listing across queues (no Queue
// given, outside a view) visits per call.
const MaxQueuesPerList = 10

// List returns tasks matching the filters, at most MaxExamined examined
// per queue and call; a page with fewer matches than Limit and more to
// examine returns a NextCursor.
//
// A listing of one queue (a view, In, or Queue set) reads only the
// queue's folder, q/{queue}/, and its cursors name only what is there and
// that queue: another queue's cursor is a *ValidationError naming cursor.
//
// Pending tasks are listed in claim order, from the claim indexes
// (deadline/ earliest deadline first, then ready/ oldest due first, shard
// by shard): a LIST per index read and a GET per marker examined, until
// Limit match; a running task's marker (it keeps it) is skipped.
//
// Every other listing is newest first, by id (a UUIDv7: its creation
// time), so "the latest 20 completed tasks" is the first page of
// status=completed&limit=20:
//
// Failed (dead-lettered), expired and cancelled tasks come from the
// queue's status index: its LISTs (newestIn: one while the index holds at
// most 1,000 entries) and a GET per task returned (plus one per stale
// marker met), so status=failed&limit=1 costs one LIST and one GET
// however many tasks are stored. Markers are hints: each record is read
// and must still be in that status.
//
// Running, completed, archived or no status: the queue's records, from
// their RecordShards key ranges at once (newestIn in each: one LIST each
// while it holds at most 1,000 records, a few more in a bigger queue),
// merged newest first, then a GET per record examined, at most
// MaxExamined, until Limit match. In a queue whose latest tasks are
// mostly completed, the latest 20 completed cost 16 LISTs and about 20
// GETs.
//
// Outside a view and with no Queue, List walks the queues in name order,
// at most MaxQueuesPerList per call, each as above; its cursor is
// {queue}/{cursor in that queue}, so it always says where it is.
func (q *Queue) List(ctx context.Context, req ListRequest) (ListResult, error) {
	if req.Status != "" && !req.Status.Valid() {
		return ListResult{}, invalid("status", "%q is not one of pending, running, completed, failed, cancelled, expired, archived", clip.Input(string(req.Status)))
	}
	var err error
	if req.Queue, err = q.scoped("queue", req.Queue); err != nil {
		return ListResult{}, err
	}
	if req.Queue != "" {
		if err := ValidateQueueName(req.Queue); err != nil {
			return ListResult{}, err
		}
	}
	if req.TaskType != "" {
		if err := ValidateTaskType("task_type", req.TaskType); err != nil {
			return ListResult{}, err
		}
	}
	if err := validPriority("priority", req.Priority); err != nil {
		return ListResult{}, err
	}
	switch {
	case req.Limit == 0:
		req.Limit = 100
	case req.Limit < 0 || req.Limit > store.MaxListLimit:
		return ListResult{}, invalid("limit", "must be between 1 and %d", store.MaxListLimit)
	}
	if req.At.IsZero() {
		req.At = req.Now
	}
	if req.Queue == "" {
		return q.listAcross(ctx, req)
	}
	return q.listQueue(ctx, req)
}

// listQueue lists the tasks of req.Queue (set and valid); its cursors
// are queueCursor's.
func (q *Queue) listQueue(ctx context.Context, req ListRequest) (ListResult, error) {
	if req.Cursor != "" {
		pos, err := cursorPosition(req.Queue, req.Cursor)
		if err != nil {
			return ListResult{}, err
		}
		req.Cursor = pos
	}
	var res ListResult
	var err error
	switch {
	case indexedStatus(req.Status):
		res, err = q.listIndexed(ctx, req)
	case req.Status == StatusPending:
		res, err = q.listPending(ctx, req)
	default:
		res, err = q.listRecords(ctx, req)
	}
	res.NextCursor = queueCursor(req.Queue, res.NextCursor)
	return res, err
}

// listRecords lists the records of req.Queue newest first; the cursor is
// an id.
func (q *Queue) listRecords(ctx context.Context, req ListRequest) (ListResult, error) {
	if req.Cursor != "" && validID(req.Cursor) != nil {
		return ListResult{}, invalid("cursor", "is not a cursor from a previous listing of queue %s", req.Queue)
	}
	prefixes := make([]string, RecordShards)
	for i := range prefixes {
		prefixes[i] = tasksPrefix(req.Queue) + shardName(i) + "/"
	}
	cands, more, err := q.newestFirst(ctx, prefixes, func(_, key string) string { return taskIDFromKey(req.Queue, key) }, req.Cursor, MaxExamined, req.At)
	if err != nil {
		return ListResult{}, fmt.Errorf("list tasks of %s: %w", req.Queue, err)
	}
	return q.collect(ctx, req, cands, more, nil)
}

// listAcross walks the queues in name order from the cursor's,
// {queue}/{cursor in it} ("{queue}/" for its start).
func (q *Queue) listAcross(ctx context.Context, req ListRequest) (ListResult, error) {
	name, inner := "", ""
	if req.Cursor != "" {
		var ok bool
		name, inner, ok = strings.Cut(req.Cursor, "/")
		if !ok || ValidateQueueName(name) != nil {
			return ListResult{}, invalid("cursor", "is not a cursor from a previous listing")
		}
	}
	out := ListResult{Tasks: []Task{}}
	after := ""
	if name != "" {
		after = QueuePrefix(name) + "~"
	}
	dirs, truncated, err := store.ListDirs(ctx, q.store, prefixQueues, after, MaxQueuesPerList)
	if err != nil {
		return ListResult{}, fmt.Errorf("list queues: %w", err)
	}
	var names []string
	if name != "" && inner != "~" { // "~": that queue is done
		names = append(names, name)
	}
	for _, d := range dirs {
		if n := QueueOfDir(d); n != "" {
			names = append(names, n)
		}
	}
	for i, n := range names {
		if i == MaxQueuesPerList {
			out.NextCursor = n + "/"
			return out, nil
		}
		sub := req
		sub.Queue, sub.Cursor, sub.Limit = n, "", req.Limit-len(out.Tasks)
		if i == 0 && n == name {
			sub.Cursor = inner
		}
		res, err := q.listQueue(ctx, sub)
		if err != nil {
			return ListResult{}, err
		}
		out.Tasks = append(out.Tasks, res.Tasks...)
		if res.NextCursor != "" {
			out.NextCursor = n + "/" + res.NextCursor
			return out, nil
		}
		if len(out.Tasks) == req.Limit {
			if i+1 < len(names) {
				out.NextCursor = names[i+1] + "/"
			} else if truncated {
				out.NextCursor = n + "/~"
			}
			return out, nil
		}
	}
	if truncated && len(names) > 0 {
		out.NextCursor = names[len(names)-1] + "/~"
	}
	return out, nil
}

// listCandidate is one record a listing may return: its id, the cursor
// that continues after it, and the key that named it. A candidate named
// by an index marker (marker) matches only while its record names that
// marker.
type listCandidate struct {
	id, cursor string
	info       store.Info
	marker     bool
}

// collect reads candidates in order until Limit match, as many at once as
// are still wanted (doubling after misses, at most 16), and pages: more
// is true when the LIST had more keys after them. A candidate that does
// not match is passed to miss, when set, with its record (nil when gone).
func (q *Queue) collect(ctx context.Context, req ListRequest, cands []listCandidate, more bool, miss func(c listCandidate, t *Task)) (ListResult, error) {
	res := ListResult{Tasks: []Task{}}
	chunk := 0
	for start := 0; start < len(cands); start += chunk {
		chunk = min(max(req.Limit-len(res.Tasks), 2*chunk, 1), 16)
		part := cands[start:min(start+chunk, len(cands))]
		ids := make([]string, len(part))
		for i, c := range part {
			ids[i] = c.id
		}
		tasks, err := q.loadMany(ctx, req.Queue, ids)
		if err != nil {
			return ListResult{}, err
		}
		for i, t := range tasks {
			if t != nil && !req.Now.IsZero() {
				p := t.AsOf(req.Now) // pending past its deadline reads expired (present.go)
				t = &p
			}
			if t == nil || (req.Status != "" && t.Status != req.Status) || (req.Queue != "" && t.Queue != req.Queue) ||
				(part[i].marker && t.IndexKey != part[i].info.Key) {
				if miss != nil {
					miss(part[i], t)
				}
				continue
			}
			if req.TaskType != "" && t.TaskType != req.TaskType {
				continue
			}
			if req.Priority != 0 && t.priority() != req.Priority {
				continue
			}
			res.Tasks = append(res.Tasks, *t)
			if len(res.Tasks) == req.Limit {
				if start+i < len(cands)-1 || more {
					res.NextCursor = part[i].cursor
				}
				return res, nil
			}
		}
	}
	if more && len(cands) > 0 {
		res.NextCursor = cands[len(cands)-1].cursor
	}
	return res, nil
}

// listIndexed lists a rare status of one queue from its status markers,
// newest first, repairing stale ones (see ListRequest.Now); the cursor
// is an id.
func (q *Queue) listIndexed(ctx context.Context, req ListRequest) (ListResult, error) {
	prefix := statusPrefix(req.Status, req.Queue)
	if req.Cursor != "" && validID(req.Cursor) != nil {
		return ListResult{}, invalid("cursor", "is not a cursor from a previous listing of queue %s", req.Queue)
	}
	idOf := func(p, key string) string {
		if id := strings.TrimPrefix(key, p); validID(id) == nil {
			return id
		}
		return ""
	}
	cands, more, err := q.newestFirst(ctx, []string{prefix}, idOf, req.Cursor, MaxExamined, req.At)
	if err != nil {
		return ListResult{}, err
	}
	var stale []string
	res, err := q.collect(ctx, req, cands, more, func(c listCandidate, _ *Task) {
		if !req.Now.IsZero() && c.info.LastModified.Before(req.Now.Add(-q.opts.StaleMarkerGrace)) {
			stale = append(stale, c.info.Key)
		}
	})
	for _, key := range stale {
		_ = q.store.Delete(ctx, key) // best effort: the next listing tries again
	}
	return res, err
}

// listPending lists the pending tasks of one queue from its claim-index
// markers, index/deadline/ then index/ready/, every shard, with LISTs of
// their parent (one while they are sparse); the cursor is the last marker
// examined, below the queue's folder (index/{index}/{shard}/{name}).
func (q *Queue) listPending(ctx context.Context, req ListRequest) (ListResult, error) {
	prefix := indexesPrefix(req.Queue)
	after := ""
	if req.Cursor != "" {
		key := QueuePrefix(req.Queue) + req.Cursor
		if m, ok := parseMarker(key); !ok || m.queue != req.Queue || !strings.HasPrefix(key, prefix) {
			return ListResult{}, invalid("cursor", "is not a cursor from a previous listing of queue %s", req.Queue)
		}
		after = key
	}
	page, err := q.store.List(ctx, prefix, after, MaxExamined)
	if err != nil {
		return ListResult{}, fmt.Errorf("list %s: %w", prefix, err)
	}
	var cands []listCandidate
	for _, it := range page.Items {
		if m, ok := parseMarker(it.Key); ok {
			cands = append(cands, listCandidate{id: m.id, cursor: strings.TrimPrefix(it.Key, QueuePrefix(req.Queue)), info: it, marker: true})
		}
	}
	return q.collect(ctx, req, cands, page.Truncated, nil)
}

// loadMany reads records in parallel; a record deleted meanwhile is nil.
func (q *Queue) loadMany(ctx context.Context, queue string, ids []string) ([]*Task, error) {
	out := make([]*Task, len(ids))
	errs := make([]error, len(ids))
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			t, _, err := q.load(ctx, queue, id)
			if err == nil {
				out[i] = &t
			} else if !errors.Is(err, ErrNotFound) {
				errs[i] = err
			}
		}()
	}
	wg.Wait()
	return out, errors.Join(errs...)
}
