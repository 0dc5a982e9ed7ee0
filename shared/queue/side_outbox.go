package queue

import (
	"context"

	"github.com/s3q/s3q/shared/store"
)

// outboxSide is the outbox entry of a transition that owes follow-up
// work (followUpDue): sweep/{time}_event_{queue}.{id}, at the
// transition's time. The sweep reads the outbox in time order, does the
// work (publishes the Task Expired or Task Dead-Lettered event, expires
// the pending children of an expired task, deletes the artifacts of a
// task that has finished) and then deletes the entry (sweep_outbox.go).
//
// Before the record's write: the entry of a transition that owes work.
// After: nothing; the entry stays until the sweep has done the work. An
// entry whose record owes nothing (the write never landed, or the work is
// done) is stale, and the sweep deletes it.
type outboxSide struct {
	store store.Store
}

func (o outboxSide) before(ctx context.Context, cur, next *Task) error {
	if !followUpDue(cur, next) {
		return nil
	}
	return putHint(ctx, o.store, outboxKey(next))
}

func (outboxSide) after(cur, next *Task) cleanup { return nil }

// followUpDue reports whether the change from cur to next owes follow-up
// work that the sweep does from the outbox: a Task Expired event (and the
// expiry of pending children), a Task Dead-Lettered event, or the deletion
// of the artifacts of a task that has just finished.
func followUpDue(cur, next *Task) bool {
	switch {
	case next.Status == StatusExpired && cur.Status != StatusExpired:
		return true
	case next.Status == StatusFailed && cur.Status != StatusFailed:
		return true
	case next.Status.Terminal() && !cur.Status.Terminal() &&
		next.ArtifactsExpireAt != nil && next.ArtifactsExpireAt.After(next.UpdatedAt):
		return true
	}
	return false
}
