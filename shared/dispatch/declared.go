package dispatch

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
)

// DefaultDeclaredCacheFor is how long Declared keeps what it read.
const DefaultDeclaredCacheFor = 30 * time.Second

// Declared lists the push queues from the queues' declarations
// (q/{name}/queue.json with a target; PUT /queues/{queue}). A
// declaration's timeout is the delivery lease, and its max_concurrency is
// kept by the claim itself (the core's slots): the dispatcher runs at most
// that many deliveries of the queue at once.
//
// The list is read at most once per CacheFor: one LIST of the push
// queues' index (queues.Registry.PushTargets: targets/, written with
// every declaration that has a target) per 1,000 push queues, and a GET of the entry and of the
// declaration (q/{queue}/queue.json) of each that is new or whose ETag
// changed since the last listing (so a warm dispatcher's idle cost does
// not grow with the queues, pull or push); one queue's declaration at
// most once per CacheFor too.
type Declared struct {
	decls    *queues.Registry
	cacheFor time.Duration

	mu     sync.Mutex
	all    []PushQueue
	allAt  time.Time
	one    map[string]declaredEntry
	loaded bool
	// etags is what each declaration said at the last listing, by the
	// ETag the listing showed: a later listing reads again only those
	// whose ETag changed.
	etags map[string]etagEntry
}

// etagEntry is what a declaration with this ETag says.
type etagEntry struct {
	etag string
	p    PushQueue
	ok   bool
}

type declaredEntry struct {
	p  PushQueue
	ok bool
	at time.Time
}

var _ Targets = (*Declared)(nil)

// NewDeclared returns the push queues declared in decls; cacheFor <= 0
// means DefaultDeclaredCacheFor.
func NewDeclared(decls *queues.Registry, cacheFor time.Duration) *Declared {
	if cacheFor <= 0 {
		cacheFor = DefaultDeclaredCacheFor
	}
	return &Declared{decls: decls, cacheFor: cacheFor, one: map[string]declaredEntry{}}
}

// fromDeclaration returns the push queue of a declaration, and false when
// it has no target.
func fromDeclaration(d queues.Declaration) (PushQueue, bool) {
	if d.Target == nil {
		return PushQueue{}, false
	}
	p := PushQueue{Name: d.Name, Target: *d.Target, MaxConcurrency: d.MaxConcurrency, Paused: d.Paused}
	if d.Timeout != nil {
		p.Timeout = *d.Timeout
	}
	return p, true
}

// PushQueues returns the declared push queues.
func (s *Declared) PushQueues(ctx context.Context, now time.Time) ([]PushQueue, error) {
	s.mu.Lock()
	if s.loaded && now.Sub(s.allAt) < s.cacheFor && !now.Before(s.allAt) {
		defer s.mu.Unlock()
		return append([]PushQueue(nil), s.all...), nil
	}
	prev := s.etags // replaced whole below, never changed in place
	s.mu.Unlock()
	var out []PushQueue
	byETag := map[string]etagEntry{}
	for it, err := range s.decls.PushTargets(ctx) {
		if err != nil {
			return nil, err
		}
		name := it.Queue
		e, ok := prev[name]
		if !ok || it.ETag == "" || e.etag != it.ETag {
			// New or changed since the last listing: read it.
			var err error
			if e, err = s.readTarget(ctx, name, it.ETag, now); err != nil {
				return nil, err
			}
		}
		byETag[name] = e
		if e.ok {
			out = append(out, e.p)
		}
	}
	s.mu.Lock()
	s.etags = byETag
	s.all, s.allAt, s.loaded = out, now, true
	s.mu.Unlock()
	return append([]PushQueue(nil), out...), nil
}

// readTarget reads a push queue's entry in the index and its
// declaration (queues.Registry.PushTarget). The entry is written before
// the declaration: a declaration older than its entry is not written
// yet, and is kept under no ETag, so that the next listing reads it
// again.
func (s *Declared) readTarget(ctx context.Context, name, etag string, now time.Time) (etagEntry, error) {
	e := etagEntry{etag: etag}
	d, current, err := s.decls.PushTarget(ctx, name, now)
	switch {
	case errors.Is(err, queue.ErrQueueNotFound):
		return e, nil // deleted since the LIST
	case err != nil:
		return etagEntry{}, err
	}
	if !current {
		e.etag = "" // its write is in flight, or failed: read it again next time
	}
	e.p, e.ok = fromDeclaration(d)
	return e, nil
}

// PushQueue returns one queue's: its declaration's target.
func (s *Declared) PushQueue(ctx context.Context, name string, now time.Time) (PushQueue, bool, error) {
	s.mu.Lock()
	e, ok := s.one[name]
	s.mu.Unlock()
	if ok && now.Sub(e.at) < s.cacheFor && !now.Before(e.at) {
		return e.p, e.ok, nil
	}
	d, err := s.decls.Get(ctx, name, now)
	switch {
	case errors.Is(err, queue.ErrQueueNotFound):
		e = declaredEntry{at: now}
	case err != nil:
		return PushQueue{}, false, err
	default:
		e = declaredEntry{at: now}
		e.p, e.ok = fromDeclaration(d)
	}
	s.mu.Lock()
	if len(s.one) > 10000 {
		clear(s.one)
	}
	s.one[name] = e
	s.mu.Unlock()
	return e.p, e.ok, nil
}
