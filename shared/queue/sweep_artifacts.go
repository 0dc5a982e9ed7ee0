package queue

import (
	"context"
	"errors"
)

// artifactsItem deletes a task's artifacts whose time has come, unless a
// later reservation moved their time (a later entry exists then).
func (r *sweepRun) artifactsItem(ctx context.Context, e sweepEntry) {
	cur, _, err := r.q.load(ctx, e.queue, e.id)
	switch {
	case errors.Is(err, ErrNotFound):
	case err != nil:
		r.fail(err)
		return
	case !cur.Status.Terminal() && cur.ArtifactsExpireAt != nil && cur.ArtifactsExpireAt.After(e.at):
		if err := r.q.store.Delete(ctx, e.key); err != nil {
			r.fail(err)
		}
		return
	}
	n, err := r.q.deleteArtifacts(ctx, e.queue, e.id)
	r.add(&r.rep.ArtifactsDeleted, n)
	if err != nil {
		r.fail(err)
		return
	}
	if err := r.q.store.Delete(ctx, e.key); err != nil {
		r.fail(err)
	}
}
