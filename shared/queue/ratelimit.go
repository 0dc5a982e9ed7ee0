package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/s3q/s3q/shared/store"
)

// A queue's rate limit (max_per_second, burst) bounds how many of its
// tasks start a second, counting every claim of every process, pull or
// push, together. It is a GCRA (the generic cell rate algorithm, a token
// bucket kept as one time) in one object per queue, q/{queue}/rate.json:
// {"tat": T}, the theoretical arrival time of the next start. With the
// interval I = 1s/max_per_second and the tolerance τ = (burst−1)·I, a
// start at now is allowed when max(T, now) − τ <= now, and moves T to
// max(T, now) + I; n starts at once move it by n·I. So at most burst
// tasks start at once after a quiet spell and, over any window of w
// seconds, at most burst + w·max_per_second.
//
// Cost. The object is written only once a claim has found candidate
// tasks (an empty claim still costs one LIST): one conditional PUT
// (If-Match the version this Queue last wrote or read, If-None-Match for
// the first) grants up to as many starts as the claim has candidates.
// A Queue remembers the version and T it last saw, so in one process
// (the dispatcher, one API container) the cost is one PUT per claim that
// starts tasks (one per task with max_tasks 1), and a claim that its
// remembered T holds back costs no request at all: T only ever moves
// forward, so what holds back in the remembered state holds back in the
// stored one. A lost
// race (412: another process started tasks meanwhile) costs a GET and
// another PUT, at most rateAttempts times (a write whose answer was lost
// is recognised on that GET by its random "by" and keeps its grant); a claim that loses them all is
// held back one interval. After a lost race the state is contended for
// contendedFor: a claim reads it (a GET) before it lists whenever it
// would let a start through, and a wait it returns is spread by up to one
// interval at random, so that the processes held back look again one
// after another and all but the first see the start taken with a GET, not
// with a LIST and a lost PUT. bench ratelimit measures what several
// processes pay (docs/queues.md).
//
// How close it holds. Never above: a start is granted only by a write
// that moved T, and each grant is a task started at most. It may run
// below: a grant whose candidate another claimer wins is carried to
// the claim's next candidate, and lost when the claim ends without one;
// a claim held back waits out its Retry-After before it looks again.
//
// Changing the limit changes nothing already started; the next grant
// reads the new interval and tolerance. The state records the settings
// that set T: under other settings, a T further ahead than the new
// ones could have set (a lower burst, a higher rate) is taken as
// now + τ: one task may start at once, and the new limit holds from
// there on. Under the same settings T is never moved back, so a process
// whose clock lags another's is held back longer, never let through
// (clock skew between processes costs rate, never the limit), up to
// rateSkewBound: a T further ahead than that is not trusted (a hand
// edit or a corrupted write must not stop a queue for years) and is
// taken as now + τ. An unreadable state is taken as no state and
// replaced by the next grant; a deleted one as a quiet spell (up to
// burst tasks may start at once). While a
// process still holds the old declaration (its cache time, 30s) the two
// settings alternate in the state, each switch letting one task more
// start.

// Limits of a queue's rate limit.
const (
	// MinPerSecond is the lowest max_per_second: one task per 1,000
	// seconds.
	MinPerSecond = 0.001
	// MaxPerSecondLimit is the highest max_per_second: the rate object
	// takes a conditional write per grant, and one S3 key takes a few
	// thousand writes a second at most.
	MaxPerSecondLimit = 1000
	// MaxBurst is the highest burst.
	MaxBurst = 1000
	// rateAttempts bounds the conditional writes of one grant.
	rateAttempts = 6
	// rateSkewBound bounds how far a rate state's T is trusted beyond
	// what a grant sets it to (now + τ + one interval): the clock skew
	// between two processes. S3 refuses a request signed more than 15
	// minutes off its own clock, so two processes that reach it differ
	// by 30 minutes at most. A T further ahead (a hand edit, a corrupted
	// or foreign write) is taken as now + τ, so one bad write holds a
	// queue back τ + one interval + 30 minutes at most, never for years.
	rateSkewBound = 30 * time.Minute
)

// DefaultBurst is the burst of a queue that declares max_per_second and
// no burst: one second's worth, at least 1.
func DefaultBurst(perSecond float64) int {
	return max(1, int(math.Ceil(perSecond)))
}

