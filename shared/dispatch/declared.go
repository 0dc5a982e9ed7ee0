package dispatch

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/s3q/s3q/shared/queue"
)

// DefaultDeclaredCacheFor is how long Declared keeps what it read.
const DefaultDeclaredCacheFor = 30 * time.Second

// Declared lists the push queues from the queues' declarations
// (queues/{name}.json with a target; PUT /queues/{queue}). A
// declaration's timeout is the delivery lease, and its max_concurrency is
// kept by the claim itself (the core's slots): the dispatcher runs at most
// that many deliveries of the queue at once.
//
// The list is read at most once per CacheFor: one LIST of queues/ per
// 1,000 queues, and a GET of each declaration that is new or whose ETag
// changed since the last listing (so a warm dispatcher's idle cost does
// not grow with the queues); one queue's declaration at most once per
// CacheFor too.
type Declared struct {
	q        *queue.Queue
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

// queuesPrefix is where the declarations are (queue.QueueKey).
const queuesPrefix = "queues/"

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

// NewDeclared returns the push queues declared in q's store; cacheFor <= 0
// means DefaultDeclaredCacheFor.
func NewDeclared(q *queue.Queue, cacheFor time.Duration) *Declared {
	if cacheFor <= 0 {
		cacheFor = DefaultDeclaredCacheFor
	}
	return &Declared{q: q, cacheFor: cacheFor, one: map[string]declaredEntry{}}
}

// FromDeclaration returns the push queue of a declaration, and false when
// it has no target.
func FromDeclaration(d queue.Declaration) (PushQueue, bool) {
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
	st := s.q.Store()
	after := ""
	for {
		page, err := st.List(ctx, queuesPrefix, after, 1000)
		if err != nil {
			return nil, fmt.Errorf("list queues: %w", err)
		}
		for _, it := range page.Items {
			name := strings.TrimSuffix(strings.TrimPrefix(it.Key, queuesPrefix), ".json")
			if it.Key != queue.QueueKey(name) || queue.ValidateQueueName(name) != nil {
				continue
			}
			e, ok := prev[name]
			if !ok || it.ETag == "" || e.etag != it.ETag {
				// New or changed since the last listing: read it.
				d, err := s.q.GetQueue(ctx, name, now)
				switch {
				case errors.Is(err, queue.ErrQueueNotFound):
					e = etagEntry{etag: it.ETag}
				case err != nil:
					return nil, err
				default:
					e = etagEntry{etag: it.ETag}
					e.p, e.ok = FromDeclaration(d)
				}
			}
			byETag[name] = e
			if e.ok {
				out = append(out, e.p)
			}
		}
		if !page.Truncated || len(page.Items) == 0 {
			break
		}
		after = page.Items[len(page.Items)-1].Key
	}
	s.mu.Lock()
	s.etags = byETag
	s.all, s.allAt, s.loaded = out, now, true
	s.mu.Unlock()
	return append([]PushQueue(nil), out...), nil
}

// PushQueue returns one queue's: its declaration's target.
func (s *Declared) PushQueue(ctx context.Context, name string, now time.Time) (PushQueue, bool, error) {
	s.mu.Lock()
	e, ok := s.one[name]
	s.mu.Unlock()
	if ok && now.Sub(e.at) < s.cacheFor && !now.Before(e.at) {
		return e.p, e.ok, nil
	}
	d, err := s.q.GetQueue(ctx, name, now)
	switch {
	case errors.Is(err, queue.ErrQueueNotFound):
		e = declaredEntry{at: now}
	case err != nil:
		return PushQueue{}, false, err
	default:
		e = declaredEntry{at: now}
		e.p, e.ok = FromDeclaration(d)
	}
	s.mu.Lock()
	if len(s.one) > 10000 {
		clear(s.one)
	}
	s.one[name] = e
	s.mu.Unlock()
	return e.p, e.ok, nil
}
