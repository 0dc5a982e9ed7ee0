package queue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/s3q/s3q/shared/store"
)

// owedEvents returns the events t owes: a Task Expired event of an
// expired task, a Task Dead-Lettered event of a failed one, whose
// publication its record has not noted yet.
func owedEvents(t *Task) []Event {
	var evs []Event
	if t.owesExpiryEvent() {
		evs = append(evs, ExpiredEvent(t))
	}
	if t.owesDeadLetterEvent() {
		evs = append(evs, DeadLetteredEvent(t))
	}
	return evs
}

// publishOwed publishes the events t owes through Options.Publisher, so
// that a transition that would otherwise drop them (a retry reviving a
// dead letter, a purge) may go ahead at once instead of waiting for the
// sweep: that transition's one conditional write then notes them sent
// (noteOwedSent), and an outbox entry left behind is stale. Nothing owed
// is nothing to do. Without a Publisher the events stay the sweep's to
// publish and the caller is refused (a *StateError naming op). A
// publisher that fails answers an error wrapping store.ErrRetryable
// (the API's 503): the event is still owed, and a retry of the call, or
// the sweep, publishes it.
//
// At least once: a crash, or a lost answer, after the publish and before
// the caller's write leaves the event owed, and the sweep publishes it a
// second time; it is never lost.
func (q *Queue) publishOwed(ctx context.Context, t *Task, op string) error {
	evs := owedEvents(t)
	if len(evs) == 0 {
		return nil
	}
	if q.opts.Publisher == nil {
		return &StateError{ID: t.ID, Op: op, Status: t.Status, Reason: "its " + evs[0].DetailType + " event is not published yet: " + op + " it after the next sweep (within a minute)"}
	}
	errs, err := q.opts.Publisher.Publish(ctx, evs)
	if err == nil && errs != nil && len(errs) != len(evs) {
		err = fmt.Errorf("publisher returned %d results for %d events", len(errs), len(evs))
	}
	if err == nil {
		err = errors.Join(errs...)
	}
	if err != nil {
		return fmt.Errorf("publish the %s event task %s owes: %w (%w)", evs[0].DetailType, t.ID, store.ErrRetryable, err)
	}
	return nil
}

// noteOwedSent notes on t, about to be written, the events publishOwed
// published for published (the same task as read then): only those of
// the very transitions published. It reports false when t owes an event
// that was not published (it failed or expired again since), which the
// caller must not drop.
func noteOwedSent(t, published *Task, now time.Time) bool {
	if t.owesExpiryEvent() {
		if published == nil || !published.owesExpiryEvent() || !sameTime(t.ExpiredAt, published.ExpiredAt) {
			return false
		}
		t.ExpiryEventSentAt = ptr(now)
	}
	if t.owesDeadLetterEvent() {
		if published == nil || !published.owesDeadLetterEvent() || !sameTime(t.FailedAt, published.FailedAt) {
			return false
		}
		t.DeadLetterEventSentAt = ptr(now)
	}
	return true
}

// dropOutbox deletes, best effort, the outbox entry of the transition
// that made published owe its events, once a write has noted them sent:
// the entry owes nothing any more. One left behind is stale, and the
// sweep deletes it.
func (q *Queue) dropOutbox(ctx context.Context, published *Task) {
	if published == nil || len(owedEvents(published)) == 0 {
		return
	}
	_ = q.store.Delete(ctx, outboxKey(published))
}
