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

// Declare creates the queue d.Name, or replaces its settings by
// compare-and-swap. It returns the stored declaration and whether it was
// created. Only the settable fields of d count (not its timestamps,
// AutoDeclared or the pause). A bad field is a *queue.ValidationError,
// shards changed after creation too; a new queue past Options.MaxQueues
// is queue.ErrTooManyQueues; nothing is written on either.
func (r *Registry) Declare(ctx context.Context, d Declaration, now time.Time) (Declaration, bool, error) {
	now = norm(now)
	d = d.settable()
	if err := d.validate(r.opts.AllowInsecureTargets); err != nil {
		return Declaration{}, false, err
	}
	if d.Target != nil && r.opts.CheckTarget != nil {
		if err := r.opts.CheckTarget(ctx, d.Name, *d.Target); err != nil {
			return Declaration{}, false, err
		}
	}
	for i := 0; i < maxCASAttempts; i++ {
		cur, etag, err := r.load(ctx, d.Name)
		if errors.Is(err, queue.ErrQueueNotFound) {
			d.CreatedAt, d.UpdatedAt = now, now
			if d.Shards == 0 {
				d.Shards = cur.Shards // a deleted queue's, kept by its tombstone
			}
			if d.Shards == 0 {
				d.Shards = r.opts.Shards
			}
			if cur.Shards != 0 && d.Shards != cur.Shards {
				return Declaration{}, false, invalid("shards", "is fixed when the queue is first declared: queue %s had %d before it was deleted", d.Name, cur.Shards)
			}
			if err := r.noteTarget(ctx, d); err != nil {
				return Declaration{}, false, err
			}
			err := r.create(ctx, d, etag)
			if errors.Is(err, store.ErrPrecondition) {
				continue // declared a moment ago: replace it
			}
			if err != nil {
				return Declaration{}, false, err
			}
			r.keepTarget(ctx, d)
			r.remember(d, now)
			return d, true, nil
		}
		if err != nil {
			return Declaration{}, false, err
		}
		if d.Shards == 0 {
			d.Shards = cur.Shards
		}
		if d.Shards != cur.Shards {
			return Declaration{}, false, invalid("shards", "is fixed at creation: the queue has %d", cur.Shards)
		}
		d.CreatedAt, d.UpdatedAt = cur.CreatedAt, now
		d.Paused, d.PausedAt = cur.Paused, cur.PausedAt // not settings: pause.go
		if err := r.noteTarget(ctx, d); err != nil {
			return Declaration{}, false, err
		}
		ok, err := r.swap(ctx, d, etag)
		if err != nil {
			return Declaration{}, false, err
		}
		if !ok {
			continue
		}
		if cur.Target != nil && d.Target == nil {
			r.dropTarget(ctx, d.Name)
		}
		r.keepTarget(ctx, d)
		r.remember(d, now)
		return d, false, nil
	}
	return Declaration{}, false, fmt.Errorf("declare queue %s: %w", d.Name, queue.ErrConflict)
}

// swap replaces a declaration read with etag by d; false when it changed
// meanwhile (nothing written). A lost answer is recognised on a re-read
// (the body carries its update time).
func (r *Registry) swap(ctx context.Context, d Declaration, etag string) (bool, error) {
	body, err := json.Marshal(d)
	if err != nil {
		return false, fmt.Errorf("encode queue %s: %w", d.Name, err)
	}
	_, err = store.SwapOwn(ctx, r.store, queue.QueueKey(d.Name), body, etag, nil)
	if errors.Is(err, store.ErrPrecondition) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("write queue %s: %w", d.Name, err)
	}
	return true, nil
}

