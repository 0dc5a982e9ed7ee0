package reqcount_test

import (
	"context"
	"sync"
	"testing"

	"github.com/s3q/s3q/shared/reqcount"
	"github.com/s3q/s3q/shared/store"
	"github.com/s3q/s3q/shared/store/memstore"
)

func TestCounting(t *testing.T) {
	t.Run("each_context_counts_its_own_requests_while_others_run", func(t *testing.T) {
		s := reqcount.Wrap(memstore.New())
		var wg sync.WaitGroup
		counters := make([]*reqcount.Counter, 8)
		for i := range counters {
			ctx, c := reqcount.Start(context.Background())
			counters[i] = c
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range i + 1 {
					_, _ = s.Put(ctx, "k", []byte("v"))
					_, _ = s.Get(ctx, "k")
				}
				_, _ = s.List(ctx, "", "", 0)
			}()
		}
		wg.Wait()
		for i, c := range counters {
			want := store.Counts{Put: int64(i + 1), Get: int64(i + 1), List: 1}
			if got := c.Counts(); got != want {
				t.Errorf("counter %d = %v, want %v", i, got, want)
			}
		}
	})
	t.Run("every_kind_is_counted", func(t *testing.T) {
		s := reqcount.Wrap(memstore.New())
		ctx, c := reqcount.Start(context.Background())
		etag, _ := s.PutIfAbsent(ctx, "k", []byte("1"))
		_, _ = s.PutIfMatch(ctx, "k", []byte("2"), etag)
		_, _ = s.Head(ctx, "k")
		vs, _ := s.Versions(ctx, "k", "", 0)
		_, _ = s.GetVersion(ctx, "k", vs.Versions[0].VersionID)
		_ = s.Delete(ctx, "k")
		want := store.Counts{Put: 2, Head: 1, List: 1, Get: 1, Delete: 1}
		if got := c.Counts(); got != want {
			t.Errorf("counts = %v, want %v", got, want)
		}
	})
	t.Run("a_context_without_a_counter_passes_through", func(t *testing.T) {
		s := reqcount.Wrap(memstore.New())
		if _, err := s.Put(context.Background(), "k", []byte("v")); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("round_trips_count_a_chain_of_requests_that_did_not_overlap", func(t *testing.T) {
		// Three GETs that are all in flight at once (each waits for the
		// others to start), then a PUT, then a DELETE: three round trips.
		const n = 3
		var entered sync.WaitGroup
		entered.Add(n)
		s := reqcount.Wrap(barrierStore{Store: memstore.New(), entered: &entered})
		ctx, c := reqcount.Start(context.Background())
		var wg sync.WaitGroup
		for range n {
			wg.Add(1)
			go func() { defer wg.Done(); _, _ = s.Get(ctx, "k") }()
		}
		wg.Wait()
		_, _ = s.Put(ctx, "k", []byte("v"))
		_ = s.Delete(ctx, "k")
		if got := c.RoundTrips(); got != 3 {
			t.Errorf("RoundTrips = %d, want 3 (requests %v)", got, c.Requests())
		}
		chain := c.Chain()
		if len(chain) != 3 || chain[0].Kind != "GET" || chain[1].String() != "PUT k" || chain[2].Kind != "DELETE" {
			t.Errorf("Chain = %v", chain)
		}
		if got := len(c.Requests()); got != n+2 {
			t.Errorf("%d requests recorded, want %d", got, n+2)
		}
	})
	t.Run("requests_one_after_another_are_each_a_round_trip", func(t *testing.T) {
		s := reqcount.Wrap(memstore.New())
		ctx, c := reqcount.Start(context.Background())
		for range 4 {
			_, _ = s.Put(ctx, "k", []byte("v"))
		}
		_, _ = s.List(ctx, "", "", 0)
		if got := c.RoundTrips(); got != 5 {
			t.Errorf("RoundTrips = %d, want 5", got)
		}
	})
	t.Run("wrapping_twice_wraps_once", func(t *testing.T) {
		s := reqcount.Wrap(memstore.New())
		if reqcount.Wrap(s) != s || !reqcount.Wrapped(s) || reqcount.Wrapped(memstore.New()) {
			t.Error("Wrap/Wrapped")
		}
	})
}

// barrierStore's Get returns only once every Get the WaitGroup counts has
// started: those requests all overlap, however the goroutines are run.
type barrierStore struct {
	store.Store
	entered *sync.WaitGroup
}

func (s barrierStore) Get(ctx context.Context, key string) (store.Object, error) {
	s.entered.Done()
	s.entered.Wait()
	return s.Store.Get(ctx, key)
}
