// Package queues owns s3q's declared queues: a queue's declaration
// (q/{queue}/queue.json: its defaults, shards, max_concurrency, push
// Target, whether it is paused), its validation, the one Target type and
// its validation, and what is done with them: create or replace
// (Declare), Get, List, Delete, Pause and Resume, the push queues' index
// (targets/{queue}), the limit on how many queues a deployment declares
// (Options.MaxQueues), the tombstone a deleted queue leaves (which keeps
// its shards), and the cache of declarations a process keeps.
//
// The task queue core (package queue) reads declarations through one
// method, queue.Declarations.Settings, which a Registry implements:
// Open (after checking the bucket's layout) and New build the core and
// its Registry together, so that the core
// reads the declarations of the same bucket through the same cache that
// Declare, Pause and Delete keep up to date. The core in turn tells the
// Registry whether a queue is empty before it is deleted
// (queue.Queue.CheckEmpty).
package queues

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/store"
)

// Options tune the queue core and its Registry, one value for both. The
// zero value is ready to use.
type Options struct {
	// Core tunes the queue core (package queue): default TTL, backoff,
	// listing cache, background cleanup, ... Defaults to the zero
	// queue.Options, whose fields each say their default.
	Core queue.Options

	// Shards is the claim-index shards of a queue declared without its
	// own (1 to queue.MaxShards): its markers spread over this many key
	// ranges, to pass S3's per-range write limit. A queue's shards are
	// fixed when it is first declared. Defaults to 1.
	Shards int

	// RequireDeclared makes a submit to a queue without a declaration
	// fail with queue.ErrQueueNotFound, and a claim from one too. When
	// false (auto_declare), the first submit to a queue declares it with
	// no settings of its own. Defaults to false; a deployment's
	// configuration sets it unless S3Q_AUTO_DECLARE is on.
	RequireDeclared bool

	// MaxQueues is the most queues a deployment declares, by hand or on
	// submit. Defaults to 1,000.
	MaxQueues int

	// AllowInsecureTargets accepts http:// push targets (s3q dev).
	// Defaults to false: https only.
	AllowInsecureTargets bool

	// CheckTarget, when set, decides whether queue may use target, after
	// its form passed Target.Validate: the deployment's push bindings and
	// a check that the signing secret exists (package dispatch,
	// Policy.Check). A refusal is a *queue.ValidationError naming the
	// field (target, target.lambda, target.secret); nothing is written.
	// Defaults to none: every well-formed target is accepted.
	CheckTarget func(ctx context.Context, queue string, target Target) error

	// CacheFor is how long a queue's declaration, once read, serves this
	// process's submits and claims before it is read again: a changed
	// declaration (defaults, max_concurrency, a pause) made by another
	// process applies here within this time; one made through this
	// Registry applies at once. Defaults to 30s.
	CacheFor time.Duration
}

// Registry is the declared queues of one bucket, with this process's
// cache of them. It is safe for concurrent use; one per process, made by
// Open with the queue core that reads from it, is the intended use.
type Registry struct {
	store store.Store
	core  *queue.Queue
	opts  Options

	mu    sync.Mutex
	cache map[string]entry // found declarations, by queue
	// loading holds, per queue, the channel a read in flight closes.
	loading map[string]chan struct{}
}

// entry is a cached declaration and when it was read.
type entry struct {
	d  Declaration
	at time.Time
}

var _ queue.Declarations = (*Registry)(nil)

// Open is the one entry point of a program that uses s3q as a library:
// it checks that s is a bucket of this build's layout (queue.CheckLayout:
// one GET, and on a new bucket the create-only write of its layout
// version, made at now), then returns the queue core over s and the
// Registry of its declared queues, wired together as New does. A bucket
// of another layout is an error wrapping queue.ErrLayout, and nothing is
// returned.
func Open(ctx context.Context, s store.Store, opts Options, now time.Time) (*queue.Queue, *Registry, error) {
	if err := queue.CheckLayout(ctx, s, now); err != nil {
		return nil, nil, err
	}
	q, r := New(s, opts)
	return q, r, nil
}

// New returns the queue core over s and the Registry of its declared
// queues, both tuned by opts, wired together: the core reads every
// declaration through the Registry, and the Registry asks the core
// whether a queue is empty before deleting it. It makes no request and
// does not check the bucket's layout: it is Open for a process that
// checks it once apart (each function at its start, lambdafn) or makes
// many Queues over one bucket (a test, a benchmark).
func New(s store.Store, opts Options) (*queue.Queue, *Registry) {
	if opts.Shards <= 0 {
		opts.Shards = 1
	}
	if opts.MaxQueues <= 0 {
		opts.MaxQueues = defaultMaxQueues
	}
	if opts.CacheFor <= 0 {
		opts.CacheFor = defaultCacheFor
	}
	r := &Registry{store: s, opts: opts, cache: map[string]entry{}, loading: map[string]chan struct{}{}}
	r.core = queue.New(s, r, opts.Core)
	return r.core, r
}

