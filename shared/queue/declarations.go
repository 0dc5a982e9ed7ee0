package queue

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Declarations is where the core reads queue declarations from: what a
// queue's declaration says that a submit, a claim, a count or the sweep
// needs. Package queues implements it over the declarations in the
// bucket (q/{queue}/queue.json), with their cache, and owns everything
// else about declared queues: creating, changing, pausing and deleting
// them, their push targets, the limit on their number. queues.Open builds
// a Queue with it.
//
// An implementation is safe for concurrent use.
type Declarations interface {
	// Settings returns what the core needs of the declaration of queue
	// name (a valid name), as lookup says:
	//
	//   - LookupCached makes no request: the settings this process last
	//     read of the queue, however old, or, when it has read none, a
	//     queue's defaults (Declared false, the deployment's shards). The
	//     core asks so only for the shards of a marker that a lease
	//     operation or the sweep writes, which must not cost a GET.
	//   - LookupRead reads the declaration when the cache holds none
	//     younger than its cache time. An undeclared queue is
	//     ErrQueueNotFound where declarations are required; elsewhere
	//     (auto_declare) settings with Declared false and no defaults.
	//   - LookupCreate is LookupRead that, under auto_declare, declares
	//     an undeclared queue with no settings of its own first: a
	//     submit about to create the queue's first task.
	//
	// A failed read is returned as is (wrapped); nothing else is an error.
	Settings(ctx context.Context, name string, lookup Lookup, now time.Time) (Settings, error)
}

// Lookup says how Declarations.Settings may find a declaration.
type Lookup int

// The lookups of Declarations.Settings.
const (
	// LookupCached answers from what is cached, making no request.
	LookupCached Lookup = iota + 1
	// LookupRead reads the declaration unless a fresh copy is cached.
	LookupRead
	// LookupCreate reads it, and declares an undeclared queue under
	// auto_declare.
	LookupCreate
)

// Settings is what the core needs of a queue's declaration. Its zero
// defaults mean "none": the task type's or the deployment's apply.
type Settings struct {
	// Name is the queue's name.
	Name string
	// Declared is true when the queue has a declaration (read or cached);
	// false for an undeclared queue under auto_declare, and for a queue
	// whose declaration LookupCached has not seen.
	Declared bool
	// Shards is how many claim-index shards the queue's new markers
	// spread over (1 to MaxShards): fixed when the queue is first
	// declared, else the deployment's.
	Shards int
	// ReadShards is how many shards a reader of the queue's claim indexes
	// looks in: Shards, or the deployment's shards when more, since a
	// writer that had not read the declaration (LookupCached) used them.
	ReadShards int
	// TTL, TTLFrom, MaxAttempts and Timeout are the queue's defaults of
	// a submit's fields (request > task type > queue > deployment).
	TTL         *Duration
	TTLFrom     TTLFrom
	MaxAttempts int
	Timeout     *Duration
	// MaxConcurrency is the most tasks of the queue running at once,
	// each holding one of that many slots; 0 for no limit.
	MaxConcurrency int
	// Priority is the queue's default priority of its tasks (1 to 5; 0:
	// DefaultPriority).
	Priority int
	// MaxPerSecond is the most tasks of the queue started a second, by
	// every claim, pull or push, together (ratelimit.go); 0 for no limit.
	// Burst is how many may start at once after a quiet spell (0:
	// DefaultBurst(MaxPerSecond)).
	MaxPerSecond float64
	Burst        int
	// Paused is true while the queue is paused: a claim takes nothing
	// from it. PausedAt is when it was paused.
	Paused   bool
	PausedAt *time.Time
}

// shardsOf returns the shards a write by a lease operation or the sweep
// puts a queue's marker in, from the cached declaration alone (no
// request): readers list each claim index from its root, every shard at
// once (Settings.ReadShards), so any shard is found.
func (q *Queue) shardsOf(ctx context.Context, name string, now time.Time) int {
	s, err := q.decls.Settings(ctx, name, LookupCached, now)
	if err != nil || s.Shards <= 0 {
		return 1
	}
	return s.Shards
}

// maxEmptyChecks bounds the markers CheckEmpty checks against their
// records; more markers than this are reported at once.
const maxEmptyChecks = 100

// CheckEmpty reports whether queue name holds no live (pending or
// running) task, before its declaration is deleted (package queues): nil
// when it holds none, ErrQueueNotEmpty (wrapped, naming a task) when it
// does. It checks each claim-index marker against its record, at most
// 100 (more are ErrQueueNotEmpty at once), and deletes the stale ones it
// meets; a marker without a record that is younger than
// Options.StaleMarkerGrace is a submit between its writes, and counts as
// live. A running task whose marker the sweep parked (in sweep/, not
// under the queue's folder) is not seen.
func (q *Queue) CheckEmpty(ctx context.Context, name string, now time.Time) error {
	now = norm(now)
	if err := ValidateQueueName(name); err != nil {
		return err
	}
	checked := 0
	// Both claim indexes, every shard, with one LIST of their parent.
	{
		prefix := indexesPrefix(name)
		page, err := q.store.List(ctx, prefix, "", maxEmptyChecks+1)
		if err != nil {
			return fmt.Errorf("list %s: %w", prefix, err)
		}
		for _, o := range page.Items {
			m, ok := parseMarker(o.Key)
			if !ok {
				continue
			}
			if checked++; checked > maxEmptyChecks {
				return fmt.Errorf("queue %s has more than %d live tasks: %w", name, maxEmptyChecks, ErrQueueNotEmpty)
			}
			t, _, err := q.load(ctx, name, m.id)
			if err != nil && !errors.Is(err, ErrNotFound) {
				return err
			}
			if err == nil && t.IndexKey == m.key && !t.Status.Terminal() {
				return fmt.Errorf("queue %s: task %s is %s: %w", name, t.ID, t.Status, ErrQueueNotEmpty)
			}
			fresh := !m.available.Add(q.opts.StaleMarkerGrace).Before(now)
			if err != nil && fresh {
				// No record yet: a submit may be between its writes.
				return fmt.Errorf("queue %s: task %s is being submitted: %w", name, m.id, ErrQueueNotEmpty)
			}
			if !fresh {
				_ = q.store.Delete(ctx, m.key) // stale; best effort
			}
		}
	}
	return nil
}