// create writes a new declaration, after checking that the deployment
// holds fewer than MaxQueues (one delimited LIST of q/ per 1,000 queues):
// create-only, or over the tombstone of a deleted queue of that name
// (If-Match on tombstone, its ETag). Two creates racing at the limit may
// both pass: the limit bounds what a caller can make, not to the unit.
func (r *Registry) create(ctx context.Context, d Declaration, tombstone string) error {
	n, err := r.countQueues(ctx, r.opts.MaxQueues)
	if err != nil {
		return err
	}
	if n >= r.opts.MaxQueues {
		return fmt.Errorf("declare queue %s: %d queues exist: %w", d.Name, n, queue.ErrTooManyQueues)
	}
	body, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("encode queue %s: %w", d.Name, err)
	}
	// A write whose answer was lost is recognised on a re-read by its
	// name and creation time (this writer's clock, to the microsecond),
	// which a replace (PUT /queues/{queue}) made meanwhile keeps: not by
	// its bytes, which that replace changed.
	mine := func(stored []byte) bool {
		var got Declaration
		return json.Unmarshal(stored, &got) == nil && got.Name == d.Name && got.CreatedAt.Equal(d.CreatedAt)
	}
	if tombstone != "" {
		_, err = store.SwapOwn(ctx, r.store, queue.QueueKey(d.Name), body, tombstone, mine)
	} else {
		_, err = store.CreateOwn(ctx, r.store, queue.QueueKey(d.Name), body, mine)
	}
	if errors.Is(err, store.ErrNotFound) {
		err = store.ErrPrecondition // the tombstone went: someone else's write
	}
	if err != nil {
		return fmt.Errorf("write queue %s: %w", d.Name, err)
	}
	return nil
}

// countQueues counts the queues' folders (a deleted queue's too: its
// tombstone and terminal records stay), stopping once it has seen limit.
func (r *Registry) countQueues(ctx context.Context, limit int) (int, error) {
	n, after := 0, ""
	for {
		dirs, truncated, err := store.ListDirs(ctx, r.store, queue.QueuesPrefix, after, store.MaxListLimit)
		if err != nil {
			return 0, fmt.Errorf("list queues: %w", err)
		}
		for _, d := range dirs {
			if queue.QueueOfDir(d) != "" {
				n++
			}
		}
		if n >= limit {
			// At the limit: a deleted queue's folder stays (its
			// tombstone, its finished tasks) and does not count.
			return r.countDeclared(ctx, limit)
		}
		if !truncated || len(dirs) == 0 {
			return n, nil
		}
		after = dirs[len(dirs)-1] + "~"
	}
}

// countDeclared counts the queues' declarations that are not tombstones,
// by a HEAD of each (only when the folders reach the limit), stopping
// once it has seen limit.
func (r *Registry) countDeclared(ctx context.Context, limit int) (int, error) {
	n := 0
	for dir, err := range store.AllDirs(ctx, r.store, queue.QueuesPrefix) {
		if err != nil {
			return 0, fmt.Errorf("list queues: %w", err)
		}
		name := queue.QueueOfDir(dir)
		if name == "" {
			continue
		}
		info, err := r.store.Head(ctx, queue.QueueKey(name))
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("head queue %s: %w", name, err)
		}
		if info.Size >= maxTombstoneBytes {
			if n++; n >= limit {
				return n, nil
			}
		}
	}
	return n, nil
}

// maxTombstoneBytes is more than any tombstone's size and less than any
// declaration's (which holds a name and two times).
const maxTombstoneBytes = 32

// tomb is the body a deleted queue's declaration is replaced by: a key
// is never deleted and created again (versitygw refuses If-None-Match
// while a delete marker is the current version), so a queue declared
// again swaps its tombstone by If-Match. It keeps the queue's shards,
// which are fixed: a queue declared again gets them.
type tomb struct {
	Shards int `json:"shards,omitempty"`
}

// isTombstone reports whether a declaration's body is a tombstone (no
// name); every declaration names its queue.
func isTombstone(body []byte) bool {
	var d struct {
		Name string `json:"name"`
	}
	return json.Unmarshal(body, &d) != nil || d.Name == ""
}
