package schedule

import (
	"context"
	"errors"
	"github.com/s3q/s3q/shared/internal/clip"
	"github.com/s3q/s3q/shared/queue"
	"sync"
	"time"

	"github.com/s3q/s3q/shared/wire"
)

// Get returns schedule id with its run state and next fire times, as of
// now. An unknown id returns ErrNotFound.
func (s *Scheduler) Get(ctx context.Context, id string, now time.Time) (Schedule, error) {
	now = norm(now)
	id, err := s.locate(id)
	if err != nil {
		return Schedule{}, err
	}
	def, _, err := s.loadDef(ctx, id)
	if err != nil {
		return Schedule{}, err
	}
	st, _, err := s.loadState(ctx, id)
	if err != nil {
		return Schedule{}, err
	}
	return s.view(&def, st, now)
}

// ListRequest selects a page of schedules.
type ListRequest struct {
	// Cursor is the NextCursor of the previous page; empty for the first.
	Cursor string `json:"cursor,omitempty"`
	// Limit is the most schedules returned. Defaults to 100; at most 1000.
	Limit int `json:"limit,omitempty"`
	// Queue is the queue whose schedules are listed (its folder only);
	// a page may then hold fewer than Limit, with a NextCursor.
	Queue string `json:"queue,omitempty"`
}

type ListResult = wire.ScheduleList

// List returns a page of schedules. Each costs two GETs (definition and
// state). The store lists keys without a delimiter, so the keys of each
// schedule's state and history are skipped over: one LIST jumps past a
// schedule's subtree, which costs about one LIST per schedule whose history
// fills a page.
func (s *Scheduler) List(ctx context.Context, req ListRequest, now time.Time) (ListResult, error) {
	now = norm(now)
	limit := req.Limit
	if limit <= 0 {
		limit = 100
	}
	if limit > 1000 {
		limit = 1000
	}
	qn := req.Queue
	if qn == "" {
		qn = s.scope
	}
	if qn == "" {
		qn = queue.DefaultQueue
	}
	if s.scope != "" && qn != s.scope {
		return ListResult{}, invalid("queue", "is %q, but the request is addressed to queue %q", clip.Input(qn), s.scope)
	}
	if err := queue.ValidateQueueName(qn); err != nil {
		return ListResult{}, err
	}
	after := ""
	if req.Cursor != "" {
		if err := ValidateID(req.Cursor); err != nil {
			return ListResult{}, invalid("cursor", "is not a cursor from a previous page")
		}
		after = afterSubtree(ref(qn, req.Cursor))
	}
	ids, more, err := s.listIDs(ctx, qn, after, limit)
	if err != nil {
		return ListResult{}, err
	}
	out := ListResult{Schedules: make([]Schedule, 0, len(ids))}
	views := make([]*Schedule, len(ids))
	errs := make([]error, len(ids))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i, id := range ids {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			v, err := s.In(qn).Get(ctx, id, now)
			if err == nil {
				views[i] = &v
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for i := range ids {
		if errs[i] != nil {
			if errors.Is(errs[i], ErrNotFound) {
				continue // deleted meanwhile
			}
			return ListResult{}, errs[i]
		}
		out.Schedules = append(out.Schedules, *views[i])
	}
	if more && len(ids) > 0 {
		out.NextCursor = ids[len(ids)-1]
	}
	return out, nil
}

// listIDs lists the ids of up to limit schedules of queue qn, in key
// order from start-after key after; more says whether there are others.
// The store lists keys without a delimiter, so the keys of each
// schedule's state and history are skipped over: one LIST jumps past a
// schedule's subtree.
func (s *Scheduler) listIDs(ctx context.Context, qn, after string, limit int) (ids []string, more bool, err error) {
	prefix := queue.SchedulesPrefix(qn)
	for {
		page, err := s.store.List(ctx, prefix, after, 0)
		if err != nil {
			return nil, false, err
		}
		for _, it := range page.Items {
			if id := idFromDefinitionKey(prefix, it.Key); id != "" {
				if len(ids) == limit {
					return ids, true, nil
				}
				ids = append(ids, id)
			}
		}
		if !page.Truncated || len(page.Items) == 0 {
			return ids, false, nil
		}
		last := page.Items[len(page.Items)-1].Key
		after = last
		if id := subtreeOf(prefix, last); id != "" {
			after = afterSubtree(ref(qn, id)) // skip the rest of that schedule's state and history
		}
	}
}