// maxCASAttempts bounds a read-modify-write loop that keeps losing races.
const maxCASAttempts = 8

// maxCached bounds the declarations a Registry keeps: past it, the cache
// starts over.
const maxCached = 100_000

// norm is now as the core keeps times: UTC, to the microsecond.
func norm(now time.Time) time.Time { return now.UTC().Truncate(time.Microsecond) }

// Settings returns what the core needs of queue name's declaration, as
// lookup says (the contract is queue.Declarations'): from the cache alone
// (queue.LookupCached), read when not cached for Options.CacheFor
// (queue.LookupRead), or declared first under auto_declare
// (queue.LookupCreate). Only found declarations are cached, so a new
// queue is usable at once.
func (r *Registry) Settings(ctx context.Context, name string, lookup queue.Lookup, now time.Time) (queue.Settings, error) {
	if lookup == queue.LookupCached {
		r.mu.Lock()
		e, ok := r.cache[name]
		r.mu.Unlock()
		if !ok {
			e.d = Declaration{Name: name, Shards: r.opts.Shards}
		}
		return r.settingsOf(e.d), nil
	}
	d, err := r.declared(ctx, name, lookup == queue.LookupCreate, norm(now))
	if err != nil {
		return queue.Settings{}, err
	}
	return r.settingsOf(d), nil
}

// settingsOf is Declaration.Settings with the shards a reader looks in.
func (r *Registry) settingsOf(d Declaration) queue.Settings {
	s := d.Settings()
	s.ReadShards = max(d.Shards, r.opts.Shards)
	return s
}

// declared returns the declaration of a queue from the cache
// (Options.CacheFor) or the store. Without Options.RequireDeclared an
// undeclared queue is declared when create is set (a submit), and
// reported as a declaration with no settings otherwise (a claim); with
// it, an undeclared queue is queue.ErrQueueNotFound.
func (r *Registry) declared(ctx context.Context, name string, create bool, now time.Time) (Declaration, error) {
	for {
		r.mu.Lock()
		e, ok := r.cache[name]
		if ok && now.Sub(e.at) < r.opts.CacheFor && !now.Before(e.at) {
			r.mu.Unlock()
			return e.d, nil
		}
		// One read per queue at a time: the submits of a batch, or the
		// fires of a tick, that miss together share it.
		if ch, busy := r.loading[name]; busy {
			r.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return Declaration{}, ctx.Err()
			}
		}
		ch := make(chan struct{})
		r.loading[name] = ch
		r.mu.Unlock()
		d, err := r.readDeclared(ctx, name, create, now)
		r.mu.Lock()
		delete(r.loading, name)
		r.mu.Unlock()
		close(ch)
		return d, err
	}
}

// readDeclared is declared's read of the store.
func (r *Registry) readDeclared(ctx context.Context, name string, create bool, now time.Time) (Declaration, error) {
	d, tombstone, err := r.load(ctx, name)
	if errors.Is(err, queue.ErrQueueNotFound) && !r.opts.RequireDeclared {
		shards := d.Shards // a deleted queue's, kept by its tombstone
		if shards == 0 {
			shards = r.opts.Shards
		}
		if !create {
			return Declaration{Name: name, Shards: shards}, nil
		}
		d = Declaration{Name: name, Shards: shards, AutoDeclared: true, CreatedAt: now, UpdatedAt: now}
		err = r.create(ctx, d, tombstone)
		if errors.Is(err, store.ErrPrecondition) {
			d, _, err = r.load(ctx, name) // declared by someone else meanwhile
		}
	}
	if err != nil {
		return Declaration{}, err
	}
	r.remember(d, now)
	return d, nil
}

// remember caches a found declaration, read or written at now.
func (r *Registry) remember(d Declaration, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.cache) >= maxCached {
		clear(r.cache)
	}
	r.cache[d.Name] = entry{d: d, at: now}
}

// forget drops a queue's cached declaration.
func (r *Registry) forget(name string) {
	r.mu.Lock()
	delete(r.cache, name)
	r.mu.Unlock()
}

