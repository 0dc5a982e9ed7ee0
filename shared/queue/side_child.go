package queue

import (
	"context"
	"errors"

	"github.com/s3q/s3q/shared/store"
)

// childSide is what lists a parent's live children: the child's marker
// q/{queue}/children/{parent_id}/{child_id}, which exists while the child
// is not terminal, and its parent's flag q/{queue}/children/{parent_id}.flag,
// which says the parent has (or had) children. When a parent expires,
// the sweep HEADs its flag and only then LISTs its children's markers
// (sweep_cascade.go), to expire the pending ones.
//
// Before the record's write: for a child that becomes live (is submitted,
// or revives by a retry), its parent's flag (once per Queue and parent)
// and its own marker. After: the marker of a child that finishes is
// deleted. A marker whose child is terminal is stale: the cascade skips
// and deletes it. The flag goes with the cascade, or with the parent's
// purge, which deletes its children's markers too (a parent that never
// expires is never cascaded).
type childSide struct {
	store store.Store
	// flags are the parents' flags this Queue has written.
	flags memo[struct{}]
}

// live reports whether t is a child that needs its marker.
func (*childSide) live(t *Task) bool {
	return t.exists() && t.ParentID != "" && !t.Status.Terminal()
}

func (c *childSide) before(ctx context.Context, cur, next *Task) error {
	if !c.live(next) || c.live(cur) {
		return nil
	}
	flag := parentFlagKey(next.Queue, next.ParentID)
	if _, flagged := c.flags.get(flag); !flagged {
		if err := putHint(ctx, c.store, flag); err != nil {
			return err
		}
		c.flags.put(flag, struct{}{})
	}
	return putHint(ctx, c.store, childKey(next.Queue, next.ParentID, next.ID))
}

func (c *childSide) after(cur, next *Task) cleanup {
	if cur.exists() && !next.exists() {
		// A purge: the task's own marker, and, when it is a parent, its
		// children's markers and its flag, which no cascade will ever
		// read now (one HEAD; a LIST and DELETEs for a parent).
		return func(ctx context.Context) error {
			var err error
			if c.live(cur) {
				err = c.store.Delete(ctx, childKey(cur.Queue, cur.ParentID, cur.ID))
			}
			return errors.Join(err, c.clearParent(ctx, cur))
		}
	}
	if !c.live(cur) || c.live(next) {
		return nil
	}
	return deleteHint(c.store, childKey(cur.Queue, cur.ParentID, cur.ID))
}

// clearParent deletes the hints of purged task t as a parent: its
// children's markers, then its flag. A parent that does not expire is
// never cascaded, so without this they would stay for good (a child's
// marker whose record was never written, after a crashed submit; the
// flag always).
func (c *childSide) clearParent(ctx context.Context, t *Task) error {
	flag := parentFlagKey(t.Queue, t.ID)
	if _, err := c.store.Head(ctx, flag); errors.Is(err, store.ErrNotFound) {
		return nil
	} else if err != nil {
		return err
	}
	for it, err := range store.All(ctx, c.store, childrenPrefix(t.Queue, t.ID)) {
		if err != nil {
			return err
		}
		if err := c.store.Delete(ctx, it.Key); err != nil {
			return err
		}
	}
	c.flags.drop(flag)
	return c.store.Delete(ctx, flag)
}
