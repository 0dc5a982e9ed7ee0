package store

import (
	"context"
	"fmt"
	"sync/atomic"
)

// kind is the billing class of a request.
type kind int

// The request kinds Counting tells apart. S3 bills PUT, COPY, POST and LIST
// at one price, GET and HEAD at another, and DELETE not at all.
const (
	kindPut kind = iota
	kindGet
	kindList
	kindDelete
	kindHead
	numKinds
)

// Counts is a snapshot of request counts by kind.
type Counts struct {
	Put, Get, List, Delete, Head int64
}

// Total returns the number of requests of every kind.
func (c Counts) Total() int64 { return c.Put + c.Get + c.List + c.Delete + c.Head }

// Sub returns c minus o, for measuring a span between two snapshots.
func (c Counts) Sub(o Counts) Counts {
	return Counts{Put: c.Put - o.Put, Get: c.Get - o.Get, List: c.List - o.List, Delete: c.Delete - o.Delete, Head: c.Head - o.Head}
}

// Add returns c plus o.
func (c Counts) Add(o Counts) Counts {
	return Counts{Put: c.Put + o.Put, Get: c.Get + o.Get, List: c.List + o.List, Delete: c.Delete + o.Delete, Head: c.Head + o.Head}
}

// String formats the counts as "requests=N put=N list=N get=N delete=N head=N".
func (c Counts) String() string {
	return fmt.Sprintf("requests=%d put=%d list=%d get=%d delete=%d head=%d", c.Total(), c.Put, c.List, c.Get, c.Delete, c.Head)
}

// Counting wraps a Store and counts every request by kind, whether it
// succeeds or fails. It is safe for concurrent use.
type Counting struct {
	inner Store
	n     [numKinds]atomic.Int64
}

var _ Store = (*Counting)(nil)

// NewCounting returns a counting wrapper around inner.
func NewCounting(inner Store) *Counting { return &Counting{inner: inner} }

// Counts returns a snapshot of the counts so far.
func (c *Counting) Counts() Counts {
	return Counts{
		Put: c.n[kindPut].Load(), Get: c.n[kindGet].Load(), List: c.n[kindList].Load(),
		Delete: c.n[kindDelete].Load(), Head: c.n[kindHead].Load(),
	}
}

// Reset sets every count to zero.
func (c *Counting) Reset() {
	for i := range c.n {
		c.n[i].Store(0)
	}
}

func (c *Counting) add(k kind) { c.n[k].Add(1) }

// Get implements Store.
func (c *Counting) Get(ctx context.Context, key string) (Object, error) {
	c.add(kindGet)
	return c.inner.Get(ctx, key)
}

// Head implements Store.
func (c *Counting) Head(ctx context.Context, key string) (Info, error) {
	c.add(kindHead)
	return c.inner.Head(ctx, key)
}

// PutIfAbsent implements Store.
func (c *Counting) PutIfAbsent(ctx context.Context, key string, body []byte, opts ...PutOption) (string, error) {
	c.add(kindPut)
	return c.inner.PutIfAbsent(ctx, key, body, opts...)
}

// PutIfMatch implements Store.
func (c *Counting) PutIfMatch(ctx context.Context, key string, body []byte, etag string, opts ...PutOption) (string, error) {
	c.add(kindPut)
	return c.inner.PutIfMatch(ctx, key, body, etag, opts...)
}

// Put implements Store.
func (c *Counting) Put(ctx context.Context, key string, body []byte, opts ...PutOption) (string, error) {
	c.add(kindPut)
	return c.inner.Put(ctx, key, body, opts...)
}

// Delete implements Store.
func (c *Counting) Delete(ctx context.Context, key string) error {
	c.add(kindDelete)
	return c.inner.Delete(ctx, key)
}

// List implements Store.
func (c *Counting) List(ctx context.Context, prefix, startAfter string, limit int) (Page, error) {
	c.add(kindList)
	return c.inner.List(ctx, prefix, startAfter, limit)
}

// ListDirs implements DirLister; it counts one LIST.
func (c *Counting) ListDirs(ctx context.Context, prefix, startAfter string, limit int) ([]string, bool, error) {
	if _, ok := c.inner.(DirLister); !ok {
		return listDirsByKeys(ctx, c, prefix, startAfter, limit) // counts each LIST of it
	}
	c.add(kindList)
	return ListDirs(ctx, c.inner, prefix, startAfter, limit)
}

// Versions implements Store. It counts one LIST (one page of versions).
func (c *Counting) Versions(ctx context.Context, key, after string, limit int) (VersionPage, error) {
	c.add(kindList)
	return c.inner.Versions(ctx, key, after, limit)
}

// GetVersion implements Store.
func (c *Counting) GetVersion(ctx context.Context, key, versionID string) (Object, error) {
	c.add(kindGet)
	return c.inner.GetVersion(ctx, key, versionID)
}
