package queue

import (
	"context"

	"github.com/s3q/s3q/shared/store"
)

// artifactsSide is the sweep's entry for the deletion of a task's
// artifacts: sweep/{artifacts_expire_at}_artifacts_{queue}.{id}, written
// when an upload moves the time its artifacts go (artifacts_expire_at,
// ReserveArtifact) later. When that time comes, the sweep deletes the
// artifacts, unless the record names a later time, which has its own
// entry (sweep_artifacts.go).
//
// Before the record's write: the entry of the time next names, when it is
// later than cur's. After: nothing; an entry of an earlier time is stale
// and the sweep deletes it when it comes.
type artifactsSide struct {
	store store.Store
}

func (a artifactsSide) before(ctx context.Context, cur, next *Task) error {
	if next.ArtifactsExpireAt == nil || cur.ArtifactsExpireAt != nil && !next.ArtifactsExpireAt.After(*cur.ArtifactsExpireAt) {
		return nil
	}
	return putHint(ctx, a.store, sweepKey(*next.ArtifactsExpireAt, sweepArtifacts, next.Queue, next.ID))
}

func (artifactsSide) after(cur, next *Task) cleanup { return nil }
