package queue

import (
	"context"
	"fmt"
	"sync"

	"github.com/s3q/s3q/shared/store"
)

// A record and its side records.
//
// A task is its record, q/{queue}/tasks/{r}/{id}.json: every transition
// is one conditional write of it (commit), and the record is the truth.
// Beside it live side records, each a hint that makes one question cheap
// to answer without reading every record, each in its own file:
//
//	side_dedup.go      the dedup pointer: which live task holds a dedup key
//	side_marker.go     the claim-index marker and its queue's wake-up: what is due
//	side_outbox.go     the outbox entry: what follow-up work the sweep owes
//	side_child.go      the child's marker and its parent's flag: a parent's live children
//	side_status.go     the status entry: which tasks are failed, expired, cancelled
//	side_slot.go       the concurrency slot: which tasks run under max_concurrency
//	side_artifacts.go  the sweep's entry for a task's artifacts: when they go
//
// The protocol is the same for each: a side record that next needs and
// cur does not have is written before the record's compare-and-swap
// (before), and one that cur has and next does not need is removed after
// it (after). So a side record exists whenever its record needs it; one
// left behind by a crash (written before a write that never landed, or
// not removed after one that did) is a stale hint, which the reader that
// meets it checks against the record and repairs (a claim, a listing, the
// sweep). A commit that loses its race removes nothing it wrote: the
// winner may name the same key. (A claim that loses frees the slot it
// took itself: a slot's ETag is its own, side_slot.go.)
//
// A create is a commit from the zero Task (no record, etag ""): every side
// record the new task needs is written, then the record, create-only.
// Submit takes the dedup pointer first, before the commit, as its answer
// may be the task that holds the key (side_dedup.go). A purge is the
// other way: once the record is a tombstone, every side record's cleanup
// from the task to the zero Task runs, and the record goes last
// (purge.go).
//
// A new kind of side record is a new file with a type that implements
// sideRecord, and a line in newSides: commit does not change.
type sideRecord interface {
	// before writes what next needs and cur does not have, before the
	// record's compare-and-swap. An error aborts the transition with the
	// record unchanged; what was written is a stale hint. Every write
	// whose answer was lost is recognised on a re-read.
	before(ctx context.Context, cur, next *Task) error

	// after is called once the record's write from cur to next has
	// landed. It updates what this Queue remembers at once and returns
	// the cleanup of what cur had and next does not need (nil when there
	// is none), which the commit runs in line or, for a lease operation
	// under Options.BackgroundCleanup, in the background. A cleanup is
	// best effort: its error only says the side record may be left, as a
	// stale hint.
	after(cur, next *Task) cleanup
}

// cleanup removes a side record a transition left unneeded.
type cleanup func(ctx context.Context) error

// sides are a Queue's side records, each with what it remembers.
type sides struct {
	dedup     *dedupSide
	marker    *markerSide
	outbox    outboxSide
	child     *childSide
	status    statusSide
	slot      *slotSide
	artifacts artifactsSide
	// all are the side records in the order commit writes them.
	all []sideRecord
}

// newSides returns the side records of q (the root view), in the order
// commit writes them: the dedup pointer first (a task retried takes its
// key back before anything else), then the claim marker and its wake-up,
// the outbox entry, the child's hints, the status entry, the slot (which
// a claim takes itself before it builds the record it commits), and the
// artifacts' sweep entry.
func newSides(q *Queue) sides {
	s := sides{
		dedup:     &dedupSide{q: q},
		marker:    &markerSide{q: q},
		outbox:    outboxSide{store: q.store},
		child:     &childSide{store: q.store},
		status:    statusSide{store: q.store},
		slot:      &slotSide{q: q, lists: map[string]slotListing{}},
		artifacts: artifactsSide{store: q.store},
	}
	s.all = []sideRecord{s.dedup, s.marker, s.outbox, s.child, s.status, s.slot, s.artifacts}
	return s
}

// putHint writes an empty hint object at key (a wake-up, an outbox
// entry, a child's marker, a status entry, an artifact entry of the
// sweep index). A write whose answer was lost is recognised on a
// re-read. opts tag it: a status entry carries its terminal record's
// deploy.TerminalTag, so that the bucket's lifecycle rule deletes both together.
func putHint(ctx context.Context, s store.Store, key string, opts ...store.PutOption) error {
	if _, err := store.PutOwn(ctx, s, key, nil, opts...); err != nil {
		return fmt.Errorf("write %s: %w", key, err)
	}
	return nil
}

// deleteHint returns the cleanup that deletes key.
func deleteHint(s store.Store, key string) cleanup {
	return func(ctx context.Context) error { return s.Delete(ctx, key) }
}

// memo is a bounded map that a side record keeps of what it has written
// or read, under its own lock; it is cleared when it would pass maxSkip
// keys. The zero value is ready to use.
type memo[V any] struct {
	mu sync.Mutex
	m  map[string]V
}

func (m *memo[V]) get(key string) (V, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.m[key]
	return v, ok
}

func (m *memo[V]) put(key string, v V) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil || len(m.m) >= maxSkip {
		m.m = make(map[string]V)
	}
	m.m[key] = v
}

func (m *memo[V]) drop(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.m, key)
}

// exists reports whether t is a record (not the zero Task of a create,
// nor what a purge leaves).
func (t *Task) exists() bool { return t.ID != "" }
