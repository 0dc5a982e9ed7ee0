package queue

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/s3q/s3q/shared/store"
)

// HistoryEntry is one stored version of a task record.
type HistoryEntry struct {
	VersionID  string    `json:"version_id"`
	ModifiedAt time.Time `json:"modified_at"` // when the store wrote it
	Task       Task      `json:"task"`
}

// HistoryRequest pages the history of a task.
type HistoryRequest struct {
	// Limit is the most versions to return. Defaults to 100, at most 1000.
	Limit int `json:"limit,omitempty"`
	// Cursor continues from a previous NextCursor.
	Cursor string `json:"cursor,omitempty"`
}

// HistoryResult is one page of a task's history, oldest first.
type HistoryResult struct {
	Versions []HistoryEntry `json:"versions"`
	// NextCursor continues the history; empty when it is complete.
	NextCursor string `json:"next_cursor,omitempty"`
}

// DefaultHistoryLimit is the page size of a history when none is asked.
const DefaultHistoryLimit = 100

// HistoryPage returns one page of the versions of a task's record, oldest
// first, from the bucket's object versions: one LIST of versions (per
// 1,000 stored) and one GET per version returned, at most Limit. The
// cursor is the version id of the last version returned; one the store no
// longer holds (its lifecycle expired it) is invalid input. Without
// bucket versioning the history is the current version only.
func (q *Queue) HistoryPage(ctx context.Context, id string, req HistoryRequest) (HistoryResult, error) {
	queue, id, err := q.locate(id)
	if err != nil {
		return HistoryResult{}, err
	}
	switch {
	case req.Limit == 0:
		req.Limit = DefaultHistoryLimit
	case req.Limit < 0 || req.Limit > store.MaxListLimit:
		return HistoryResult{}, invalid("limit", "must be between 1 and %d", store.MaxListLimit)
	}
	if len(req.Cursor) > 1024 || strings.ContainsFunc(req.Cursor, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return HistoryResult{}, invalid("cursor", "is not a cursor from a previous history")
	}
	all, err := q.store.Versions(ctx, TaskKey(queue, id))
	if err != nil {
		return HistoryResult{}, fmt.Errorf("list versions of task %s: %w", id, err)
	}
	var versions []store.Version // oldest first, no delete markers
	for i := len(all) - 1; i >= 0; i-- {
		if !all[i].DeleteMarker {
			versions = append(versions, all[i])
		}
	}
	if len(versions) == 0 {
		return HistoryResult{}, fmt.Errorf("task %s: %w", id, ErrNotFound)
	}
	start := 0
	if req.Cursor != "" {
		start = -1
		for i, v := range versions {
			if v.VersionID == req.Cursor {
				start = i + 1
			}
		}
		if start < 0 {
			return HistoryResult{}, invalid("cursor", "is not a version of task %s (it may have expired): start again without a cursor", id)
		}
	}
	res := HistoryResult{Versions: []HistoryEntry{}}
	end := min(start+req.Limit, len(versions))
	for _, v := range versions[start:end] {
		e, err := q.version(ctx, id, v)
		if err != nil {
			return HistoryResult{}, err
		}
		res.Versions = append(res.Versions, e)
	}
	if end < len(versions) {
		res.NextCursor = versions[end-1].VersionID
	}
	return res, nil
}

// History returns every version of a task's record, oldest first: the
// pages of HistoryPage, 1,000 at a time. Callers that answer a request
// use HistoryPage.
func (q *Queue) History(ctx context.Context, id string) ([]HistoryEntry, error) {
	var out []HistoryEntry
	req := HistoryRequest{Limit: store.MaxListLimit}
	for {
		res, err := q.HistoryPage(ctx, id, req)
		if err != nil {
			return nil, err
		}
		out = append(out, res.Versions...)
		if res.NextCursor == "" {
			return out, nil
		}
		req.Cursor = res.NextCursor
	}
}

// version reads and decodes one version of a task's record.
func (q *Queue) version(ctx context.Context, id string, v store.Version) (HistoryEntry, error) {
	obj, err := q.store.GetVersion(ctx, v.Key, v.VersionID)
	if err != nil {
		return HistoryEntry{}, fmt.Errorf("get version %s of task %s: %w", v.VersionID, id, err)
	}
	var t Task
	if err := decodeTask(obj.Body, &t); err != nil {
		return HistoryEntry{}, fmt.Errorf("decode version %s of task %s: %w", v.VersionID, id, err)
	}
	return HistoryEntry{VersionID: v.VersionID, ModifiedAt: v.LastModified, Task: t}, nil
}
