package queue

import (
	"context"
	"errors"
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
	// ID is the task's id or its queue/id reference.
	ID string `json:"-"`
	// Limit is the most versions to return. Defaults to 100, at most 1000.
	Limit int `json:"limit,omitempty"`
	// Cursor continues from a previous NextCursor.
	Cursor string `json:"cursor,omitempty"`
}

// HistoryResult is one page of a task's history, newest first.
type HistoryResult struct {
	Versions []HistoryEntry `json:"versions"`
	// NextCursor continues the history (older versions); empty when it
	// is complete.
	NextCursor string `json:"next_cursor,omitempty"`
}

// DefaultHistoryLimit is the page size of a history when none is asked.
const DefaultHistoryLimit = 100

// History returns one page of the versions of a task's record, newest
// first, paged at the store: one LIST of at most Limit versions (store.
// Store.Versions) and one GET per version returned, whatever the number
// of versions stored, so a task with a long history costs no more per
// call. The history begins at the task's own creation: a task purged and
// submitted again with its id shows none of the purged task's versions
// (a purged task's own history ends with its tombstone). The cursor is
// the version id of the last version returned; one
// the store does not hold for this task (its lifecycle expired it) is
// invalid input (one GET checks it). Without bucket versioning the
// history is the current version only.
func (q *Queue) History(ctx context.Context, req HistoryRequest) (HistoryResult, error) {
	queue, id, err := q.locate(req.ID)
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
	key := TaskKey(queue, id)
	if req.Cursor != "" {
		// The version must be this task's: a server may refuse a marker
		// it does not know, or list from the start, instead of saying so.
		if _, err := q.version(ctx, id, store.Version{Key: key, VersionID: req.Cursor}); err != nil {
			if errors.Is(err, store.ErrRetryable) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				return HistoryResult{}, err
			}
			if errors.Is(err, ErrNotFound) && !errors.Is(err, store.ErrNotFound) {
				return HistoryResult{}, err // a task of another queue
			}
			return HistoryResult{}, invalid("cursor", "is not a version of task %s (it may have expired): start again without a cursor", id)
		}
	}
	page, err := q.store.Versions(ctx, key, req.Cursor, req.Limit)
	if err != nil {
		return HistoryResult{}, fmt.Errorf("list versions of task %s: %w", id, err)
	}
	// A task's history begins at its own creation. Newest first, a
	// delete marker (a purge deleted the record) or a tombstone (a purge's
	// commit) is where the task shown began, and what is older is a purged
	// task's that had this id: never shown under the task that has it now.
	// The one exception is the first page of a purged task itself (its
	// record gone, or left a tombstone): its leading delete markers are
	// passed over and its tombstone is its last version.
	lead := req.Cursor == "" // nothing returned yet for this task
	for extra := 0; lead && extra < 3 && page.Next != "" && onlyDeleteMarkers(page.Versions); extra++ {
		if page, err = q.store.Versions(ctx, key, page.Next, req.Limit); err != nil {
			return HistoryResult{}, fmt.Errorf("list versions of task %s: %w", id, err)
		}
	}
	res := HistoryResult{Versions: []HistoryEntry{}, NextCursor: page.Next}
	for _, v := range page.Versions {
		if v.DeleteMarker {
			if lead && len(res.Versions) == 0 {
				continue // the purged task's own history follows
			}
			res.NextCursor = ""
			break
		}
		e, err := q.version(ctx, id, v)
		if err != nil {
			return HistoryResult{}, err
		}
		if e.Task.PurgedAt != nil && !(lead && len(res.Versions) == 0) {
			res.NextCursor = ""
			break
		}
		res.Versions = append(res.Versions, e)
	}
	if len(res.Versions) == 0 && req.Cursor == "" && page.Next == "" {
		return HistoryResult{}, fmt.Errorf("task %s: %w", id, ErrNotFound)
	}
	return res, nil
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

// onlyDeleteMarkers reports whether vs holds delete markers only.
func onlyDeleteMarkers(vs []store.Version) bool {
	for _, v := range vs {
		if !v.DeleteMarker {
			return false
		}
	}
	return true
}