// load reads a declaration; queue.ErrQueueNotFound when there is none,
// with the ETag and shards of the tombstone of a deleted one.
func (r *Registry) load(ctx context.Context, name string) (Declaration, string, error) {
	obj, err := r.store.Get(ctx, queue.QueueKey(name))
	if errors.Is(err, store.ErrNotFound) {
		return Declaration{}, "", fmt.Errorf("queue %s: %w", name, queue.ErrQueueNotFound)
	}
	if err != nil {
		return Declaration{}, "", fmt.Errorf("get queue %s: %w", name, err)
	}
	if isTombstone(obj.Body) {
		var ts tomb
		_ = json.Unmarshal(obj.Body, &ts)
		return Declaration{Name: name, Shards: ts.Shards}, obj.ETag, fmt.Errorf("queue %s: %w", name, queue.ErrQueueNotFound)
	}
	var d Declaration
	if err := json.Unmarshal(obj.Body, &d); err != nil {
		return Declaration{}, "", fmt.Errorf("decode queue %s: %w", name, err)
	}
	if d.Shards <= 0 {
		d.Shards = r.opts.Shards
	}
	return d, obj.ETag, nil
}

// Get returns the declaration of a queue, read from the store (and
// cached): queue.ErrQueueNotFound when it has none, under auto_declare
// too.
func (r *Registry) Get(ctx context.Context, name string, now time.Time) (Declaration, error) {
	if err := queue.ValidateQueueName(name); err != nil {
		return Declaration{}, err
	}
	d, _, err := r.load(ctx, name)
	if err != nil {
		return Declaration{}, err
	}
	r.remember(d, norm(now))
	return d, nil
}

// Check reports whether tasks may be submitted to a queue: nil when it
// is declared or Options.RequireDeclared is off (a submit would declare
// it), queue.ErrQueueNotFound otherwise. A schedule is checked with it
// when it is made, so that it never fires into a queue that refuses its
// tasks.
func (r *Registry) Check(ctx context.Context, name string, now time.Time) error {
	if err := queue.ValidateQueueName(name); err != nil {
		return err
	}
	_, err := r.declared(ctx, name, false, norm(now))
	return err
}

// ScheduleLimit checks, as Check does, that tasks may be submitted to a
// queue, and returns the most schedules that may fire into it: its
// max_schedules, or DefaultMaxSchedules.
func (r *Registry) ScheduleLimit(ctx context.Context, name string, now time.Time) (int, error) {
	if err := queue.ValidateQueueName(name); err != nil {
		return 0, err
	}
	d, err := r.declared(ctx, name, false, norm(now))
	if err != nil {
		return 0, err
	}
	if d.MaxSchedules > 0 {
		return d.MaxSchedules, nil
	}
	return DefaultMaxSchedules, nil
}

// ListRequest pages a listing of declared queues.
type ListRequest struct {
	// Limit is the most queues to return. Defaults to 100, at most 1000.
	Limit int
	// Cursor continues a listing from a previous NextCursor.
	Cursor string
}

// ListResult is one page of declared queues, by name.
type ListResult struct {
	Queues     []Declaration `json:"queues"`
	NextCursor string        `json:"next_cursor,omitempty"`
}

// List returns declared queues in name order: one delimited LIST of q/
// (the queues' folders) and one GET per queue.
func (r *Registry) List(ctx context.Context, req ListRequest) (ListResult, error) {
	switch {
	case req.Limit == 0:
		req.Limit = 100
	case req.Limit < 0 || req.Limit > store.MaxListLimit:
		return ListResult{}, invalid("limit", "must be between 1 and %d", store.MaxListLimit)
	}
	after := ""
	if req.Cursor != "" {
		if queue.ValidateQueueName(req.Cursor) != nil {
			return ListResult{}, invalid("cursor", "is not a cursor from a previous listing")
		}
		after = queue.QueuePrefix(req.Cursor) + "~"
	}
	dirs, truncated, err := store.ListDirs(ctx, r.store, queue.QueuesPrefix, after, req.Limit)
	if err != nil {
		return ListResult{}, fmt.Errorf("list queues: %w", err)
	}
	out := ListResult{Queues: []Declaration{}}
	for _, dir := range dirs {
		name := queue.QueueOfDir(dir)
		if name == "" {
			continue
		}
		d, _, err := r.load(ctx, name)
		if errors.Is(err, queue.ErrQueueNotFound) {
			continue // deleted, or a folder without a declaration
		}
		if err != nil {
			return ListResult{}, err
		}
		out.Queues = append(out.Queues, d)
	}
	if truncated && len(dirs) > 0 {
		out.NextCursor = queue.QueueOfDir(dirs[len(dirs)-1])
	}
	return out, nil
}

// NewQueue is New for a process that acts on tasks and never changes a
// declaration (a worker, a dispatcher that only claims, a test): the core
// alone, reading declarations through a Registry of its own.
func NewQueue(s store.Store, opts Options) *queue.Queue {
	q, _ := New(s, opts)
	return q
}
