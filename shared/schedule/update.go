package schedule

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/s3q/s3q/shared/internal/clip"
	"github.com/s3q/s3q/shared/store"
)

// Update replaces the definition of schedule id with req (see Request for
// what an omitted field means) and returns the schedule. When the
// expression or time zone changes, the next fire is the first new cron
// time after now; when they do not, the next fire stays as it was (a due
// fire is not lost by editing the input). A bad field returns a
// *queue.ValidationError and changes nothing; an unknown id ErrNotFound.
//
// Writes: a due marker at now, the definition (compare-and-swap), then the
// state as in Create.
func (s *Scheduler) Update(ctx context.Context, id string, req Request, now time.Time) (Schedule, error) {
	now = norm(now)
	id, err := s.locate(id)
	if err != nil {
		return Schedule{}, err
	}
	qn, bare := splitRef(id)
	if req.ID != "" && req.ID != bare {
		return Schedule{}, invalid("id", "%q does not match the schedule being updated (%s)", clip.Input(req.ID), bare)
	}
	switch req.Queue {
	case "":
		req.Queue = qn
	case qn:
	default:
		return Schedule{}, invalid("queue", "is %q, but schedule %s is in queue %s: a schedule stays in its queue (delete it and create it in the other)", clip.Input(req.Queue), bare, qn)
	}
	def, _, err := definition(&req, now)
	if err != nil {
		return Schedule{}, err
	}
	return s.change(ctx, id, now, func(cur *Definition) (bool, error) {
		next := def
		next.ID, next.CreatedAt, next.Secret = cur.ID, cur.CreatedAt, cur.Secret
		if req.Enabled == nil {
			next.Enabled = cur.Enabled
		}
		next.Version, next.UpdatedAt = cur.Version, cur.UpdatedAt
		if sameSpec(cur, &next) {
			return false, nil
		}
		*cur = next
		return true, nil
	})
}

// Pause stops schedule id from firing and drops its due marker. Pausing a
// paused schedule changes nothing.
func (s *Scheduler) Pause(ctx context.Context, id string, now time.Time) (Schedule, error) {
	return s.setEnabled(ctx, id, false, now)
}

// Resume lets a paused schedule fire again, from the first cron time after
// now: times that passed while it was paused are not caught up. Resuming
// an enabled schedule changes nothing.
func (s *Scheduler) Resume(ctx context.Context, id string, now time.Time) (Schedule, error) {
	return s.setEnabled(ctx, id, true, now)
}

func (s *Scheduler) setEnabled(ctx context.Context, id string, enabled bool, now time.Time) (Schedule, error) {
	now = norm(now)
	id, err := s.locate(id)
	if err != nil {
		return Schedule{}, err
	}
	return s.change(ctx, id, now, func(cur *Definition) (bool, error) {
		if cur.Enabled == enabled {
			return false, nil
		}
		cur.Enabled = enabled
		return true, nil
	})
}

// change is the read-modify-write of a definition: fn edits a copy and
// says whether it changed anything; a change is written with a new version
// and the state is brought up to date (also when nothing changed, so that
// retrying an operation that crashed before its state write completes it).
func (s *Scheduler) change(ctx context.Context, id string, now time.Time, fn func(d *Definition) (bool, error)) (Schedule, error) {
	for i := 0; i < maxCASAttempts; i++ {
		cur, etag, err := s.loadDef(ctx, id)
		if err != nil {
			return Schedule{}, err
		}
		next := cur
		changed, err := fn(&next)
		if err != nil {
			return Schedule{}, err
		}
		intent := ""
		if changed {
			if intent, err = s.putIntent(ctx, id, now); err != nil {
				return Schedule{}, err
			}
			next.Version = cur.Version + 1
			next.UpdatedAt = now
			body, err := json.Marshal(&next)
			if err != nil {
				return Schedule{}, fmt.Errorf("encode schedule %s: %w", id, err)
			}
			if _, err := store.SwapOwn(ctx, s.store, DefinitionKey(id), body, etag, nil); err != nil {
				if errors.Is(err, store.ErrPrecondition) {
					continue
				}
				return Schedule{}, fmt.Errorf("write schedule %s: %w", id, err)
			}
		}
		st, err := s.sync(ctx, &next, now)
		if err != nil {
			return Schedule{}, err
		}
		s.dropIntent(ctx, intent, &st)
		return s.view(&next, st, now)
	}
	return Schedule{}, fmt.Errorf("update schedule %s: %w", id, ErrConflict)
}