// ValidateRate checks a declaration's max_per_second and burst: a
// max_per_second, when given (non-nil), is a number from MinPerSecond to
// MaxPerSecondLimit; a burst, when given, is 1 to MaxBurst and needs a
// max_per_second. A bad one is a *ValidationError naming it.
func ValidateRate(perSecond *float64, burst *int) error {
	if perSecond != nil {
		v := *perSecond
		if math.IsNaN(v) || math.IsInf(v, 0) || v < MinPerSecond || v > MaxPerSecondLimit {
			return invalid("max_per_second", "must be a number from %g to %d (tasks started a second; leave it out for no limit)", MinPerSecond, MaxPerSecondLimit)
		}
	}
	if burst != nil {
		if *burst < 1 || *burst > MaxBurst {
			return invalid("burst", "must be between 1 and %d (leave it out for one second's worth)", MaxBurst)
		}
		if perSecond == nil {
			return invalid("burst", "needs max_per_second")
		}
	}
	return nil
}

// RateKey is the key of a queue's rate state: q/{queue}/rate.json.
func RateKey(queue string) string { return QueuePrefix(queue) + "rate.json" }

// rateState is the body of RateKey.
type rateState struct {
	// TAT is the theoretical arrival time of the next start.
	TAT time.Time `json:"tat"`
	// PerSecond and Burst are the settings of the grant that set it.
	PerSecond float64 `json:"per_second,omitempty"`
	Burst     int     `json:"burst,omitempty"`
	// By is a random token of the write, unique to it: a writer whose
	// answer was lost recognises its own write on a re-read.
	By string `json:"by,omitempty"`
}

// settingsOf is the state's record of s's limit (Burst with its default).
func settingsOf(s Settings) (float64, int) {
	burst := s.Burst
	if burst <= 0 {
		burst = DefaultBurst(s.MaxPerSecond)
	}
	return s.MaxPerSecond, burst
}

// rateParams returns the interval and tolerance of s's limit.
func rateParams(s Settings) (interval, tau time.Duration) {
	perSecond, burst := settingsOf(s)
	interval = time.Duration(float64(time.Second) / perSecond)
	return interval, time.Duration(burst-1) * interval
}

// gcra grants up to want starts at now from tat, set under other
// settings when changed: it returns how many, the new tat and, when none,
// how long until one is allowed.
func gcra(tat time.Time, changed bool, want int, interval, tau time.Duration, now time.Time) (int, time.Time, time.Duration) {
	if tat.Before(now) {
		tat = now
	}
	if (changed && tat.After(now.Add(tau+interval))) || tat.After(now.Add(tau+interval+rateSkewBound)) {
		// Set under other settings (a higher burst, a lower rate), or
		// further ahead than any grant could set it from a clock within
		// rateSkewBound of this one (a hand edit, a bad write): one
		// start now, then the limit holds from there.
		tat = now.Add(tau)
	}
	room := now.Add(tau).Sub(tat)
	if room < 0 {
		return 0, tat, -room
	}
	n := want
	if interval > 0 {
		n = min(want, int(room/interval)+1)
	}
	return n, tat.Add(time.Duration(n) * interval), 0
}

// rateLimits are a Queue's remembered rate states, one per queue.
type rateLimits struct {
	mu sync.Mutex
	by map[string]*rateEntry
}

// rateEntry is what a Queue last saw of one queue's rate state. Its mutex
// is held across a grant's requests, so the Queue's own claims never race
// each other for it.
type rateEntry struct {
	mu    sync.Mutex
	known bool      // read or written by this Queue
	etag  string    // its version ("": absent)
	st    rateState // its body
	// lostAt is when this Queue last lost a race for it (a 412): another
	// process grants starts too (contended).
	lostAt time.Time
}

// contendedFor is how long after a lost race a Queue takes its queue's
// rate state as contended.
const contendedFor = 10 * time.Second

// contended reports whether another process took a grant this Queue
// raced for lately, at now.
func (e *rateEntry) contended(now time.Time) bool {
	return !e.lostAt.IsZero() && now.Sub(e.lostAt) < contendedFor
}

// spread is wait, plus up to one interval at random when the state is
// contended: processes held back by one state then look again one after
// another, the first taking the start and the others seeing it with a
// GET, rather than all at once with a LIST and a PUT that all but one
// lose.
func (e *rateEntry) spread(wait, interval time.Duration, now time.Time) time.Duration {
	if wait > 0 && interval > 0 && e.contended(now) {
		wait += rand.N(interval)
	}
	return wait
}

// changed reports whether the state was set under other settings than
// s's.
func (e *rateEntry) changed(s Settings) bool {
	rate, burst := settingsOf(s)
	return e.st.PerSecond != rate || e.st.Burst != burst
}

func (r *rateLimits) entry(name string) *rateEntry {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.by == nil {
		r.by = map[string]*rateEntry{}
	}
	e := r.by[name]
	if e == nil {
		e = &rateEntry{}
		r.by[name] = e
	}
	return e
}

