package queues

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/store"
)

// The push queues' index: targets/{queue}, one entry per queue whose
// declaration has a target, so that a dispatcher finds every push queue
// with one LIST however many pull queues exist.

// targetNote is the body of a push queue's entry in the index
// (queue.TargetKey): the update time of the declaration it announces.
type targetNote struct {
	UpdatedAt time.Time `json:"updated_at"`
}

// noteTarget writes the index entry of d when d has a target, before d
// is written: so a dispatcher that lists the index finds every push
// queue, and re-reads a declaration only when its entry changed. A
// declaration older than its entry is not written yet (or its write
// failed): PushTarget says so, and the dispatcher reads it again on its
// next run.
func (r *Registry) noteTarget(ctx context.Context, d Declaration) error {
	if d.Target == nil {
		return nil
	}
	body, _ := json.Marshal(targetNote{UpdatedAt: d.UpdatedAt})
	if _, err := store.PutOwn(ctx, r.store, queue.TargetKey(d.Name), body); err != nil {
		return fmt.Errorf("write %s: %w", queue.TargetKey(d.Name), err)
	}
	return nil
}

// keepTarget runs once d, which has a target, is written: its index
// entry, written before, must still be there. A declaration that removed
// the target just before d (dropTarget) may have deleted the entry after
// d's was written; without it no dispatcher finds the queue. One HEAD.
func (r *Registry) keepTarget(ctx context.Context, d Declaration) {
	if d.Target == nil {
		return
	}
	if _, err := r.store.Head(ctx, queue.TargetKey(d.Name)); errors.Is(err, store.ErrNotFound) {
		_ = r.noteTarget(ctx, d) // best effort, as the entry's removal
	}
}

// dropTarget removes queue name's index entry once its declaration has
// no target any more (replaced without one, or deleted), then reads the
// declaration again: one with a target written meanwhile, whose entry
// this may just have deleted, gets it back. keepTarget covers a
// declaration written after this read. Best effort: a stale entry costs
// a dispatcher one GET.
func (r *Registry) dropTarget(ctx context.Context, name string) {
	_ = r.store.Delete(ctx, queue.TargetKey(name))
	if d, _, err := r.load(ctx, name); err == nil && d.Target != nil {
		_ = r.noteTarget(ctx, d)
	}
}

// TargetEntry is one entry of the push queues' index.
type TargetEntry struct {
	// Queue is the push queue's name.
	Queue string
	// ETag is the entry's: it changes with every declaration of the
	// queue that has a target, so a reader that remembers it reads the
	// declaration again only when it changed.
	ETag string
}

// PushTargets lists the push queues' index, in name order: one LIST per
// 1,000 push queues. An entry may outlive its queue's target (its removal
// is best effort): PushTarget tells.
func (r *Registry) PushTargets(ctx context.Context) iter.Seq2[TargetEntry, error] {
	return func(yield func(TargetEntry, error) bool) {
		for it, err := range store.All(ctx, r.store, queue.PrefixTargets) {
			if err != nil {
				yield(TargetEntry{}, fmt.Errorf("list push queues: %w", err))
				return
			}
			if name := queue.QueueOfTargetKey(it.Key); name != "" && !yield(TargetEntry{Queue: name, ETag: it.ETag}, nil) {
				return
			}
		}
	}
}

// PushTarget reads queue name's entry in the push queues' index, then its
// declaration (two GETs): queue.ErrQueueNotFound when either is gone.
// current is false when the declaration is older than its entry: its
// write is in flight, or failed, and the caller should read it again
// later. The declaration may have no target (removed since).
func (r *Registry) PushTarget(ctx context.Context, name string, now time.Time) (d Declaration, current bool, err error) {
	obj, err := r.store.Get(ctx, queue.TargetKey(name))
	if errors.Is(err, store.ErrNotFound) {
		return Declaration{}, false, fmt.Errorf("push queue %s: %w", name, queue.ErrQueueNotFound) // deleted since the LIST
	}
	if err != nil {
		return Declaration{}, false, fmt.Errorf("read push queue %s: %w", name, err)
	}
	var note targetNote
	_ = json.Unmarshal(obj.Body, &note)
	if d, err = r.Get(ctx, name, now); err != nil {
		return Declaration{}, false, err
	}
	return d, !d.UpdatedAt.Before(note.UpdatedAt), nil
}
