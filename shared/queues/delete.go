package queues

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/store"
)

// Delete deletes a queue's declaration (replaces it by a tombstone,
// which reads as no declaration). A queue that still holds a live
// (pending or running) task is refused with queue.ErrQueueNotEmpty: the
// core checks it (queue.Queue.CheckEmpty: each claim-index marker
// against its record, at most 100, more refuse at once; the stale ones it
// meets are deleted). A submit that read the declaration within
// Options.CacheFor before the delete may still land; declaring the queue
// again makes its tasks reachable again. The queue's folder stays: its
// finished tasks, its tombstone (which keeps its shards).
func (r *Registry) Delete(ctx context.Context, name string, now time.Time) error {
	now = norm(now)
	if err := queue.ValidateQueueName(name); err != nil {
		return err
	}
	d, etag, err := r.load(ctx, name)
	if err != nil {
		return err
	}
	if err := r.core.CheckEmpty(ctx, name, now); err != nil {
		return err
	}
	// A tombstone, by If-Match: a declaration changed meanwhile is kept.
	// A lost answer is recognised on a re-read: a tombstone is deleted
	// whoever wrote it.
	body, _ := json.Marshal(tomb{Shards: d.Shards})
	if _, err := store.SwapOwn(ctx, r.store, queue.QueueKey(name), body, etag, nil); err != nil {
		if errors.Is(err, store.ErrPrecondition) {
			return fmt.Errorf("delete queue %s: changed meanwhile: %w", name, queue.ErrConflict)
		}
		return fmt.Errorf("delete queue %s: %w", name, err)
	}
	if d.Target != nil {
		r.dropTarget(ctx, name) // best effort, as in Declare
	}
	r.forget(name)
	return nil
}
