package queue

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/s3q/s3q/shared/store"
)

// finish does the follow-up work of the outbox: cascades, artifact
// deletion, events, then the record notes and the outbox entries go.
func (r *sweepRun) finish(ctx context.Context) {
	r.cascadeAll(ctx)
	all := r.followUps()
	if len(all) == 0 {
		return // nothing owed: not a reason to call the sweep incomplete
	}
	r.deleteFinishedArtifacts(ctx, all)
	if r.out(ctx) {
		return
	}
	r.publishOwed(ctx, all)
	// Note what was sent on each record, then drop its outbox entries.
	var jobs []func(context.Context)
	for _, f := range all {
		if f.sent {
			jobs = append(jobs, func(ctx context.Context) { r.settle(ctx, f) })
		}
	}
	r.parallel(ctx, jobs)
}

// cascadeAll deals with the children of expired parents, a generation at
// a time, at most maxCascadeDepth deep.
func (r *sweepRun) cascadeAll(ctx context.Context) {
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
}

// deleteFinishedArtifacts deletes the artifacts of the finished tasks
// among the follow-ups.
func (r *sweepRun) deleteFinishedArtifacts(ctx context.Context, all []*followUp) {
	var jobs []func(context.Context)
	for _, f := range all {
		if f.task.Status.Terminal() && f.task.ArtifactsExpireAt != nil {
			jobs = append(jobs, func(ctx context.Context) {
				n, err := r.q.deleteArtifacts(ctx, f.task.Queue, f.task.ID)
				r.add(&r.rep.ArtifactsDeleted, n)
				if err != nil {
					f.blocked = true // each job owns its f
					r.fail(err)
				}
			})
		}
	}
	r.parallel(ctx, jobs)
}

// publishOwed publishes the events the follow-ups owe, in one Publish
// (the publisher batches), and marks each follow-up sent or not.
func (r *sweepRun) publishOwed(ctx context.Context, all []*followUp) {
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
	if len(events) == 0 {
		return
	}
	errs, err := r.publish(ctx, events)
	var first error
	for i, f := range owners {
		if err != nil || (i < len(errs) && errs[i] != nil) {
			f.sent = false
			r.add(&r.rep.EventsFailed, 1)
			if first == nil && err == nil {
				first = errs[i]
			}
			continue
		}
		r.mu.Lock()
		r.rep.EventsSent++
		if events[i].DetailType == DetailTypeTaskExpired {
			r.rep.ExpiredByType[f.task.TaskType]++
		}
		r.mu.Unlock()
	}
	switch {
	case err != nil:
		r.fail(fmt.Errorf("publish %d events: %w", len(events), err))
	case first != nil:
		// Owed still: the next sweep publishes them again.
		r.fail(fmt.Errorf("publish: %d of %d events undelivered, first: %w", r.rep.EventsFailed, len(events), first))
	}
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
		_, err := r.q.commit(ctx, &f.task, f.etag, &next, cleanInline)
		if errors.Is(err, store.ErrPrecondition) {
			_, _, err = r.q.update(ctx, f.task.Queue, f.task.ID, cleanInline, func(t *Task) error {
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

// outboxItem reads the record behind outbox entries and queues its
// follow-up work, or deletes the entries as stale when it owes none.
// The entries are of one task.
func (r *sweepRun) outboxItem(ctx context.Context, entries []sweepEntry) {
	queue, id := entries[0].queue, entries[0].id
	keys := make([]string, len(entries))
	for i, e := range entries {
		keys[i] = e.key
	}
	r.mu.Lock()
	f := r.follow[Ref(queue, id)]
	if f != nil {
		f.keys = append(f.keys, keys...) // this sweep moved it: it has the record
	}
	r.mu.Unlock()
	if f != nil {
		return
	}
	t, etag, err := r.q.load(ctx, queue, id)
	if err != nil && !errors.Is(err, ErrNotFound) {
		r.fail(err)
		return
	}
	if err != nil || !owesFollowUp(&t) {
		for _, e := range entries {
			r.stale(ctx, e.key, e.at)
		}
		return
	}
	r.addFollowUp(t, etag, keys...)
}

// owesFollowUp reports whether a record still wants outbox work.
func owesFollowUp(t *Task) bool {
	return t.owesExpiryEvent() || t.owesDeadLetterEvent() || (t.Status.Terminal() && t.ArtifactsExpireAt != nil)
}

func sameTime(a, b *time.Time) bool {
	return (a == nil) == (b == nil) && (a == nil || a.Equal(*b))
}
