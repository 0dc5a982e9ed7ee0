// Package reqcount counts the store requests of one unit of work (an HTTP
// request, a sweep) while many run at once over one shared store and one
// shared queue.Queue: the counter travels in the context, and a store
// wrapper counts every call made with that context into it.
//
//	q, _ := queues.New(reqcount.Wrap(s), queues.Options{})
//	ctx, c := reqcount.Start(ctx)
//	q.Submit(ctx, req, now)
//	log.Print(c.Counts()) // requests=2 put=2 ...
//
// The Counter also time-stamps each request, so it can tell how many round
// trips the unit of work made one after another (RoundTrips): the longest
// chain of its requests of which none overlapped the next. Over a store
// tens of milliseconds away that, not the request count, is what the
// caller waits for.
//
// A per-request store.Counting would need a per-request Queue, losing the
// Queue's listing cache (more LISTs); diffing one shared Counting would
// mix concurrent requests. This is exact and keeps one Queue per process.
package reqcount

import (
	"context"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/s3q/s3q/shared/store"
)

// Counter counts one unit of work's store requests by kind and records
// when each ran. It is safe for concurrent use.
type Counter struct {
	put, get, list, del, head atomic.Int64

	mu       sync.Mutex
	requests []Request
}

// Request is one store request a Counter saw.
type Request struct {
	// Kind is "PUT", "GET", "LIST", "DELETE" or "HEAD" (a GetVersion is a
	// GET, Versions a LIST).
	Kind string
	// Key is the object key, or the prefix of a LIST.
	Key string
	// Start and End are when the call went in and when it returned.
	Start, End time.Time
}

// String formats the request as "PUT tasks/x.json".
func (r Request) String() string { return r.Kind + " " + r.Key }

// Requests returns the requests so far, in the order they started.
func (c *Counter) Requests() []Request {
	c.mu.Lock()
	rs := append([]Request(nil), c.requests...)
	c.mu.Unlock()
	sort.SliceStable(rs, func(i, j int) bool { return rs[i].Start.Before(rs[j].Start) })
	return rs
}

// Chain returns the longest chain of the requests so far in which each
// request started after the one before it had returned: the round trips
// the unit of work made one after another. Requests that ran alongside
// one in the chain are not in it. Of the longest chains it returns the
// one that ends earliest at each step.
func (c *Counter) Chain() []Request {
	rs := c.Requests()
	// The greedy choice by earliest end is optimal for the largest set of
	// pairwise non-overlapping intervals, and such a set, in time order,
	// is a chain.
	sort.SliceStable(rs, func(i, j int) bool { return rs[i].End.Before(rs[j].End) })
	var chain []Request
	for _, r := range rs {
		if len(chain) == 0 || !r.Start.Before(chain[len(chain)-1].End) {
			chain = append(chain, r)
		}
	}
	return chain
}

// RoundTrips returns the length of Chain: the sequential round trips so
// far. Two requests that overlapped count once.
func (c *Counter) RoundTrips() int { return len(c.Chain()) }

// Counts returns a snapshot of the counts so far.
func (c *Counter) Counts() store.Counts {
	return store.Counts{Put: c.put.Load(), Get: c.get.Load(), List: c.list.Load(), Delete: c.del.Load(), Head: c.head.Load()}
}

type counterKey struct{}

// Start returns a context that counts the store requests made with it (or
// with contexts derived from it) through a Wrap-ped store, and its Counter.
func Start(ctx context.Context) (context.Context, *Counter) {
	c := &Counter{}
	return context.WithValue(ctx, counterKey{}, c), c
}

// From returns the Counter of ctx (Start), or nil when it has none.
func From(ctx context.Context) *Counter {
	c, _ := ctx.Value(counterKey{}).(*Counter)
	return c
}

// Wrap returns s counting each call into the Counter of the call's
// context, if it has one. Calls without one pass through uncounted.
func Wrap(s store.Store) store.Store {
	if Wrapped(s) {
		return s
	}
	return &wrapper{inner: s}
}

