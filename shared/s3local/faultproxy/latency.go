package faultproxy

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/s3q/s3q/shared/store"
)

// Profile is a latency profile: the delay added to every request, drawn
// per request, to make a loopback S3 server answer like a distant one.
// Most requests take Base; a share Tail of them take TailRange instead
// (the slow requests that set a p99).
type Profile struct {
	// Name names the profile ("none", "typical").
	Name string
	// Base is the [min, max) delay of most requests.
	Base [2]time.Duration
	// TailShare is the share of requests, in [0, 1], whose delay is drawn
	// from TailRange instead.
	TailShare float64
	// TailRange is the [min, max) delay of the tail.
	TailRange [2]time.Duration
}

// The latency profiles.
var (
	// NoLatency adds nothing.
	NoLatency = Profile{Name: "none"}
	// Typical is S3 in-region as a Lambda function sees it: 98% of
	// requests take 20-40 ms, 2% take 150-300 ms (p50 about 30 ms, p99
	// about 230 ms).
	Typical = Profile{
		Name:      "typical",
		Base:      [2]time.Duration{20 * time.Millisecond, 40 * time.Millisecond},
		TailShare: 0.02,
		TailRange: [2]time.Duration{150 * time.Millisecond, 300 * time.Millisecond},
	}
)

// Profiles lists the named latency profiles.
var Profiles = []Profile{NoLatency, Typical}

// LatencyProfile returns the profile called name: "none" (or "") or
// "typical".
func LatencyProfile(name string) (Profile, error) {
	if name == "" {
		return NoLatency, nil
	}
	for _, p := range Profiles {
		if p.Name == name {
			return p, nil
		}
	}
	return Profile{}, fmt.Errorf("faultproxy: no latency profile %q; the profiles are none, typical", name)
}

// IsNone reports whether the profile adds no delay.
func (p Profile) IsNone() bool {
	return p.Base[1] <= 0 && (p.TailShare <= 0 || p.TailRange[1] <= 0)
}

// String returns the profile's name.
func (p Profile) String() string { return p.Name }

// Delays draws the delays of a Profile from its own seeded RNG, apart
// from any fault draws, so two runs with the same seed see the same
// sequence of delays (in the order requests arrive). It is safe for
// concurrent use.
type Delays struct {
	profile Profile
	mu      sync.Mutex
	rng     *rand.Rand
}

// NewDelays returns the delays of p drawn from an RNG seeded with seed.
func NewDelays(p Profile, seed uint64) *Delays {
	return &Delays{profile: p, rng: rand.New(rand.NewPCG(seed, 0x1a7e))}
}

// Profile returns the profile the delays are drawn from.
func (l *Delays) Profile() Profile { return l.profile }

// Next draws the next request's delay; 0 for a nil Delays or the none
// profile.
func (l *Delays) Next() time.Duration {
	if l == nil || l.profile.IsNone() {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.profile.Base
	if l.rng.Float64() < l.profile.TailShare {
		r = l.profile.TailRange
	}
	if r[1] <= r[0] {
		return r[0]
	}
	return r[0] + time.Duration(l.rng.Int64N(int64(r[1]-r[0])))
}

// sleep waits d or until ctx is done, and reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// Slow returns s with each request delayed by a draw of l: half before
// the request reaches s (so a write lands mid-way through the round
// trip, as over a network) and the rest before its answer returns. It
// puts a latency profile under a store without a proxy, such as the
// mem store in tests; a nil l or the none profile returns s.
func Slow(s store.Store, l *Delays) store.Store {
	if l == nil || l.profile.IsNone() {
		return s
	}
	return &slowStore{inner: s, l: l}
}

type slowStore struct {
	inner store.Store
	l     *Delays
}

var _ store.Store = (*slowStore)(nil)

// around delays half of one draw before call and the rest after it. A
// context done during the first half fails the request unsent.
func (s *slowStore) around(ctx context.Context, call func() error) error {
	d := s.l.Next()
	if !sleep(ctx, d/2) {
		return ctx.Err()
	}
	err := call()
	sleep(ctx, d-d/2)
	return err
}

func (s *slowStore) Get(ctx context.Context, key string) (o store.Object, err error) {
	err = s.around(ctx, func() error { o, err = s.inner.Get(ctx, key); return err })
	return o, err
}

func (s *slowStore) Head(ctx context.Context, key string) (i store.Info, err error) {
	err = s.around(ctx, func() error { i, err = s.inner.Head(ctx, key); return err })
	return i, err
}

func (s *slowStore) PutIfAbsent(ctx context.Context, key string, body []byte, opts ...store.PutOption) (e string, err error) {
	err = s.around(ctx, func() error { e, err = s.inner.PutIfAbsent(ctx, key, body, opts...); return err })
	return e, err
}

func (s *slowStore) PutIfMatch(ctx context.Context, key string, body []byte, etag string, opts ...store.PutOption) (e string, err error) {
	err = s.around(ctx, func() error { e, err = s.inner.PutIfMatch(ctx, key, body, etag, opts...); return err })
	return e, err
}

func (s *slowStore) Put(ctx context.Context, key string, body []byte, opts ...store.PutOption) (e string, err error) {
	err = s.around(ctx, func() error { e, err = s.inner.Put(ctx, key, body, opts...); return err })
	return e, err
}

func (s *slowStore) Delete(ctx context.Context, key string) error {
	return s.around(ctx, func() error { return s.inner.Delete(ctx, key) })
}

func (s *slowStore) List(ctx context.Context, prefix, startAfter string, limit int) (p store.Page, err error) {
	err = s.around(ctx, func() error { p, err = s.inner.List(ctx, prefix, startAfter, limit); return err })
	return p, err
}

func (s *slowStore) Versions(ctx context.Context, key, after string, limit int) (v store.VersionPage, err error) {
	err = s.around(ctx, func() error { v, err = s.inner.Versions(ctx, key, after, limit); return err })
	return v, err
}

func (s *slowStore) GetVersion(ctx context.Context, key, versionID string) (o store.Object, err error) {
	err = s.around(ctx, func() error { o, err = s.inner.GetVersion(ctx, key, versionID); return err })
	return o, err
}
