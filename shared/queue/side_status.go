package queue

import (
	"context"

	"github.com/s3q/s3q/shared/store"
)

// statusSide is the status entry of a task in a rare status (failed,
// expired, cancelled; indexedStatus): q/{queue}/status/{status}/{id}, so
// that listing the tasks of such a status reads their entries, not every
// record of the queue. An entry of a terminal task carries the record's
// deploy.TerminalTag: the bucket's lifecycle rule deletes both together.
//
// Before the record's write: the entry of the status next enters. After:
// the entry of the status cur leaves is deleted. An entry whose record is
// in another status is stale: a listing skips it.
type statusSide struct {
	store store.Store
}

func (s statusSide) before(ctx context.Context, cur, next *Task) error {
	k := statusKey(next)
	if k == "" || next.Status == cur.Status {
		return nil
	}
	return putHint(ctx, s.store, k, taskPutOptions(next)...)
}

func (s statusSide) after(cur, next *Task) cleanup {
	k := statusKey(cur)
	if k == "" || next.Status == cur.Status {
		return nil
	}
	return deleteHint(s.store, k)
}
