package queue

import (
	"context"
	"fmt"
	"time"

	"github.com/s3q/s3q/shared/store"
)

// markerSide is the claim-index marker of a task and its queue's
// wake-up. A pending task has one empty marker, named by its record
// (index_key), whose key sorts by when it is due: a claim lists the index
// from its head (keys.go: ready/, deadline/), and the sweep index parks a
// running task under its lease expiry. Before a marker under deadline/
// is written, its queue's wake-up for that minute is (see wake), so the
// sweep reads only the heads of queues that may hold something due.
//
// Before the record's write: the marker next names, when cur does not
// name it, with its wake-up first. After: the marker cur names and next
// does not is deleted, and a pending task this Queue has just written
// becomes a candidate of its next claim at once (announce). A marker its
// record does not name is stale: the claim or sweep that meets it
// deletes it once its time is Options.StaleMarkerGrace behind now.
type markerSide struct {
	q *Queue // the root view: its store and claim caches
	// wakes are the wake-up keys this Queue has written (see wake).
	wakes memo[struct{}]
}

func (m *markerSide) before(ctx context.Context, cur, next *Task) error {
	if next.IndexKey == "" || next.IndexKey == cur.IndexKey {
		return nil
	}
	return m.put(ctx, next.IndexKey, next.UpdatedAt)
}

func (m *markerSide) after(cur, next *Task) cleanup {
	if next.IndexKey == cur.IndexKey {
		return nil
	}
	m.q.announce(next)
	if cur.IndexKey == "" {
		return nil
	}
	return deleteHint(m.q.store, cur.IndexKey)
}

// put writes an index marker at now; a deadline/ marker's queue gets its
// wake-up first (see wake). A write whose answer was lost is recognised
// on a re-read.
func (m *markerSide) put(ctx context.Context, key string, now time.Time) error {
	if mk, ok := parseMarker(key); ok && !mk.expires.IsZero() {
		if err := m.wake(ctx, mk.queue, mk.expires, now); err != nil {
			return err
		}
	}
	if _, err := store.PutOwn(ctx, m.q.store, key, nil); err != nil {
		return fmt.Errorf("write marker %s: %w", key, err)
	}
	return nil
}

// remove deletes a marker this Queue wrote for a write that did not land
// (a submit that failed, or replayed a task that names another marker).
// Best effort: one left behind is stale.
func (m *markerSide) remove(ctx context.Context, key string) {
	if key != "" {
		_ = m.q.store.Delete(ctx, key)
	}
}

// wake writes the wake-up that makes the sweep read queue's deadline
// index from the minute holding at (sweep/wake/{minute}_{queue}), before
// a marker due at at is written: so the sweep reads only the heads of
// queues that may hold something due, however many queue names exist.
// One PUT per process, queue and minute: a Queue remembers what it wrote.
//
// The sweep deletes a wake-up only once its minute is StaleMarkerGrace
// behind its now and the head it reads holds nothing due (see
// sweep_queues.go). A remembered wake-up is trusted only while its minute
// is at most a minute behind now, so a marker written on its strength is
// always seen by the sweep that deletes it (clocks a minute apart aside).
func (m *markerSide) wake(ctx context.Context, queue string, at, now time.Time) error {
	key := wakeKey(queue, at)
	if _, done := m.wakes.get(key); done && !at.Truncate(time.Minute).Before(now.Add(-time.Minute)) {
		return nil
	}
	if err := putHint(ctx, m.q.store, key); err != nil {
		return err
	}
	m.wakes.put(key, struct{}{})
	return nil
}
