package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/s3q/s3q/shared/store"
)

// PauseQueue pauses a queue: from then on a claim of it, pull or push,
// takes nothing (it answers as an empty queue would), while submits go on
// landing and the sweep goes on expiring overdue tasks, settling lapsed
// leases and publishing events. Running tasks run on: their lease
// operations are untouched. ResumeQueue undoes it.
//
// The pause is one compare-and-swap of the queue's declaration, so it is
// seen at once by this process and, by others, once their cached copy of
// the declaration is older than Options.DeclCacheFor (30s by default).
// Pausing a paused queue changes nothing and returns it as it is.
func (q *Queue) PauseQueue(ctx context.Context, name string, now time.Time) (Declaration, error) {
	now = norm(now)
	return q.setPaused(ctx, name, true, now)
}

// ResumeQueue resumes a paused queue: claims take its tasks again (in
// other processes within Options.DeclCacheFor). Resuming a queue that is
// not paused changes nothing.
func (q *Queue) ResumeQueue(ctx context.Context, name string, now time.Time) (Declaration, error) {
	now = norm(now)
	return q.setPaused(ctx, name, false, now)
}

// setPaused writes a declaration's pause flag by compare-and-swap.
func (q *Queue) setPaused(ctx context.Context, name string, paused bool, now time.Time) (Declaration, error) {
	if err := ValidateQueueName(name); err != nil {
		return Declaration{}, err
	}
	for i := 0; i < maxCASAttempts; i++ {
		d, etag, err := q.loadQueue(ctx, name)
		if err != nil {
			return Declaration{}, err
		}
		if d.Paused == paused {
			q.cacheQueue(d, true, now)
			return d, nil
		}
		d.Paused, d.PausedAt, d.UpdatedAt = paused, nil, now
		if paused {
			d.PausedAt = ptr(now)
		}
		body, err := json.Marshal(d)
		if err != nil {
			return Declaration{}, fmt.Errorf("encode queue %s: %w", name, err)
		}
		// A lost answer is recognised on a re-read (the body carries its
		// update time).
		_, err = store.SwapOwn(ctx, q.store, QueueKey(name), body, etag, nil)
		if errors.Is(err, store.ErrPrecondition) {
			continue
		}
		if err != nil {
			return Declaration{}, fmt.Errorf("write queue %s: %w", name, err)
		}
		q.cacheQueue(d, true, now)
		return d, nil
	}
	return Declaration{}, fmt.Errorf("pause queue %s: %w", name, ErrConflict)
}