// Wrapped reports whether s is a Wrap-ped store, whose requests a Start-ed
// context counts.
func Wrapped(s store.Store) bool {
	_, ok := s.(*wrapper)
	return ok
}

// wrapper is the store Wrap returns.
type wrapper struct{ inner store.Store }

var _ store.Store = (*wrapper)(nil)

// add counts one request of the kind pick selects, if ctx carries a
// Counter, and returns the func that records its end; call it when the
// request returns.
func add(ctx context.Context, pick func(*Counter) *atomic.Int64, kind, key string) func() {
	c, ok := ctx.Value(counterKey{}).(*Counter)
	if !ok {
		return func() {}
	}
	pick(c).Add(1)
	start := time.Now()
	return func() {
		end := time.Now()
		c.mu.Lock()
		c.requests = append(c.requests, Request{Kind: kind, Key: key, Start: start, End: end})
		c.mu.Unlock()
	}
}

func puts(c *Counter) *atomic.Int64  { return &c.put }
func gets(c *Counter) *atomic.Int64  { return &c.get }
func lists(c *Counter) *atomic.Int64 { return &c.list }
func dels(c *Counter) *atomic.Int64  { return &c.del }
func heads(c *Counter) *atomic.Int64 { return &c.head }

// Get implements store.Store.
func (s *wrapper) Get(ctx context.Context, key string) (store.Object, error) {
	defer add(ctx, gets, "GET", key)()
	return s.inner.Get(ctx, key)
}

// Head implements store.Store.
func (s *wrapper) Head(ctx context.Context, key string) (store.Info, error) {
	defer add(ctx, heads, "HEAD", key)()
	return s.inner.Head(ctx, key)
}

// PutIfAbsent implements store.Store.
func (s *wrapper) PutIfAbsent(ctx context.Context, key string, body []byte, opts ...store.PutOption) (string, error) {
	defer add(ctx, puts, "PUT", key)()
	return s.inner.PutIfAbsent(ctx, key, body, opts...)
}

// PutIfMatch implements store.Store.
func (s *wrapper) PutIfMatch(ctx context.Context, key string, body []byte, etag string, opts ...store.PutOption) (string, error) {
	defer add(ctx, puts, "PUT", key)()
	return s.inner.PutIfMatch(ctx, key, body, etag, opts...)
}

// Put implements store.Store.
func (s *wrapper) Put(ctx context.Context, key string, body []byte, opts ...store.PutOption) (string, error) {
	defer add(ctx, puts, "PUT", key)()
	return s.inner.Put(ctx, key, body, opts...)
}

// Delete implements store.Store.
func (s *wrapper) Delete(ctx context.Context, key string) error {
	defer add(ctx, dels, "DELETE", key)()
	return s.inner.Delete(ctx, key)
}

// List implements store.Store.
func (s *wrapper) List(ctx context.Context, prefix, startAfter string, limit int) (store.Page, error) {
	defer add(ctx, lists, "LIST", prefix)()
	return s.inner.List(ctx, prefix, startAfter, limit)
}

// ListDirs implements store.DirLister; it is one LIST.
func (s *wrapper) ListDirs(ctx context.Context, prefix, startAfter string, limit int) ([]string, bool, error) {
	defer add(ctx, lists, "LIST", prefix)()
	return store.ListDirs(ctx, s.inner, prefix, startAfter, limit)
}

// Versions implements store.Store; it is one LIST of object versions.
func (s *wrapper) Versions(ctx context.Context, key, after string, limit int) (store.VersionPage, error) {
	defer add(ctx, lists, "LIST", key)()
	return s.inner.Versions(ctx, key, after, limit)
}

// GetVersion implements store.Store.
func (s *wrapper) GetVersion(ctx context.Context, key, versionID string) (store.Object, error) {
	defer add(ctx, gets, "GET", key)()
	return s.inner.GetVersion(ctx, key, versionID)
}
