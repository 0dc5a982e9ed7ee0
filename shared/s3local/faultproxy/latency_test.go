package faultproxy_test

import (
	"context"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/s3local"
	"github.com/s3q/s3q/shared/s3local/faultproxy"
	"github.com/s3q/s3q/shared/store/memstore"
)

func TestLatencyProfiles(t *testing.T) {
	t.Run("typical_draws_98_percent_in_20_40ms_and_the_rest_in_150_300ms", func(t *testing.T) {
		d := faultproxy.NewDelays(faultproxy.Typical, 7)
		const n = 20000
		tail := 0
		for range n {
			v := d.Next()
			switch {
			case v >= 20*time.Millisecond && v < 40*time.Millisecond:
			case v >= 150*time.Millisecond && v < 300*time.Millisecond:
				tail++
			default:
				t.Fatalf("draw %v is in neither range", v)
			}
		}
		if share := float64(tail) / n; share < 0.015 || share > 0.025 {
			t.Errorf("tail share %.4f, want about 0.02", share)
		}
	})
	t.Run("the_same_seed_draws_the_same_delays", func(t *testing.T) {
		a, b, c := faultproxy.NewDelays(faultproxy.Typical, 1), faultproxy.NewDelays(faultproxy.Typical, 1), faultproxy.NewDelays(faultproxy.Typical, 2)
		same, differs := true, false
		for range 100 {
			x, y, z := a.Next(), b.Next(), c.Next()
			same = same && x == y
			differs = differs || x != z
		}
		if !same || !differs {
			t.Errorf("same seed same draws: %v; another seed differs: %v", same, differs)
		}
	})
	t.Run("none_adds_nothing_and_names_resolve", func(t *testing.T) {
		if d := faultproxy.NewDelays(faultproxy.NoLatency, 1).Next(); d != 0 {
			t.Errorf("none drew %v", d)
		}
		for _, name := range []string{"", "none", "typical"} {
			if _, err := faultproxy.LatencyProfile(name); err != nil {
				t.Errorf("%q: %v", name, err)
			}
		}
		if _, err := faultproxy.LatencyProfile("slow"); err == nil {
			t.Error("an unknown profile resolved")
		}
		s := memstore.New()
		if faultproxy.Slow(s, faultproxy.NewDelays(faultproxy.NoLatency, 1)) != s {
			t.Error("Slow with no latency wrapped the store")
		}
	})
	// Delays only ever lengthen a request, so these lower bounds hold on
	// any machine.
	fixed := faultproxy.Profile{Name: "fixed", Base: [2]time.Duration{30 * time.Millisecond, 31 * time.Millisecond}}
	t.Run("a_slow_store_delays_every_request", func(t *testing.T) {
		s := faultproxy.Slow(memstore.New(), faultproxy.NewDelays(fixed, 1))
		ctx := context.Background()
		start := time.Now()
		if _, err := s.Put(ctx, "k", []byte("v")); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Get(ctx, "k"); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took < 60*time.Millisecond {
			t.Errorf("two requests took %v, want at least 60ms", took)
		}
	})
	t.Run("the_proxy_delays_every_request", func(t *testing.T) {
		eachServer(t, func(t *testing.T, srv *s3local.Server) {
			_, st := front(t, srv, faultproxy.Options{Latency: fixed, LatencySeed: 3})
			start := time.Now()
			if _, err := st.Put(t.Context(), "k", []byte("v")); err != nil {
				t.Fatal(err)
			}
			if _, err := st.Get(t.Context(), "k"); err != nil {
				t.Fatal(err)
			}
			if took := time.Since(start); took < 60*time.Millisecond {
				t.Errorf("two requests took %v, want at least 60ms", took)
			}
		})
	})
}
