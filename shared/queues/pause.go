package queues

import (
	"context"
	"fmt"
	"time"

	"github.com/s3q/s3q/shared/queue"
)

// Pause pauses a queue: from then on a claim of it, pull or push, takes
// nothing (it answers as an empty queue would), while submits go on
// landing and the sweep goes on expiring overdue tasks, settling lapsed
// leases and publishing events. Running tasks run on: their lease
// operations are untouched. Resume undoes it.
//
// The pause is one compare-and-swap of the queue's declaration, so it is
// seen at once by this process and, by others, once their cached copy of
// the declaration is older than Options.CacheFor (30s by default).
// Pausing a paused queue changes nothing and returns it as it is.
func (r *Registry) Pause(ctx context.Context, name string, now time.Time) (Declaration, error) {
	return r.setPaused(ctx, name, true, norm(now))
}

// Resume resumes a paused queue: claims take its tasks again (in other
// processes within Options.CacheFor). Resuming a queue that is not
// paused changes nothing.
func (r *Registry) Resume(ctx context.Context, name string, now time.Time) (Declaration, error) {
	return r.setPaused(ctx, name, false, norm(now))
}

// setPaused writes a declaration's pause flag by compare-and-swap.
func (r *Registry) setPaused(ctx context.Context, name string, paused bool, now time.Time) (Declaration, error) {
	if err := queue.ValidateQueueName(name); err != nil {
		return Declaration{}, err
	}
	for i := 0; i < maxCASAttempts; i++ {
		d, etag, err := r.load(ctx, name)
		if err != nil {
			return Declaration{}, err
		}
		if d.Paused == paused {
			r.remember(d, now)
			return d, nil
		}
		d.Paused, d.PausedAt, d.UpdatedAt = paused, nil, now
		if paused {
			d.PausedAt = &now
		}
		ok, err := r.swap(ctx, d, etag)
		if err != nil {
			return Declaration{}, err
		}
		if ok {
			r.remember(d, now)
			return d, nil
		}
	}
	return Declaration{}, fmt.Errorf("pause queue %s: %w", name, queue.ErrConflict)
}
