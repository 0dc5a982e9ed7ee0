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
	// Limit is the most tasks to return. Defaults to 100, at most 1000.
	Limit int `json:"limit,omitempty"`
	// Cursor continues a listing from a previous NextCursor.
	Cursor string `json:"cursor,omitempty"`
	// Now is the time of the listing, for repairs: a status/ marker whose
	// record is gone or in another status is deleted once the store wrote
	// it StaleMarkerGrace before Now. Defaults to none: no repair.
	Now time.Time `json:"-"`
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

// List returns tasks matching the filters, at most MaxExamined examined
// per call; a page with fewer matches than Limit and more to examine
// returns a NextCursor.
//
// Failed (dead-lettered), expired and cancelled tasks are listed from
// their status/ index, in queue and then id order: a LIST of markers and
// a GET per task returned (plus one per stale marker met), so
// status=failed&limit=1 costs one LIST and one GET however many tasks
// are stored. Markers are hints: each record is read and must still be in
// that status.
//
// Pending tasks of one queue are listed from the claim indexes, in claim
// order (deadline/ earliest deadline first, then ready/ oldest first, shard
// by shard): a LIST per prefix read and a GET per marker examined, until
// Limit match; a running task's marker (it keeps it) is skipped.
//
// Any other listing (running, completed, archived, pending across queues,
// or no status) scans the records, oldest first (ids are time-ordered):
// one LIST of tasks/ and up to MaxExamined GETs, until Limit match. It is
// an operator's tool, not a claim path.
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
	switch {
	case req.Limit == 0:
		req.Limit = 100
	case req.Limit < 0 || req.Limit > store.MaxListLimit:
		return ListResult{}, invalid("limit", "must be between 1 and %d", store.MaxListLimit)
	}
	if indexedStatus(req.Status) {
		return q.listIndexed(ctx, req)
	}
	if req.Status == StatusPending && req.Queue != "" {
		return q.listPending(ctx, req)
	}
	startAfter := ""
	if req.Cursor != "" {
		if validID(req.Cursor) != nil {
			return ListResult{}, invalid("cursor", "is not a cursor from a previous listing")
		}
		startAfter = TaskKey(req.Cursor)
	}
	page, err := q.store.List(ctx, prefixTasks, startAfter, MaxExamined)
	if err != nil {
		return ListResult{}, fmt.Errorf("list tasks: %w", err)
	}
	var cands []listCandidate
	for _, it := range page.Items {
		if id := taskIDFromKey(it.Key); id != "" {
			cands = append(cands, listCandidate{id: id, cursor: id, info: it})
		}
	}
	return q.collect(ctx, req, cands, page.Truncated, nil)
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
		tasks, err := q.loadMany(ctx, ids)
		if err != nil {
			return ListResult{}, err
		}
		for i, t := range tasks {
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

// listIndexed lists a rare status from its status/ markers, repairing
// stale ones (see ListRequest.Now).
func (q *Queue) listIndexed(ctx context.Context, req ListRequest) (ListResult, error) {
	prefix := statusPrefix(req.Status, req.Queue)
	startAfter := ""
	if req.Cursor != "" {
		if !validStatusCursor(req.Cursor, req.Queue == "") {
			return ListResult{}, invalid("cursor", "is not a cursor from a previous listing")
		}
		startAfter = prefix + req.Cursor
	}
	page, err := q.store.List(ctx, prefix, startAfter, MaxExamined)
	if err != nil {
		return ListResult{}, fmt.Errorf("list %s: %w", prefix, err)
	}
	var cands []listCandidate
	for _, it := range page.Items {
		rest := strings.TrimPrefix(it.Key, prefix)
		if validStatusCursor(rest, req.Queue == "") {
			cands = append(cands, listCandidate{id: rest[strings.LastIndexByte(rest, '/')+1:], cursor: rest, info: it})
		}
	}
	var stale []string
	res, err := q.collect(ctx, req, cands, page.Truncated, func(c listCandidate, _ *Task) {
		if !req.Now.IsZero() && c.info.LastModified.Before(req.Now.Add(-q.opts.StaleMarkerGrace)) {
			stale = append(stale, c.info.Key)
		}
	})
	for _, key := range stale {
		_ = q.store.Delete(ctx, key) // best effort: the next listing tries again
	}
	return res, err
}

// listPending lists the pending tasks of one queue from its deadline/ and
// ready/ markers; the cursor is the last marker key examined.
func (q *Queue) listPending(ctx context.Context, req ListRequest) (ListResult, error) {
	var prefixes []string
	for _, p := range []func(string, int) string{deadlinePrefix, readyPrefix} {
		for shard := 0; shard < q.readShards(req.Queue); shard++ {
			prefixes = append(prefixes, p(req.Queue, shard))
		}
	}
	first, after := 0, ""
	if req.Cursor != "" {
		first = -1
		for i, p := range prefixes {
			if strings.HasPrefix(req.Cursor, p) {
				first, after = i, req.Cursor
			}
		}
		if _, ok := parseMarker(req.Cursor); !ok || first < 0 {
			return ListResult{}, invalid("cursor", "is not a cursor from a previous listing of queue %s", req.Queue)
		}
	}
	var cands []listCandidate
	more := false
	for i := first; i < len(prefixes) && !more; i++ {
		page, err := q.store.List(ctx, prefixes[i], after, MaxExamined-len(cands))
		if err != nil {
			return ListResult{}, fmt.Errorf("list %s: %w", prefixes[i], err)
		}
		for _, it := range page.Items {
			if m, ok := parseMarker(it.Key); ok {
				cands = append(cands, listCandidate{id: m.id, cursor: it.Key, info: it, marker: true})
			}
		}
		after = ""
		more = page.Truncated || (len(cands) >= MaxExamined && i < len(prefixes)-1)
	}
	return q.collect(ctx, req, cands, more, nil)
}

// validStatusCursor checks a status/ marker's name below its prefix:
// {id}, or {queue}/{id} across queues.
func validStatusCursor(s string, withQueue bool) bool {
	if !withQueue {
		return validID(s) == nil
	}
	name, id, ok := strings.Cut(s, "/")
	return ok && ValidateQueueName(name) == nil && validID(id) == nil
}

// loadMany reads records in parallel; a record deleted meanwhile is nil.
func (q *Queue) loadMany(ctx context.Context, ids []string) ([]*Task, error) {
	out := make([]*Task, len(ids))
	errs := make([]error, len(ids))
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			t, _, err := q.load(ctx, id)
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
