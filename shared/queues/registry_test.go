package queues_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/store"
	"github.com/s3q/s3q/shared/store/memstore"
)

var t0 = time.Date(2026, 1, 28, 9, 0, 0, 0, time.UTC)

// What a lease operation or the sweep asks (LookupCached) costs no
// request, whether the registry has read the declaration or not.
func TestACachedLookupMakesNoRequest(t *testing.T) {
	ctx := context.Background()
	c := store.NewCounting(memstore.New())
	_, r := queues.New(c, queues.Options{Shards: 4})
	s, err := r.Settings(ctx, "unread", queue.LookupCached, t0)
	if err != nil || s.Declared || s.Shards != 4 || s.ReadShards != 4 {
		t.Fatalf("unread queue: %+v, %v; want undeclared with the deployment's 4 shards", s, err)
	}
	if _, _, err := r.Declare(ctx, queues.Declaration{Name: "narrow", Shards: 2, MaxConcurrency: 3}, t0); err != nil {
		t.Fatal(err)
	}
	c.Reset()
	// Long after the cache time: shards are fixed, so an old copy will do.
	s, err = r.Settings(ctx, "narrow", queue.LookupCached, t0.Add(time.Hour))
	if err != nil || !s.Declared || s.Shards != 2 || s.ReadShards != 4 || s.MaxConcurrency != 3 {
		t.Fatalf("declared queue: %+v, %v; want its 2 shards, read in the deployment's 4", s, err)
	}
	if n := c.Counts(); n.Total() != 0 {
		t.Fatalf("cached lookups made requests: %v", n)
	}
}

// A read lookup reads a declaration once per cache time; where queues
// must be declared an undeclared one is ErrQueueNotFound, elsewhere it has
// no settings until a submit declares it (LookupCreate).
func TestReadAndCreateLookups(t *testing.T) {
	ctx := context.Background()
	c := store.NewCounting(memstore.New())
	_, strict := queues.New(c, queues.Options{RequireDeclared: true})
	if _, err := strict.Settings(ctx, "none", queue.LookupCreate, t0); !errors.Is(err, queue.ErrQueueNotFound) {
		t.Fatalf("required and undeclared: %v, want ErrQueueNotFound", err)
	}
	_, auto := queues.New(c, queues.Options{CacheFor: time.Minute})
	if s, err := auto.Settings(ctx, "new", queue.LookupRead, t0); err != nil || s.Declared {
		t.Fatalf("auto_declare, read: %+v, %v; want undeclared", s, err)
	}
	s, err := auto.Settings(ctx, "new", queue.LookupCreate, t0)
	if err != nil || !s.Declared || s.Shards != 1 {
		t.Fatalf("auto_declare, create: %+v, %v; want declared, one shard", s, err)
	}
	d, err := auto.Get(ctx, "new", t0)
	if err != nil || !d.AutoDeclared {
		t.Fatalf("the declaration a submit made: %+v, %v", d, err)
	}
	c.Reset()
	if _, err := auto.Settings(ctx, "new", queue.LookupRead, t0.Add(59*time.Second)); err != nil || c.Counts().Get != 0 {
		t.Fatalf("within the cache time: %v, %v requests", err, c.Counts())
	}
	if _, err := auto.Settings(ctx, "new", queue.LookupRead, t0.Add(time.Minute)); err != nil || c.Counts().Get != 1 {
		t.Fatalf("past the cache time: %v, %v requests; want one GET", err, c.Counts())
	}
}

// A Queue cannot be made without the declarations it reads: nil is a
// mistake in the wiring, not a queue without settings.
func TestAQueueWithoutDeclarationsIsRefused(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("queue.New with nil Declarations did not panic")
		}
	}()
	queue.New(memstore.New(), nil, queue.Options{})
}

// Open is the one entry point of a library user: it checks the bucket's
// layout (and gives a new bucket its layout version), refuses a bucket of
// another layout, and tunes the core and the registry by one options
// value.
func TestOpenChecksTheLayoutAndTakesOneOptionsValue(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	q, r, err := queues.Open(ctx, s, queues.Options{Core: queue.Options{DefaultTTL: time.Hour}, RequireDeclared: true}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, queue.LayoutKey); err != nil {
		t.Fatalf("a new bucket was not given its layout version: %v", err)
	}
	if _, err := q.Submit(ctx, queue.SubmitRequest{TaskType: "x", Queue: "emails"}, t0); !errors.Is(err, queue.ErrQueueNotFound) {
		t.Fatalf("submit to an undeclared queue under RequireDeclared: %v", err)
	}
	if _, _, err := r.Declare(ctx, queues.Declaration{Name: "emails"}, t0); err != nil {
		t.Fatal(err)
	}
	res, err := q.Submit(ctx, queue.SubmitRequest{TaskType: "x", Queue: "emails"}, t0)
	if err != nil || res.Task.ExpiresAt == nil || !res.Task.ExpiresAt.Equal(t0.Add(time.Hour)) {
		t.Fatalf("submit: %+v, %v; want the core's default TTL of 1h", res.Task.ExpiresAt, err)
	}

	other := memstore.New()
	if _, err := other.Put(ctx, queue.LayoutKey, []byte(`{"layout":2}`)); err != nil {
		t.Fatal(err)
	}
	q, r, err = queues.Open(ctx, other, queues.Options{}, t0)
	if !errors.Is(err, queue.ErrLayout) || q != nil || r != nil {
		t.Fatalf("a bucket of layout 2: %v, queue %v, registry %v", err, q, r)
	}
}
