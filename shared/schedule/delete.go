package schedule

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/s3q/s3q/shared/store"
)

// Delete removes schedule id: its definition, its due marker and its fire
// history; tasks it fired are not touched. An unknown id returns
// ErrNotFound.
//
// Writes, in order: delete the definition (from here on the schedule is
// gone for Get, List and the tick), mark the state deleted
// (compare-and-swap; the state object stays as a small tombstone so that
// re-creating the id never depends on re-creating a deleted key), delete
// the due marker, delete the history. A tick that meets the schedule
// half-deleted finishes the state and marker steps; Delete retried
// finishes everything.
func (s *Scheduler) Delete(ctx context.Context, id string, now time.Time) error {
	now = norm(now)
	id, err := s.locate(id)
	if err != nil {
		return err
	}
	def, _, err := s.loadDef(ctx, id)
	found := err == nil
	if err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	var incarnation *time.Time
	if found {
		if err := s.store.Delete(ctx, DefinitionKey(id)); err != nil {
			return fmt.Errorf("delete schedule %s: %w", id, err)
		}
		incarnation = &def.CreatedAt
	}
	live, err := s.bury(ctx, id, incarnation, now)
	if err != nil {
		return err
	}
	if err := s.deleteHistory(ctx, id); err != nil {
		return err
	}
	if !found && !live {
		return fmt.Errorf("schedule %s: %w", id, ErrNotFound)
	}
	return nil
}

// bury marks the state of a deleted schedule as deleted and drops its due
// marker. live reports whether there was a live state. The state is
// marked only when it follows the deleted incarnation (created at
// incarnation; nil when the definition was already gone), or when no
// definition exists: a create of the same id that landed since the
// definition was deleted keeps its state.
func (s *Scheduler) bury(ctx context.Context, id string, incarnation *time.Time, now time.Time) (live bool, err error) {
	for i := 0; i < maxCASAttempts; i++ {
		st, etag, err := s.loadState(ctx, id)
		if err != nil {
			return false, err
		}
		if etag == "" || st.Deleted {
			return live, nil
		}
		if incarnation == nil || !st.DefCreatedAt.Equal(*incarnation) {
			_, _, err := s.loadDef(ctx, id)
			if err == nil {
				return live, nil // a new incarnation: its writer or a tick brings the state up to date
			}
			if !errors.Is(err, ErrNotFound) {
				return live, err
			}
		}
		live = true
		err = s.tombstone(ctx, st, etag, now)
		if errors.Is(err, store.ErrPrecondition) {
			continue
		}
		return true, err
	}
	return live, fmt.Errorf("delete state of schedule %s: %w", id, ErrConflict)
}

// tombstone marks st (read with etag) deleted in one conditional write and
// drops its due marker.
func (s *Scheduler) tombstone(ctx context.Context, st State, etag string, now time.Time) error {
	ns := st
	ns.Deleted = true
	ns.NextRunAt, ns.DueKey = nil, ""
	ns.Rev++
	ns.UpdatedAt = now
	return s.writeState(ctx, &st, etag, &ns)
}

// deleteHistory deletes every history entry of a schedule.
func (s *Scheduler) deleteHistory(ctx context.Context, id string) error {
	for it, err := range store.All(ctx, s.store, HistoryPrefix(id)) {
		if err != nil {
			return fmt.Errorf("list history of schedule %s: %w", id, err)
		}
		if err := s.store.Delete(ctx, it.Key); err != nil {
			return fmt.Errorf("delete history of schedule %s: %w", id, err)
		}
	}
	return nil
}