// heldFor returns how long the rate state of s's queue holds every
// start back at now (0: it may not; a grant decides). It makes no request
// unless the state is contended (this Queue lost a race for it lately)
// and the remembered state would let a start through: then it reads it
// again first (a GET), since other processes have likely moved it, and a
// GET costs less than the LIST and the failed PUT a claim would make to
// find out.
func (q *Queue) heldFor(ctx context.Context, s Settings, now time.Time) (time.Duration, error) {
	if s.MaxPerSecond <= 0 {
		return 0, nil
	}
	e := q.rates.entry(s.Name)
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.known {
		return 0, nil
	}
	interval, tau := rateParams(s)
	_, _, wait := gcra(e.st.TAT, e.changed(s), 1, interval, tau, now)
	if wait > 0 || !e.contended(now) {
		return e.spread(wait, interval, now), nil
	}
	if err := q.readRate(ctx, e, s.Name); err != nil {
		return 0, err
	}
	_, _, wait = gcra(e.st.TAT, e.changed(s), 1, interval, tau, now)
	return e.spread(wait, interval, now), nil
}

// readRate reads the rate state of queue name into e, which is locked.
func (q *Queue) readRate(ctx context.Context, e *rateEntry, name string) error {
	obj, err := q.store.Get(ctx, RateKey(name))
	switch {
	case errors.Is(err, store.ErrNotFound):
		e.etag, e.st = "", rateState{}
	case err != nil:
		e.known = false
		return fmt.Errorf("read rate state: %w", err)
	default:
		var st rateState
		_ = json.Unmarshal(obj.Body, &st) // unreadable: a zero T; the swap replaces it
		e.etag, e.st = obj.ETag, st
	}
	e.known = true
	return nil
}

// grantStarts asks s's queue's rate limit for up to want starts at now. It
// returns how many it granted (each written into the rate state: a grant
// unused is lost) and, when none, how long until one may be.
func (q *Queue) grantStarts(ctx context.Context, s Settings, want int, now time.Time) (int, time.Duration, error) {
	interval, tau := rateParams(s)
	key := RateKey(s.Name)
	e := q.rates.entry(s.Name)
	e.mu.Lock()
	defer e.mu.Unlock()
	for range rateAttempts {
		if !e.known {
			if err := q.readRate(ctx, e, s.Name); err != nil {
				return 0, 0, err
			}
		}
		n, tat, wait := gcra(e.st.TAT, e.changed(s), want, interval, tau, now)
		if n == 0 {
			return 0, e.spread(wait, interval, now), nil
		}
		rate, burst := settingsOf(s)
		by := strconv.FormatUint(rand.Uint64(), 36)
		next := rateState{TAT: tat, PerSecond: rate, Burst: burst, By: by}
		body, _ := json.Marshal(next)
		var etag string
		var err error
		creating := e.etag == ""
		if creating {
			etag, err = q.store.PutIfAbsent(ctx, key, body)
		} else {
			etag, err = q.store.PutIfMatch(ctx, key, body, e.etag)
		}
		if err == nil {
			e.etag, e.st = etag, next
			return n, 0, nil
		}
		// The write may have landed with its answer lost (or a retry of
		// it refused as changed by the landed one): read the state back;
		// if it is this write, the grant is this claim's.
		e.known = false
		if q.readRate(ctx, e, s.Name) == nil && e.st.By == by {
			return n, 0, nil
		}
		if creating && errors.Is(err, store.ErrPrecondition) && e.known && e.etag == "" {
			// Absent, yet If-None-Match refused: versitygw does so while
			// a delete marker is the key's current version (rate.json
			// deleted by hand), and no conditional create can succeed.
			// Write, unconditionally, a state that grants nothing: T =
			// now + τ + I, as if a whole burst had just started (racing
			// writers of it only hold back more); grants go on by
			// If-Match from it.
			hold := rateState{TAT: now.Add(tau + interval), PerSecond: rate, Burst: burst, By: by + "h"}
			hb, _ := json.Marshal(hold)
			e.known = false
			if etag, err := q.store.Put(ctx, key, hb); err == nil {
				e.known, e.etag, e.st = true, etag, hold
			}
			continue
		}
		switch {
		case errors.Is(err, store.ErrPrecondition) || errors.Is(err, store.ErrNotFound):
			e.lostAt = now // another process granted starts meanwhile
		case errors.Is(err, store.ErrRetryable):
			// A 409 or a throttle: try again from what was read.
		default:
			e.known = false
			return 0, 0, fmt.Errorf("write rate state: %w", err)
		}
	}
	return 0, e.spread(interval, interval, now), nil
}

// rateOf is s's max_per_second for a view (nil: no limit).
func rateOf(s Settings) *float64 {
	if s.MaxPerSecond <= 0 {
		return nil
	}
	v := s.MaxPerSecond
	return &v
}

// burstOf is s's burst, its default filled in, for a view (nil: no limit).
func burstOf(s Settings) *int {
	if s.MaxPerSecond <= 0 {
		return nil
	}
	_, b := settingsOf(s)
	return &b
}
