package queue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/s3q/s3q/shared/deploy"
	"github.com/s3q/s3q/shared/store"
)

// errPurged is what load returns for the record of a purged task: it
// wraps ErrNotFound, so every caller sees the task as gone, and lets the
// dedup code tell a purged holder (its key is free at once) from a task
// not written yet.
var errPurged = fmt.Errorf("purged: %w", ErrNotFound)

// purgeRefusal says why t may not be purged, or "" when it may: a
// running task never is (cancel it first). A task whose Task Expired or
// Task Dead-Lettered event is still owed is purged after its event is
// published (purgeOwed).
func purgeRefusal(t *Task) string {
	switch {
	case t.Status == StatusRunning:
		return "a running task is never purged: cancel it first"
	}
	return ""
}

// purgeOwed publishes the events t owes before its purge (owed.go), or
// says why it may not be purged yet: an expired task that has had
// children (its flag is there) waits for the sweep, which expires its
// pending children before its Task Expired event goes out; and without a
// Publisher every owed event waits for the sweep. The tombstone written
// next owes nothing, so its outbox entry is stale.
func (q *Queue) purgeOwed(ctx context.Context, t *Task) (string, error) {
	if t.owesExpiryEvent() {
		_, err := q.store.Head(ctx, parentFlagKey(t.Queue, t.ID))
		if err == nil {
			return "its children are expired with it by the next sweep (within seconds), and its Task Expired event published then: purge it after that", nil
		}
		if !errors.Is(err, store.ErrNotFound) {
			return "", fmt.Errorf("head %s: %w", parentFlagKey(t.Queue, t.ID), err)
		}
	}
	err := q.publishOwed(ctx, t, "purge")
	var se *StateError
	if errors.As(err, &se) {
		return se.Reason, nil
	}
	return "", err
}

// tombstone returns the record that marks t purged at now: what the
// clean-up of its side records needs (its markers, dedup key, parent and
// artifacts), without its input, output or error.
func tombstone(t *Task, now time.Time) Task {
	return Task{
		ID: t.ID, Queue: t.Queue, TaskType: t.TaskType, Status: t.Status,
		CreatedAt: t.CreatedAt, UpdatedAt: now, AvailableAt: t.AvailableAt, ExpiresAt: t.ExpiresAt,
		DedupKey: t.DedupKey, ParentID: t.ParentID, Attempt: t.Attempt, MaxAttempts: t.MaxAttempts, Timeout: t.Timeout,
		ArtifactsExpireAt: t.ArtifactsExpireAt, IndexKey: t.IndexKey, PurgedAt: ptr(now),
	}
}

// purgeOne deletes one pending or terminal task (see Purge) and returns
// it as it was. The commit point is one compare-and-swap of the record
// into a tombstone (tombstone): before it the task is whole, after it
// every reader finds it gone. Then, best effort, its side records go —
// the dedup pointer is released if it still names the task (never
// deleted: a key is only ever taken over), its claim-index marker, its
// status/ entry, its entry under its parent, its artifacts — and last
// the record itself (kept as a tombstone when the pointer could not be
// released). A crash after the commit leaves only stale hints,
// which claims, listings and the sweep delete as they meet them (a
// tombstone left behind carries the terminal tag, so the bucket's
// lifecycle rule removes it). A write whose answer was lost is recognised
// on a re-read.
//
// chosen, when not nil, says why the record as it is now must not be
// purged (it left the purge's filter since the listing), or "".
func (q *Queue) purgeOne(ctx context.Context, queue, id string, now time.Time, chosen func(*Task) string) (Task, error) {
	for i := 0; i < maxCASAttempts; i++ {
		cur, etag, err := q.load(ctx, queue, id)
		if err != nil {
			return Task{}, err
		}
		reason := purgeRefusal(&cur)
		if reason == "" && chosen != nil {
			reason = chosen(&cur)
		}
		if reason == "" && len(owedEvents(&cur)) > 0 {
			// Its event is still owed: publish it first (owed.go), unless
			// it is an expired parent, whose children the sweep expires
			// before its event goes out.
			reason, err = q.purgeOwed(ctx, &cur)
			if err != nil {
				return Task{}, err
			}
		}
		if reason != "" {
			return Task{}, &StateError{ID: id, Op: "purge", Status: cur.Status, Reason: reason}
		}
		tomb := tombstone(&cur, now)
		body, err := encode(&tomb)
		if err != nil {
			return Task{}, err
		}
		_, err = store.SwapOwn(ctx, q.store, TaskKey(queue, id), body, etag, nil, store.WithTags(deploy.TerminalTag))
		q.forget(queue, id) // whatever happened, the cached version is not the record's any more
		if errors.Is(err, store.ErrPrecondition) {
			continue // it changed meanwhile: look again
		}
		if err != nil {
			return Task{}, fmt.Errorf("purge task %s: %w", id, err)
		}
		q.dropOutbox(ctx, &cur)
		q.clearPurged(ctx, &cur)
		return cur, nil
	}
	return Task{}, fmt.Errorf("purge task %s: %w", id, ErrConflict)
}

// clearPurged removes the side records of t, purged, and then its
// record: the cleanups of every side record (side.go) from t to no
// record at all, in line, then the artifacts. The record goes last, and
// only when every side record was settled: a dedup pointer that may
// still name t keeps its tombstone (a pointer naming a purged task frees
// its key at once, one naming a missing task holds it for
// StaleMarkerGrace). Best effort: what is left is a stale hint (see
// purgeOne).
func (q *Queue) clearPurged(ctx context.Context, t *Task) {
	settled := true
	for _, s := range q.sides.all {
		if fn := s.after(t, &Task{}); fn != nil && fn(ctx) != nil {
			settled = false
		}
	}
	q.invalidate(t.IndexKey) // this Queue's next claim lists again
	if t.ArtifactsExpireAt != nil {
		// Left behind, they go with the task's sweep entry for them.
		_, _ = q.deleteArtifacts(ctx, t.Queue, t.ID)
	}
	if settled {
		_ = store.DeleteOwn(ctx, q.store, TaskKey(t.Queue, t.ID))
	}
}
