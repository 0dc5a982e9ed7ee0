package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/s3q/s3q/shared/store"
	"github.com/s3q/s3q/shared/store/memstore"
)

var ctx = context.Background()

func TestCountingCountsEveryRequestByKind(t *testing.T) {
	c := store.NewCounting(memstore.New())
	etag, _ := c.PutIfAbsent(ctx, "a", []byte("1"))
	_, _ = c.PutIfAbsent(ctx, "a", []byte("1")) // fails, still counted
	_, _ = c.PutIfMatch(ctx, "a", []byte("2"), etag)
	_, _ = c.Put(ctx, "b", nil)
	_, _ = c.Get(ctx, "a")
	_, _ = c.Head(ctx, "a")
	_, _ = c.List(ctx, "", "", 0)
	_ = c.Delete(ctx, "b")
	got := c.Counts()
	want := store.Counts{Put: 4, Get: 1, Head: 1, List: 1, Delete: 1}
	if got != want {
		t.Fatalf("counts = %+v, want %+v", got, want)
	}
	if got.String() != "requests=8 put=4 list=1 get=1 delete=1 head=1" {
		t.Fatalf("String = %q", got.String())
	}
	c.Reset()
	if c.Counts().Total() != 0 {
		t.Fatal("Reset kept counts")
	}
}

func TestAllPagesThroughEveryKeyOnePageARequest(t *testing.T) {
	c := NewCountingMem(t, 2500)
	var n int
	last := ""
	for it, err := range store.All(ctx, c, "k/") {
		if err != nil {
			t.Fatal(err)
		}
		if it.Key <= last {
			t.Fatalf("out of order: %s after %s", it.Key, last)
		}
		last = it.Key
		n++
	}
	if n != 2500 || c.Counts().List != 3 {
		t.Fatalf("%d keys in %d LISTs, want 2500 in 3", n, c.Counts().List)
	}
	c.Reset()
	for range store.All(ctx, c, "k/") {
		break
	}
	if c.Counts().List != 1 {
		t.Fatalf("an early stop sent %d LISTs, want 1", c.Counts().List)
	}
	errs := 0
	for _, err := range store.All(ctx, store.NewCounting(failingList{}), "k/") {
		if err != nil {
			errs++
		}
	}
	if errs != 1 {
		t.Fatalf("a failed LIST yielded %d errors, want 1", errs)
	}
}

// NewCountingMem returns a counting mem store holding n keys k/00000...
func NewCountingMem(t *testing.T, n int) *store.Counting {
	t.Helper()
	m := memstore.New()
	for i := 0; i < n; i++ {
		if _, err := m.Put(ctx, fmt.Sprintf("k/%05d", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	return store.NewCounting(m)
}

// failingList is a store whose List always fails.
type failingList struct{ store.Store }

func (failingList) List(context.Context, string, string, int) (store.Page, error) {
	return store.Page{}, errors.New("boom")
}
