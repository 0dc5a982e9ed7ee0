package queue

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/s3q/s3q/shared/store"
)

// errStaleHint aborts an update whose hint (a children/ marker) is stale.
var errStaleHint = errors.New("queue: stale hint")

// finish does the follow-up work of the outbox: cascades, artifact
// deletion, events, then the record notes and the outbox entries go.
func (r *sweepRun) finish(ctx context.Context) {
	// Expired parents: their children, a generation at a time.
	level := r.followUps()
	for depth := 0; depth < maxCascadeDepth && len(level) > 0; depth++ {
		var mu sync.Mutex
		var children []*followUp
		jobs := make([]func(context.Context), 0, len(level))
		for _, f := range level {
			if !f.task.owesExpiryEvent() {
				continue
			}
			jobs = append(jobs, func(ctx context.Context) {
				kids, err := r.cascade(ctx, &f.task)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					f.blocked = true
					r.fail(err)
					return
				}
				f.cascaded = true
				children = append(children, kids...)
			})
		}
		r.parallel(ctx, jobs)
		level = children
	}

	all := r.followUps()
	var jobs []func(context.Context)
	for _, f := range all {
		if f.task.Status.Terminal() && f.task.ArtifactsExpireAt != nil {
			jobs = append(jobs, func(ctx context.Context) {
				n, err := r.q.deleteArtifacts(ctx, f.task.ID)
				r.add(&r.rep.ArtifactsDeleted, n)
				if err != nil {
					f.blocked = true // each job owns its f
					r.fail(err)
				}
			})
		}
	}
	r.parallel(ctx, jobs)
	if r.out(ctx) {
		return
	}

	// Events, in one Publish (the publisher batches).
	var events []Event
	var owners []*followUp
	for _, f := range all {
		if f.blocked || (f.task.owesExpiryEvent() && !f.cascaded) {
			continue
		}
		if f.task.owesExpiryEvent() {
			f.events = append(f.events, ExpiredEvent(&f.task))
		}
		if f.task.owesDeadLetterEvent() {
			f.events = append(f.events, DeadLetteredEvent(&f.task))
		}
		f.sent = true
		for _, ev := range f.events {
			events = append(events, ev)
			owners = append(owners, f)
		}
	}
	if len(events) > 0 {
		errs, err := r.publish(ctx, events)
		var first error
		for i, f := range owners {
			if err != nil || (i < len(errs) && errs[i] != nil) {
				f.sent = false
				r.add(&r.rep.EventsFailed, 1)
				if first == nil && err == nil {
					first = errs[i]
				}
			} else {
				r.mu.Lock()
				r.rep.EventsSent++
				if events[i].DetailType == DetailTypeTaskExpired {
					r.rep.ExpiredByType[f.task.TaskType]++
				}
				r.mu.Unlock()
			}
		}
		switch {
		case err != nil:
			r.fail(fmt.Errorf("publish %d events: %w", len(events), err))
		case first != nil:
			// Owed still: the next sweep publishes them again.
			r.fail(fmt.Errorf("publish: %d of %d events undelivered, first: %w", r.rep.EventsFailed, len(events), first))
		}
	}

	// Note what was sent on each record, then drop its outbox entries.
	jobs = jobs[:0]
	for _, f := range all {
		if !f.sent {
			continue
		}
		jobs = append(jobs, func(ctx context.Context) { r.settle(ctx, f) })
	}
	r.parallel(ctx, jobs)
}

// followUps returns the queued follow-ups in a stable order.
func (r *sweepRun) followUps() []*followUp {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*followUp, 0, len(r.follow))
	for _, f := range r.follow {
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].task.ID < out[j].task.ID })
	return out
}

func (r *sweepRun) publish(ctx context.Context, events []Event) ([]error, error) {
	if r.opts.Publisher == nil {
		return nil, nil // no publisher: dropped, and recorded as sent
	}
	errs, err := r.opts.Publisher.Publish(ctx, events)
	if err == nil && errs != nil && len(errs) != len(events) {
		err = fmt.Errorf("publisher returned %d results for %d events", len(errs), len(events))
	}
	return errs, err
}

// settle notes on the record that its events were sent (one conditional
// write, re-read if someone wrote meanwhile) and deletes its outbox
// entries.
func (r *sweepRun) settle(ctx context.Context, f *followUp) {
	if len(f.events) > 0 {
		// mark notes the events of the very transitions that were
		// published (a record that failed again since owes a new event).
		mark := func(t *Task) bool {
			changed := false
			if t.owesExpiryEvent() && sameTime(t.ExpiredAt, f.task.ExpiredAt) {
				t.ExpiryEventSentAt = ptr(r.now)
				changed = true
			}
			if t.owesDeadLetterEvent() && sameTime(t.FailedAt, f.task.FailedAt) {
				t.DeadLetterEventSentAt = ptr(r.now)
				changed = true
			}
			return changed
		}
		next := f.task.clone()
		mark(&next)
		_, err := r.q.commit(ctx, &f.task, f.etag, &next)
		if errors.Is(err, store.ErrPrecondition) {
			_, _, err = r.q.update(ctx, f.task.ID, func(t *Task) error {
				if !mark(t) {
					return errUnchanged
				}
				return nil
			})
			if errors.Is(err, errUnchanged) || errors.Is(err, ErrNotFound) {
				err = nil
			}
		}
		if err != nil {
			r.fail(err)
			return // the entries stay: the next sweep publishes again
		}
	}
	for _, key := range f.keys {
		if err := store.DeleteOwn(ctx, r.q.store, key); err != nil {
			r.fail(fmt.Errorf("delete %s: %w", key, err))
		}
	}
}

// cascade deals with the children of an expired parent: a pending child
// is expired (reason parent_expired), a running child with
// on_parent_expired=cancel gets cancel_requested, any other runs on. It
// returns the follow-ups of the children it expired.
func (r *sweepRun) cascade(ctx context.Context, parent *Task) ([]*followUp, error) {
	flag := parentFlagKey(parent.ID)
	if _, err := r.q.store.Head(ctx, flag); errors.Is(err, store.ErrNotFound) {
		return nil, nil // it never had a child
	} else if err != nil {
		return nil, fmt.Errorf("head %s: %w", flag, err)
	}
	prefix := childrenPrefix(parent.ID)
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
	next, etag, err := r.q.update(ctx, id, func(t *Task) error {
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

func sameTime(a, b *time.Time) bool {
	return (a == nil) == (b == nil) && (a == nil || a.Equal(*b))
}
