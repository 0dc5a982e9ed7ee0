package queue

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/s3q/s3q/shared/store"
)

// errStaleHint aborts an update whose hint (a children/ marker) is stale.
var errStaleHint = errors.New("queue: stale hint")

// cascade deals with the children of an expired parent: a pending child
// is expired (reason parent_expired), a running child with
// on_parent_expired=cancel gets cancel_requested, any other runs on. It
// returns the follow-ups of the children it expired.
func (r *sweepRun) cascade(ctx context.Context, parent *Task) ([]*followUp, error) {
	flag := parentFlagKey(parent.Queue, parent.ID)
	if _, err := r.q.store.Head(ctx, flag); errors.Is(err, store.ErrNotFound) {
		return nil, nil // it never had a child
	} else if err != nil {
		return nil, fmt.Errorf("head %s: %w", flag, err)
	}
	prefix := childrenPrefix(parent.Queue, parent.ID)
	var out []*followUp
	for it, err := range store.All(ctx, r.q.store, prefix) {
		if err != nil {
			return out, fmt.Errorf("list %s: %w", prefix, err)
		}
		id := strings.TrimPrefix(it.Key, prefix)
		if validID(id) != nil {
			continue
		}
		f, err := r.cascadeChild(ctx, parent, id, it.Key)
		if err != nil {
			return out, err
		}
		if f != nil {
			out = append(out, f)
		}
	}
	// Done: no child can be added any more (a submit that raced this
	// cascade expires its child itself).
	if err := r.q.store.Delete(ctx, flag); err != nil {
		return out, fmt.Errorf("delete %s: %w", flag, err)
	}
	return out, nil
}

func (r *sweepRun) cascadeChild(ctx context.Context, parent *Task, id, key string) (*followUp, error) {
	var expired, asked bool
	next, etag, err := r.q.update(ctx, parent.Queue, id, cleanInline, func(t *Task) error {
		expired, asked = false, false
		switch {
		case t.ParentID != parent.ID || t.Status.Terminal():
			return errStaleHint // its own terminal write missed deleting the marker
		case t.Status == StatusPending:
			expire(t, ReasonParentExpired, r.now)
			expired = true
		case t.Status == StatusRunning && t.OnParentExpired == OnParentExpiredCancel && !t.CancelRequested:
			t.CancelRequested = true
			t.UpdatedAt = r.now
			asked = true
		default:
			return errUnchanged // runs on
		}
		return nil
	})
	switch {
	case errors.Is(err, ErrNotFound):
		// A submit between its marker and its record (it checks the parent
		// itself after), or one that crashed there.
		r.stale(ctx, key, idTime(id))
		return nil, nil
	case errors.Is(err, errStaleHint):
		if err := r.q.store.Delete(ctx, key); err != nil {
			return nil, fmt.Errorf("delete %s: %w", key, err)
		}
		r.add(&r.rep.StaleMarkers, 1)
		return nil, nil
	case errors.Is(err, errUnchanged):
		return nil, nil
	case err != nil:
		return nil, err
	}
	if asked {
		r.add(&r.rep.CancelRequested, 1)
		return nil, nil
	}
	if !expired {
		return nil, nil
	}
	r.add(&r.rep.ExpiredByParent, 1)
	return r.addFollowUp(next, etag, outboxKey(&next)), nil
}
