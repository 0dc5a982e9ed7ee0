// Package reqcount counts the store requests of one unit of work (an HTTP
// request, a sweep) while many run at once over one shared store and one
// shared queue.Queue: the counter travels in the context, and a store
// wrapper counts every call made with that context into it.
//
//	q := queue.New(reqcount.Wrap(s), queue.Options{})
//	ctx, c := reqcount.Start(ctx)
//	q.Submit(ctx, req, now)
//	log.Print(c.Counts()) // requests=2 put=2 ...
//
// A per-request store.Counting would need a per-request Queue, losing the
// Queue's listing cache (more LISTs); diffing one shared Counting would
// mix concurrent requests. This is exact and keeps one Queue per process.
package reqcount

import (
	"context"
	"sync/atomic"

	"github.com/s3q/s3q/shared/store"
)

// Counter counts one unit of work's store requests by kind. It is safe
// for concurrent use.
type Counter struct{ put, get, list, del, head atomic.Int64 }

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

// add counts one request of the kind pick selects, if ctx carries a Counter.
func add(ctx context.Context, pick func(*Counter) *atomic.Int64) {
	if c, ok := ctx.Value(counterKey{}).(*Counter); ok {
		pick(c).Add(1)
	}
}

func puts(c *Counter) *atomic.Int64  { return &c.put }
func gets(c *Counter) *atomic.Int64  { return &c.get }
func lists(c *Counter) *atomic.Int64 { return &c.list }
func dels(c *Counter) *atomic.Int64  { return &c.del }
func heads(c *Counter) *atomic.Int64 { return &c.head }

// Get implements store.Store.
func (s *wrapper) Get(ctx context.Context, key string) (store.Object, error) {
	add(ctx, gets)
	return s.inner.Get(ctx, key)
}

// Head implements store.Store.
func (s *wrapper) Head(ctx context.Context, key string) (store.Info, error) {
	add(ctx, heads)
	return s.inner.Head(ctx, key)
}

// PutIfAbsent implements store.Store.
func (s *wrapper) PutIfAbsent(ctx context.Context, key string, body []byte, opts ...store.PutOption) (string, error) {
	add(ctx, puts)
	return s.inner.PutIfAbsent(ctx, key, body, opts...)
}

// PutIfMatch implements store.Store.
func (s *wrapper) PutIfMatch(ctx context.Context, key string, body []byte, etag string, opts ...store.PutOption) (string, error) {
	add(ctx, puts)
	return s.inner.PutIfMatch(ctx, key, body, etag, opts...)
}

// Put implements store.Store.
func (s *wrapper) Put(ctx context.Context, key string, body []byte, opts ...store.PutOption) (string, error) {
	add(ctx, puts)
	return s.inner.Put(ctx, key, body, opts...)
}

// Delete implements store.Store.
func (s *wrapper) Delete(ctx context.Context, key string) error {
	add(ctx, dels)
	return s.inner.Delete(ctx, key)
}

// List implements store.Store.
func (s *wrapper) List(ctx context.Context, prefix, startAfter string, limit int) (store.Page, error) {
	add(ctx, lists)
	return s.inner.List(ctx, prefix, startAfter, limit)
}

// ListDirs implements store.DirLister; it is one LIST.
func (s *wrapper) ListDirs(ctx context.Context, prefix, startAfter string, limit int) ([]string, bool, error) {
	add(ctx, lists)
	return store.ListDirs(ctx, s.inner, prefix, startAfter, limit)
}

// Versions implements store.Store; it is one LIST of object versions.
func (s *wrapper) Versions(ctx context.Context, key string) ([]store.Version, error) {
	add(ctx, lists)
	return s.inner.Versions(ctx, key)
}

// GetVersion implements store.Store.
func (s *wrapper) GetVersion(ctx context.Context, key, versionID string) (store.Object, error) {
	add(ctx, gets)
	return s.inner.GetVersion(ctx, key, versionID)
}
