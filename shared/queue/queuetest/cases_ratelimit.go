package queuetest

import (
	"errors"
	"math"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/store"
)

// runRateLimit: a queue's max_per_second and burst bound the tasks
// started a second by every process together; a claim held back says
// how long to wait; bad values are refused; a change holds from the next
// start and touches nothing started.
func runRateLimit(t *testing.T, f Factory) {
	t.Run("several_processes_racing_for_tasks_start_no_more_than_the_limit", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		const rate, burst, tasks = 4.0, 2, 40
		e.declare(queues.Declaration{Name: "paced", MaxPerSecond: ptrTo(rate), Burst: ptrTo(burst)}, t0)
		for i := range tasks {
			e.submit(queue.SubmitRequest{Queue: "paced", Input: jsonOf(i)}, t0)
		}
		procs := make([]*queue.Queue, 4) // four containers over one bucket
		for i := range procs {
			procs[i] = e.reopen()
		}
		var (
			mu     sync.Mutex
			starts []time.Time
			held   int
		)
		// Every 125ms of the clock, each process makes two claims at
		// once (one of them of several tasks), all racing.
		for step := 0; step < 120 && len(starts) < tasks; step++ {
			now := t0.Add(time.Second + time.Duration(step)*125*time.Millisecond)
			var wg sync.WaitGroup
			for p, q := range procs {
				for c := range 2 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						cs, err := q.Claim(ctx, queue.ClaimRequest{Queue: "paced", LeaseFor: time.Hour, MaxTasks: 1 + 2*c}, now)
						var rl *queue.RateLimitedError
						switch {
						case errors.As(err, &rl):
							if rl.RetryAfter <= 0 || rl.RetryAfter > time.Duration(float64(time.Second)/rate)*burst {
								t.Errorf("process %d: retry after %s", p, rl.RetryAfter)
							}
							mu.Lock()
							held++
							mu.Unlock()
						case err != nil:
							t.Errorf("process %d: claim: %v", p, err)
						}
						mu.Lock()
						for range cs {
							starts = append(starts, now)
						}
						mu.Unlock()
					}()
				}
			}
			wg.Wait()
		}
		if len(starts) != tasks {
			t.Fatalf("%d of %d tasks started", len(starts), tasks)
		}
		if held == 0 {
			t.Fatal("no claim was held back")
		}
		wantWithinRate(t, starts, rate, burst)
		// Every task started once.
		seen := map[string]bool{}
		for _, task := range e.list(queue.ListRequest{Queue: "paced", Status: queue.StatusRunning, Limit: 100}) {
			if task.Attempt != 1 || seen[task.ID] {
				t.Fatalf("task %s: attempt %d, seen %v", task.ID, task.Attempt, seen[task.ID])
			}
			seen[task.ID] = true
		}
		if len(seen) != tasks {
			t.Fatalf("%d tasks running, want %d", len(seen), tasks)
		}
	})

	t.Run("a_claim_held_back_returns_how_long_to_wait_and_costs_no_request_it_need_not", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		e.declare(queues.Declaration{Name: "slow", MaxPerSecond: ptrTo(2.0)}, t0) // burst: 2
		counting := store.NewCounting(e.s)
		q := e.open(counting)
		claim := func(q *queue.Queue, now time.Time) ([]queue.Claimed, error) {
			return q.Claim(ctx, queue.ClaimRequest{Queue: "slow", LeaseFor: time.Hour, MaxTasks: 5}, now)
		}
		// An empty queue: one LIST, the rate state untouched.
		if cs, err := claim(q, t0); err != nil || len(cs) != 0 {
			t.Fatalf("empty: %d, %v", len(cs), err)
		}
		if c := counting.Counts(); c.Total() != 2 || c.List != 1 { // the declaration's GET and the LIST
			t.Fatalf("empty claim: %s", c)
		}
		for i := range 5 {
			e.submit(queue.SubmitRequest{Queue: "slow", Input: jsonOf(i)}, t0)
		}
		now := t0.Add(time.Second)
		cs, err := claim(q, now)
		if err != nil || len(cs) != 2 {
			t.Fatalf("first claim: %d tasks, %v; want the burst, 2", len(cs), err)
		}
		before := counting.Counts()
		_, err = claim(q, now)
		var rl *queue.RateLimitedError
		if !errors.As(err, &rl) || !errors.Is(err, queue.ErrRateLimited) || rl.Queue != "slow" || rl.RetryAfter != 500*time.Millisecond {
			t.Fatalf("second claim: %v, want held back 500ms", err)
		}
		if c := counting.Counts().Sub(before); c.Total() != 0 {
			t.Fatalf("a claim the remembered state holds back made requests: %s", c)
		}
		// Another process, which has not seen the state, finds out by
		// reading it, and writes nothing.
		other := store.NewCounting(e.s)
		_, err = claim(e.open(other), now.Add(200*time.Millisecond))
		if !errors.As(err, &rl) || rl.RetryAfter != 300*time.Millisecond {
			t.Fatalf("other process: %v, want held back 300ms", err)
		}
		if c := other.Counts(); c.Put != 0 {
			t.Fatalf("a held-back claim wrote: %s", c)
		}
		// Once the wait is over, one task (the burst is spent).
		cs, err = claim(q, now.Add(rl.RetryAfter+200*time.Millisecond))
		if err != nil || len(cs) != 1 {
			t.Fatalf("after the wait: %d tasks, %v; want 1", len(cs), err)
		}
		// A claim that starts a task costs one PUT more than without a limit.
		before = counting.Counts()
		cs, err = claim(q, now.Add(time.Second))
		if err != nil || len(cs) != 1 {
			t.Fatalf("later: %d tasks, %v", len(cs), err)
		}
		if c := counting.Counts().Sub(before); c.Put != 2 {
			t.Fatalf("a claim of one task: %s; want 2 PUTs (the record and the rate state)", c)
		}
	})

	t.Run("bad_rate_values_are_refused_naming_the_field_and_write_nothing", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		kept := e.declare(queues.Declaration{Name: "kept", MaxPerSecond: ptrTo(3.0)}, t0)
		for _, c := range []struct {
			rate  *float64
			burst *int
			field string
		}{
			{ptrTo(-1.0), nil, "max_per_second"},
			{ptrTo(0.0), nil, "max_per_second"},
			{ptrTo(math.NaN()), nil, "max_per_second"},
			{ptrTo(math.Inf(1)), nil, "max_per_second"},
			{ptrTo(0.0001), nil, "max_per_second"},
			{ptrTo(1e6), nil, "max_per_second"},
			{ptrTo(10.0), ptrTo(0), "burst"},
			{ptrTo(10.0), ptrTo(-2), "burst"},
			{ptrTo(10.0), ptrTo(queue.MaxBurst + 1), "burst"},
			{nil, ptrTo(5), "burst"},
		} {
			for _, name := range []string{"fresh", "kept"} {
				_, _, err := e.decls.Declare(ctx, queues.Declaration{Name: name, MaxPerSecond: c.rate, Burst: c.burst}, t0.Add(time.Second))
				var ve *queue.ValidationError
				if !errors.As(err, &ve) || ve.Field != c.field || !errors.Is(err, queue.ErrInvalidInput) {
					t.Fatalf("%s: rate %v burst %v: %v; want invalid %s", name, orNil(c.rate), orNil(c.burst), err, c.field)
				}
			}
		}
		if keys := e.keys(queue.QueuePrefix("fresh")); len(keys) != 0 {
			t.Fatalf("a refused declaration wrote %v", keys)
		}
		got, err := e.reopenDecls().Get(ctx, "kept", t0.Add(time.Minute))
		if err != nil || *got.MaxPerSecond != 3 || got.Burst != nil || !got.UpdatedAt.Equal(kept.UpdatedAt) {
			t.Fatalf("kept: %+v, %v", got, err)
		}
		// Fractions are allowed, and the bounds themselves.
		for _, r := range []float64{queue.MinPerSecond, 0.5, queue.MaxPerSecondLimit} {
			e.declare(queues.Declaration{Name: "fine", MaxPerSecond: ptrTo(r), Burst: ptrTo(queue.MaxBurst)}, t0)
		}
	})

	t.Run("changing_the_rate_touches_nothing_started_and_holds_from_the_next_start", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		e.declare(queues.Declaration{Name: "tuned", MaxPerSecond: ptrTo(1.0)}, t0)
		for i := range 7 {
			e.submit(queue.SubmitRequest{Queue: "tuned", Input: jsonOf(i)}, t0)
		}
		claim := func(now time.Time) ([]queue.Claimed, time.Duration) {
			t.Helper()
			cs, err := e.reopen().Claim(ctx, queue.ClaimRequest{Queue: "tuned", LeaseFor: time.Hour, MaxTasks: 10}, now)
			var rl *queue.RateLimitedError
			if errors.As(err, &rl) {
				return nil, rl.RetryAfter
			}
			if err != nil {
				t.Fatal(err)
			}
			return cs, 0
		}
		first, _ := claim(t0)
		if len(first) != 1 {
			t.Fatalf("first claim: %d tasks", len(first))
		}
		// Slower: one per 10s. The next start is allowed at once (the old
		// interval has passed), the one after 10s later.
		e.declare(queues.Declaration{Name: "tuned", MaxPerSecond: ptrTo(0.1)}, t0.Add(time.Second))
		if cs, _ := claim(t0.Add(time.Second)); len(cs) != 1 {
			t.Fatalf("after slowing: %d tasks, want 1", len(cs))
		}
		if _, wait := claim(t0.Add(2 * time.Second)); wait != 9*time.Second {
			t.Fatalf("after slowing: wait %s, want 9s", wait)
		}
		// Faster: 100 a second, a burst of 3. A state set under the slow
		// rate (the next start at t0+11s) holds no longer: one task starts
		// at once, then the new rate holds.
		e.declare(queues.Declaration{Name: "tuned", MaxPerSecond: ptrTo(100.0), Burst: ptrTo(3)}, t0.Add(3*time.Second))
		if cs, wait := claim(t0.Add(3 * time.Second)); len(cs) != 1 {
			t.Fatalf("after speeding up: %d tasks, wait %s; want 1", len(cs), wait)
		}
		if _, wait := claim(t0.Add(3 * time.Second)); wait != 10*time.Millisecond {
			t.Fatalf("after speeding up: wait %s, want 10ms", wait)
		}
		if cs, _ := claim(t0.Add(3*time.Second + 30*time.Millisecond)); len(cs) != 3 {
			t.Fatalf("after speeding up: %d tasks, want the burst, 3", len(cs))
		}
		// The task started first is untouched: its lease and attempt hold,
		// and it completes with its token.
		got := e.get(first[0].Task.ID)
		if got.Status != queue.StatusRunning || got.Attempt != 1 || got.LeaseToken != first[0].Lease.Token ||
			!got.LeaseExpiresAt.Equal(first[0].Lease.ExpiresAt) {
			t.Fatalf("first task after the changes: %s attempt %d", got.Status, got.Attempt)
		}
		if _, err := e.q.Complete(ctx, queue.CompleteRequest{ID: e.ref(first[0].Task.ID), LeaseToken: first[0].Lease.Token}, t0.Add(4*time.Second)); err != nil {
			t.Fatal(err)
		}
		// Removing the limit: every task left starts at once.
		e.declare(queues.Declaration{Name: "tuned"}, t0.Add(5*time.Second))
		if cs, wait := claim(t0.Add(5 * time.Second)); len(cs) != 1 || wait != 0 {
			t.Fatalf("without a limit: %d tasks, wait %s; want the last one", len(cs), wait)
		}
	})

	t.Run("a_process_whose_clock_lags_is_held_back_not_let_through", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		e.declare(queues.Declaration{Name: "skewed", MaxPerSecond: ptrTo(1.0)}, t0) // burst 1
		for i := range 3 {
			e.submit(queue.SubmitRequest{Queue: "skewed", Input: jsonOf(i)}, t0)
		}
		ahead := t0.Add(time.Minute)
		if cs, err := e.reopen().Claim(ctx, queue.ClaimRequest{Queue: "skewed", LeaseFor: time.Hour}, ahead); err != nil || len(cs) != 1 {
			t.Fatalf("the process ahead: %d tasks, %v", len(cs), err)
		}
		// 50s behind: the next start is a second after the one ahead's.
		_, err := e.reopen().Claim(ctx, queue.ClaimRequest{Queue: "skewed", LeaseFor: time.Hour}, ahead.Add(-50*time.Second))
		var rl *queue.RateLimitedError
		if !errors.As(err, &rl) || rl.RetryAfter != 51*time.Second {
			t.Fatalf("the process behind: %v; want held back 51s", err)
		}
	})

	t.Run("a_process_that_lost_a_race_reads_the_state_before_it_tries_and_spreads_its_waits", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		e.declare(queues.Declaration{Name: "raced", MaxPerSecond: ptrTo(2.0), Burst: ptrTo(1)}, t0) // one every 500ms
		for i := range 5 {
			e.submit(queue.SubmitRequest{Queue: "raced", Input: jsonOf(i)}, t0)
		}
		a := e.reopen()
		counting := store.NewCounting(e.s)
		b := e.open(counting)
		claim := func(q *queue.Queue, now time.Time) (int, time.Duration) {
			t.Helper()
			cs, err := q.Claim(ctx, queue.ClaimRequest{Queue: "raced", LeaseFor: time.Hour}, now)
			var rl *queue.RateLimitedError
			if errors.As(err, &rl) {
				return 0, rl.RetryAfter
			}
			if err != nil {
				t.Fatal(err)
			}
			return len(cs), 0
		}
		at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
		if n, _ := claim(b, at(1000)); n != 1 {
			t.Fatalf("b's first claim: %d tasks", n)
		}
		if n, _ := claim(a, at(1500)); n != 1 {
			t.Fatalf("a's claim: %d tasks", n)
		}
		// b still remembers the state before a's start: it tries, loses
		// the race, reads the state and is held back until 2000ms, plus
		// up to one interval at random.
		n, wait := claim(b, at(1500))
		if n != 0 || wait < 500*time.Millisecond || wait >= time.Second {
			t.Fatalf("b after losing: %d tasks, wait %s; want held back 500ms to 1s", n, wait)
		}
		if n, _ := claim(a, at(2000)); n != 1 {
			t.Fatalf("a's second claim: %d tasks", n)
		}
		// Contended now: b reads the state before it lists, sees a's start
		// and neither lists nor writes.
		before := counting.Counts()
		n, wait = claim(b, at(2000))
		if c := counting.Counts().Sub(before); n != 0 || c.Get != 1 || c.Put != 0 || c.List != 0 {
			t.Fatalf("b at 2000ms: %d tasks, %s; want one GET and nothing else", n, c)
		}
		if wait < 500*time.Millisecond || wait >= time.Second {
			t.Fatalf("b at 2000ms: wait %s; want 500ms to 1s", wait)
		}
	})

	t.Run("max_concurrency_still_applies_under_a_rate_limit", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		e.declare(queues.Declaration{Name: "both", MaxConcurrency: 1, MaxPerSecond: ptrTo(100.0)}, t0)
		for i := range 3 {
			e.submit(queue.SubmitRequest{Queue: "both", Input: jsonOf(i)}, t0)
		}
		cs, err := e.q.Claim(ctx, queue.ClaimRequest{Queue: "both", LeaseFor: time.Hour, MaxTasks: 3}, t0.Add(time.Second))
		if err != nil || len(cs) != 1 {
			t.Fatalf("claim: %d tasks, %v; want 1 (max_concurrency)", len(cs), err)
		}
		if cs, err := e.reopen().Claim(ctx, queue.ClaimRequest{Queue: "both", LeaseFor: time.Hour}, t0.Add(2*time.Second)); err != nil || len(cs) != 0 {
			t.Fatalf("second claim: %d tasks, %v; want none while the slot is held", len(cs), err)
		}
	})
}

// wantWithinRate fails unless every run of starts (sorted) keeps the
// limit: n starts from a to b are at most burst + (b−a)·rate.
func wantWithinRate(t *testing.T, starts []time.Time, rate float64, burst int) {
	t.Helper()
	sort.Slice(starts, func(i, j int) bool { return starts[i].Before(starts[j]) })
	for i := range starts {
		for j := i; j < len(starts); j++ {
			n := j - i + 1
			if allowed := float64(burst) + starts[j].Sub(starts[i]).Seconds()*rate; float64(n) > allowed+1e-9 {
				t.Fatalf("%d starts from %s to %s: more than %.2f", n, starts[i].Format(time.StampMilli), starts[j].Format(time.StampMilli), allowed)
			}
		}
	}
}

func orNil[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}
