package schedule

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/s3q/s3q/shared/store"

	"github.com/s3q/s3q/shared/wire"
)

// HistoryRequest selects a page of a schedule's fires.
type HistoryRequest struct {
	// Since starts the page at this fire time (inclusive). Optional.
	Since *time.Time `json:"since,omitempty"`
	// Cursor is the NextCursor of the previous page.
	Cursor string `json:"cursor,omitempty"`
	// Limit is the most fires returned. Defaults to 100; at most 1000.
	Limit int `json:"limit,omitempty"`
}

type HistoryResult = wire.ScheduleHistory

// History returns schedule id's fires, oldest first: one LIST and one GET
// per fire. An unknown id returns ErrNotFound.
func (s *Scheduler) History(ctx context.Context, id string, req HistoryRequest) (HistoryResult, error) {
	id, err := s.locate(id)
	if err != nil {
		return HistoryResult{}, err
	}
	if _, _, err := s.loadDef(ctx, id); err != nil {
		return HistoryResult{}, err
	}
	limit := req.Limit
	if limit <= 0 {
		limit = 100
	}
	if limit > 1000 {
		limit = 1000
	}
	prefix := HistoryPrefix(id)
	after := ""
	switch {
	case req.Cursor != "":
		if !reHistoryCursor.MatchString(req.Cursor) {
			return HistoryResult{}, invalid("cursor", "is not a cursor from a previous page")
		}
		after = prefix + req.Cursor
	case req.Since != nil:
		// Just below the since time: keys at it ("t" and "t_trigger") follow.
		after = prefix + keyTime(req.Since.Add(-time.Microsecond)) + "~"
	}
	page, err := s.store.List(ctx, prefix, after, limit)
	if err != nil {
		return HistoryResult{}, fmt.Errorf("list history of schedule %s: %w", id, err)
	}
	fires := make([]*Fire, len(page.Items))
	errs := make([]error, len(page.Items))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i, it := range page.Items {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			obj, err := s.store.Get(ctx, it.Key)
			if errors.Is(err, store.ErrNotFound) {
				return
			}
			if err != nil {
				errs[i] = err
				return
			}
			var f Fire
			if err := json.Unmarshal(obj.Body, &f); err != nil {
				errs[i] = fmt.Errorf("decode %s: %w", it.Key, err)
				return
			}
			fires[i] = &f
		}()
	}
	wg.Wait()
	out := HistoryResult{Fires: []Fire{}}
	for i := range page.Items {
		if errs[i] != nil {
			return HistoryResult{}, errs[i]
		}
		if fires[i] != nil {
			out.Fires = append(out.Fires, *fires[i])
		}
	}
	if page.Truncated && len(page.Items) > 0 {
		out.NextCursor = strings.TrimPrefix(page.Items[len(page.Items)-1].Key, prefix)
	}
	return out, nil
}
