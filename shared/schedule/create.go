package schedule

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/s3q/s3q/shared/internal/clip"
	"slices"
	"time"

	"github.com/s3q/s3q/shared/store"
)

// Create validates req and stores a new schedule, enabled unless req says
// otherwise, whose first fire is the first cron time after now. A bad
// field returns a *queue.ValidationError and stores nothing; an id that is
// taken returns ErrExists.
//
// Writes, in order: a due marker at now (so that a tick finishes a create
// that dies after its definition write), the definition (create-only),
// the due marker of the first fire, the state; then the first marker is
// deleted. A create that crashed part-way is finished by the same create
// retried (same request), or by any update, pause or resume of the id.
func (s *Scheduler) Create(ctx context.Context, req Request, now time.Time) (Schedule, error) {
	now = norm(now)
	if err := ValidateID(req.ID); err != nil {
		return Schedule{}, err
	}
	if s.scope != "" {
		switch req.Queue {
		case "":
			req.Queue = s.scope
		case s.scope:
		default:
			return Schedule{}, invalid("queue", "is %q, but the request is addressed to queue %q", clip.Input(req.Queue), s.scope)
		}
	}
	def, _, err := definition(&req, now)
	if err != nil {
		return Schedule{}, err
	}
	if err := s.checkBound(ctx, def.Queue, req.ID); err != nil {
		return Schedule{}, err
	}
	def.ID, def.Version, def.CreatedAt, def.UpdatedAt = req.ID, 1, now, now
	def.Secret = newSecret()
	body, err := json.Marshal(&def)
	if err != nil {
		return Schedule{}, fmt.Errorf("encode schedule %s: %w", def.ID, err)
	}
	intent, err := s.putIntent(ctx, def.ref(), now)
	if err != nil {
		return Schedule{}, err
	}
	if _, err := store.CreateOwn(ctx, s.store, DefinitionKey(def.ref()), body, nil); err != nil {
		if !errors.Is(err, store.ErrPrecondition) {
			return Schedule{}, fmt.Errorf("create schedule %s: %w", def.ID, err)
		}
		existing, _, lerr := s.loadDef(ctx, def.ref())
		switch {
		case errors.Is(lerr, ErrNotFound):
			// The key was deleted. Some servers (versitygw) refuse a
			// create-only write on a key that once existed; write it
			// plainly instead.
			if _, err := store.PutOwn(ctx, s.store, DefinitionKey(def.ref()), body); err != nil {
				return Schedule{}, fmt.Errorf("create schedule %s: %w", def.ID, err)
			}
		case lerr != nil:
			return Schedule{}, lerr
		default:
			st, _, err := s.loadState(ctx, def.ref())
			if err != nil {
				return Schedule{}, err
			}
			if st.follows(&existing) || !sameSpec(&existing, &def) {
				if st.follows(&existing) {
					// The create that made it is finished and needs no
					// marker (the same key as ours when it ran at the
					// same now): ours goes. Otherwise it may be the
					// hint a tick needs to finish that create.
					s.dropIntent(ctx, intent, &st)
				}
				return Schedule{}, fmt.Errorf("schedule %s: %w", def.ID, ErrExists)
			}
			def = existing // the same create (its secret too), crashed before its state: finish it
		}
	}
	st, err := s.sync(ctx, &def, now)
	if err != nil {
		return Schedule{}, err
	}
	s.dropIntent(ctx, intent, &st)
	return s.view(&def, st, now)
}

// checkBound refuses, with ErrTooMany, a create of schedule id in queue
// qn that would pass the view's bound (Bounded). An id the queue holds
// already passes: its create is answered as a repeat or ErrExists.
func (s *Scheduler) checkBound(ctx context.Context, qn, id string) error {
	if s.max <= 0 {
		return nil
	}
	ids, more, err := s.listIDs(ctx, qn, "", s.max)
	if err != nil {
		return fmt.Errorf("count the schedules of queue %s: %w", qn, err)
	}
	if (more || len(ids) >= s.max) && !slices.Contains(ids, id) {
		return fmt.Errorf("queue %s holds %d schedules, its most: %w", qn, s.max, ErrTooMany)
	}
	return nil
}

// newSecret returns a fresh schedule secret: 128 random bits.
func newSecret() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
