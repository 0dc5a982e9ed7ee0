package queue

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

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
}

// ListResult is one page of a listing.
type ListResult struct {
	Tasks []Task `json:"tasks"`
	// NextCursor continues the listing; empty when it is complete.
	NextCursor string `json:"next_cursor,omitempty"`
}

// List returns tasks matching the filters, oldest first (ids are
// time-ordered). It reads the records themselves, one LIST page of
// tasks/ and one GET per task, so it costs O(tasks examined): it is an
// operator's tool, not a claim path. One call examines at most one page
// (1000 records); a page with fewer matches than Limit but more tasks
// behind it returns a NextCursor.
func (q *Queue) List(ctx context.Context, req ListRequest) (ListResult, error) {
	if req.Status != "" && !req.Status.Valid() {
		return ListResult{}, invalid("status", "%q is not one of pending, running, completed, failed, cancelled, expired, archived", clip(string(req.Status)))
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
	startAfter := ""
	if req.Cursor != "" {
		if validID(req.Cursor) != nil {
			return ListResult{}, invalid("cursor", "is not a cursor from a previous listing")
		}
		startAfter = TaskKey(req.Cursor)
	}

	page, err := q.store.List(ctx, prefixTasks, startAfter, 0)
	if err != nil {
		return ListResult{}, fmt.Errorf("list tasks: %w", err)
	}
	ids := make([]string, 0, len(page.Items))
	for _, it := range page.Items {
		if id := taskIDFromKey(it.Key); id != "" {
			ids = append(ids, id)
		}
	}
	tasks, err := q.loadMany(ctx, ids)
	if err != nil {
		return ListResult{}, err
	}
	res := ListResult{Tasks: []Task{}}
	for i, t := range tasks {
		if t == nil || (req.Status != "" && t.Status != req.Status) ||
			(req.Queue != "" && t.Queue != req.Queue) || (req.TaskType != "" && t.TaskType != req.TaskType) {
			continue
		}
		res.Tasks = append(res.Tasks, *t)
		if len(res.Tasks) == req.Limit {
			if i < len(tasks)-1 || page.Truncated {
				res.NextCursor = t.ID
			}
			return res, nil
		}
	}
	if page.Truncated && len(ids) > 0 {
		res.NextCursor = ids[len(ids)-1]
	}
	return res, nil
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

// HistoryEntry is one stored version of a task record.
type HistoryEntry struct {
	VersionID  string    `json:"version_id"`
	ModifiedAt time.Time `json:"modified_at"` // when the store wrote it
	Task       Task      `json:"task"`
}

// History returns every version of a task's record, oldest first, from
// the bucket's object versions: one LIST of versions and one GET each.
// Without bucket versioning it returns the current version only.
func (q *Queue) History(ctx context.Context, id string) ([]HistoryEntry, error) {
	if err := ValidateID(id); err != nil {
		return nil, err
	}
	versions, err := q.store.Versions(ctx, TaskKey(id))
	if err != nil {
		return nil, fmt.Errorf("list versions of task %s: %w", id, err)
	}
	var out []HistoryEntry
	for i := len(versions) - 1; i >= 0; i-- {
		v := versions[i]
		if v.DeleteMarker {
			continue
		}
		obj, err := q.store.GetVersion(ctx, v.Key, v.VersionID)
		if err != nil {
			return nil, fmt.Errorf("get version %s of task %s: %w", v.VersionID, id, err)
		}
		var t Task
		if err := decodeTask(obj.Body, &t); err != nil {
			return nil, fmt.Errorf("decode version %s of task %s: %w", v.VersionID, id, err)
		}
		if q.scope != "" && t.Queue != q.scope { // a task never changes queue
			return nil, fmt.Errorf("task %s in queue %s: %w", id, q.scope, ErrNotFound)
		}
		out = append(out, HistoryEntry{VersionID: v.VersionID, ModifiedAt: v.LastModified, Task: t})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("task %s: %w", id, ErrNotFound)
	}
	return out, nil
}
