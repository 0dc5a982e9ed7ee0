package queuetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/internal/check"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/store"
	"github.com/s3q/s3q/shared/store/storefault"
)

// runRateLimitAttack: a queue's rate limit under a careless or hostile
// caller and a faulty store: lost answers on the rate state's write, a
// failed read of it, a corrupted, hand-edited or deleted rate.json, a
// queue deleted and declared again, batch claims, a burst beyond
// max_concurrency, and the queues beside a limited one. Never above the
// limit, never a task started twice, never a queue stopped for long.
func runRateLimitAttack(t *testing.T, f Factory) {
	t.Run("a_lost_answer_on_the_rate_write_starts_nothing_twice_keeps_the_limit_and_never_stalls", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		const rate, burst, tasks = 2.0, 1, 6
		e.declare(queues.Declaration{Name: "lossy", MaxPerSecond: ptrTo(rate), Burst: ptrTo(burst)}, t0)
		for i := range tasks {
			e.submit(queue.SubmitRequest{Queue: "lossy", Input: jsonOf(i)}, t0)
		}
		fs := storefault.New(e.s)
		q := e.open(fs)
		var starts []time.Time
		seen := map[string]bool{}
		lost := 0
		for step := 0; step < 200 && len(seen) < tasks; step++ {
			now := t0.Add(time.Second + time.Duration(step)*100*time.Millisecond)
			lost += fs.Hits()
			if step%3 == 0 { // every rate write loses its answer (S3 applies it)
				fs.FailMatching("", queue.RateKey("lossy"), storefault.LoseAnswer, 1)
			}
			cs, err := q.Claim(ctx, queue.ClaimRequest{Queue: "lossy", LeaseFor: time.Hour, MaxTasks: 2}, now)
			var rl *queue.RateLimitedError
			if err != nil && !errors.As(err, &rl) && !errors.Is(err, store.ErrRetryable) {
				t.Fatalf("step %d: %v", step, err)
			}
			for _, c := range cs {
				if seen[c.Task.ID] {
					t.Fatalf("task %s started twice", c.Task.ID)
				}
				seen[c.Task.ID] = true
				starts = append(starts, now)
			}
		}
		if lost += fs.Hits(); lost < tasks {
			t.Fatalf("%d rate writes lost their answers; want one a task at least", lost)
		}
		if len(seen) != tasks {
			t.Fatalf("%d of %d tasks started: the queue stalled", len(seen), tasks)
		}
		wantWithinRate(t, starts, rate, burst)
	})

	t.Run("a_failed_read_of_the_rate_state_fails_the_claim_starts_nothing_and_the_next_claim_works", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		e.declare(queues.Declaration{Name: "unread", MaxPerSecond: ptrTo(1.0)}, t0)
		e.submit(queue.SubmitRequest{Queue: "unread", Input: jsonOf(1)}, t0)
		bad := &rateReadFault{Store: e.s, key: queue.RateKey("unread"), left: 1}
		q := e.open(bad)
		now := t0.Add(time.Second)
		cs, err := q.Claim(ctx, queue.ClaimRequest{Queue: "unread", LeaseFor: time.Hour}, now)
		if err == nil || len(cs) != 0 || !errors.Is(err, store.ErrRetryable) {
			t.Fatalf("claim over a failed read: %d tasks, %v; want a retryable error", len(cs), err)
		}
		if running := e.list(queue.ListRequest{Queue: "unread", Status: queue.StatusRunning, Limit: 10}); len(running) != 0 {
			t.Fatalf("a failed claim started %d tasks", len(running))
		}
		if cs, err := q.Claim(ctx, queue.ClaimRequest{Queue: "unread", LeaseFor: time.Hour}, now); err != nil || len(cs) != 1 {
			t.Fatalf("the next claim: %d tasks, %v; want 1", len(cs), err)
		}
	})

	t.Run("a_corrupted_or_hand_edited_rate_state_holds_a_queue_back_a_bounded_time", func(t *testing.T) {
		t.Parallel()
		now := t0.Add(time.Hour)
		for _, c := range []struct {
			name, body string
			held       bool // the state holds back (a T within the skew bound)
		}{
			{"garbage", `not json{`, false},
			{"a_number_for_the_time", `{"tat": 5, "per_second": 1, "burst": 1}`, false},
			{"an_array", `[]`, false},
			{"years_ahead_under_the_same_settings", `{"tat":"9999-12-31T00:00:00Z","per_second":1,"burst":1}`, false},
			{"a_day_ahead_under_the_same_settings", `{"tat":"` + now.Add(24*time.Hour).Format(time.RFC3339Nano) + `","per_second":1,"burst":1}`, false},
			{"years_ahead_under_other_settings", `{"tat":"9999-12-31T00:00:00Z","per_second":0.001,"burst":7}`, false},
			{"negative_settings", `{"tat":"9999-12-31T00:00:00Z","per_second":-1,"burst":-1}`, false},
			{"ten_minutes_ahead_under_the_same_settings", `{"tat":"` + now.Add(10*time.Minute).Format(time.RFC3339Nano) + `","per_second":1,"burst":1}`, true},
		} {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				e := newEnv(t, f)
				e.declare(queues.Declaration{Name: "edited", MaxPerSecond: ptrTo(1.0), Burst: ptrTo(1)}, t0)
				for i := range 3 {
					e.submit(queue.SubmitRequest{Queue: "edited", Input: jsonOf(i)}, t0)
				}
				if _, err := e.s.Put(ctx, queue.RateKey("edited"), []byte(c.body)); err != nil {
					t.Fatal(err)
				}
				cs, err := e.reopen().Claim(ctx, queue.ClaimRequest{Queue: "edited", LeaseFor: time.Hour, MaxTasks: 3}, now)
				var rl *queue.RateLimitedError
				if c.held {
					// Within the bound it is a clock ahead: held back, and
					// never beyond τ + I + 30 minutes.
					if !errors.As(err, &rl) || rl.RetryAfter <= 0 || rl.RetryAfter > time.Second+30*time.Minute {
						t.Fatalf("claim: %d tasks, %v; want held back at most 30m1s", len(cs), err)
					}
					return
				}
				if err != nil || len(cs) != 1 {
					t.Fatalf("claim: %d tasks, %v; want one task at once (burst 1)", len(cs), err)
				}
				// And the limit holds from there: the next start a second on.
				_, err = e.reopen().Claim(ctx, queue.ClaimRequest{Queue: "edited", LeaseFor: time.Hour}, now)
				if !errors.As(err, &rl) || rl.RetryAfter != time.Second {
					t.Fatalf("the next claim: %v; want held back 1s", err)
				}
				if cs, err := e.reopen().Claim(ctx, queue.ClaimRequest{Queue: "edited", LeaseFor: time.Hour}, now.Add(time.Second)); err != nil || len(cs) != 1 {
					t.Fatalf("a second on: %d tasks, %v", len(cs), err)
				}
			})
		}
	})

	t.Run("a_rate_state_deleted_mid_run_lets_at_most_a_burst_start_and_the_limit_holds_on", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		const rate, burst = 1.0, 2
		e.declare(queues.Declaration{Name: "wiped", MaxPerSecond: ptrTo(rate), Burst: ptrTo(burst)}, t0)
		for i := range 8 {
			e.submit(queue.SubmitRequest{Queue: "wiped", Input: jsonOf(i)}, t0)
		}
		now := t0.Add(time.Second)
		if cs := e.claim(queue.ClaimRequest{Queue: "wiped", LeaseFor: time.Hour, MaxTasks: 8}, now); len(cs) != burst {
			t.Fatalf("first claim: %d tasks; want the burst", len(cs))
		}
		if err := e.s.Delete(ctx, queue.RateKey("wiped")); err != nil {
			t.Fatal(err)
		}
		// A process that remembers the state is still held back by it.
		var rl *queue.RateLimitedError
		if _, err := e.q.Claim(ctx, queue.ClaimRequest{Queue: "wiped", LeaseFor: time.Hour, MaxTasks: 8}, now); !errors.As(err, &rl) {
			t.Fatalf("the process that remembers: %v; want held back", err)
		}
		// A fresh one sees a quiet spell: a burst, no more (on versitygw,
		// whose delete marker refuses the create, it writes a state that
		// grants nothing and is held back τ + I); then held back.
		other := e.reopen()
		cs, err := other.Claim(ctx, queue.ClaimRequest{Queue: "wiped", LeaseFor: time.Hour, MaxTasks: 8}, now)
		if len(cs) > burst || (err != nil && (!errors.As(err, &rl) || rl.RetryAfter > 3*time.Second)) {
			t.Fatalf("fresh process: %d tasks, %v; want at most the burst or held back 3s at most", len(cs), err)
		}
		if _, err := other.Claim(ctx, queue.ClaimRequest{Queue: "wiped", LeaseFor: time.Hour, MaxTasks: 8}, now); !errors.As(err, &rl) {
			t.Fatalf("fresh process again: %v; want held back", err)
		}
		// Never stalled: once the waits are over, processes that never
		// saw the state (restarted containers: none remembers a version
		// to swap) start tasks again, one a second, and so do the others.
		for i, q := range []*queue.Queue{e.reopen(), e.reopen(), e.q, other} {
			at := now.Add(time.Duration(4+i) * time.Second)
			if cs, err := q.Claim(ctx, queue.ClaimRequest{Queue: "wiped", LeaseFor: time.Hour}, at); err != nil || len(cs) != 1 {
				t.Fatalf("process %d at +%ds: %d tasks, %v; want 1", i, 4+i, len(cs), err)
			}
		}
	})

	t.Run("a_queue_deleted_and_declared_again_keeps_its_starts_counted_unless_its_settings_changed", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		finish := func(name string, cs []queue.Claimed, now time.Time) {
			for _, c := range cs {
				if err := completeTask(e.q, c.Task.Ref(), c.Lease.Token, now); err != nil {
					t.Fatal(err)
				}
			}
			if err := e.decls.Delete(ctx, name, now); err != nil {
				t.Fatalf("delete %s: %v", name, err)
			}
		}
		// Same settings: the old queue's start still counts.
		e.declare(queues.Declaration{Name: "again", MaxPerSecond: ptrTo(1.0), Burst: ptrTo(1)}, t0)
		e.submit(queue.SubmitRequest{Queue: "again", Input: jsonOf(1)}, t0)
		now := t0.Add(time.Second)
		finish("again", e.claim(queue.ClaimRequest{Queue: "again", LeaseFor: time.Hour}, now), now)
		if keys := e.keys(queue.RateKey("again")); len(keys) != 1 {
			t.Fatalf("the rate state after a delete: %v; want kept with the folder", keys)
		}
		e.declare(queues.Declaration{Name: "again", MaxPerSecond: ptrTo(1.0), Burst: ptrTo(1)}, now)
		e.submit(queue.SubmitRequest{Queue: "again", Input: jsonOf(2)}, now)
		_, err := e.reopen().Claim(ctx, queue.ClaimRequest{Queue: "again", LeaseFor: time.Hour}, now.Add(200*time.Millisecond))
		var rl *queue.RateLimitedError
		if !errors.As(err, &rl) || rl.RetryAfter != 800*time.Millisecond {
			t.Fatalf("declared again: %v; want held back 800ms", err)
		}
		// A slow old queue (one start every 100 s) declared again fast:
		// its state does not hold the new one back.
		e.declare(queues.Declaration{Name: "slowold", MaxPerSecond: ptrTo(0.01), Burst: ptrTo(1)}, t0)
		e.submit(queue.SubmitRequest{Queue: "slowold", Input: jsonOf(1)}, t0)
		finish("slowold", e.claim(queue.ClaimRequest{Queue: "slowold", LeaseFor: time.Hour}, now), now)
		e.declare(queues.Declaration{Name: "slowold", MaxPerSecond: ptrTo(10.0), Burst: ptrTo(1)}, now)
		e.submit(queue.SubmitRequest{Queue: "slowold", Input: jsonOf(2)}, now)
		if cs, err := e.reopen().Claim(ctx, queue.ClaimRequest{Queue: "slowold", LeaseFor: time.Hour}, now.Add(time.Second)); err != nil || len(cs) != 1 {
			t.Fatalf("declared again faster: %d tasks, %v; want 1", len(cs), err)
		}
	})

	t.Run("a_batch_claim_counts_every_task_it_starts_and_a_burst_beyond_max_concurrency_starts_no_more_than_the_slots", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		e.declare(queues.Declaration{Name: "batch", MaxPerSecond: ptrTo(1.0), Burst: ptrTo(3)}, t0)
		e.declare(queues.Declaration{Name: "slots", MaxConcurrency: 2, MaxPerSecond: ptrTo(100.0), Burst: ptrTo(50)}, t0)
		for i := range 10 {
			e.submit(queue.SubmitRequest{Queue: "batch", Input: jsonOf(i)}, t0)
			e.submit(queue.SubmitRequest{Queue: "slots", Input: jsonOf(i)}, t0)
		}
		now := t0.Add(time.Second)
		if cs := e.claim(queue.ClaimRequest{Queue: "batch", LeaseFor: time.Hour, MaxTasks: 10}, now); len(cs) != 3 {
			t.Fatalf("batch claim: %d tasks; want the burst, 3", len(cs))
		}
		var rl *queue.RateLimitedError
		if _, err := e.reopen().Claim(ctx, queue.ClaimRequest{Queue: "batch", LeaseFor: time.Hour, MaxTasks: 10}, now); !errors.As(err, &rl) || rl.RetryAfter != time.Second {
			t.Fatalf("after the batch: %v; want held back 1s (three starts counted)", err)
		}
		cs := e.claim(queue.ClaimRequest{Queue: "slots", LeaseFor: time.Hour, MaxTasks: 10}, now)
		if len(cs) != 2 {
			t.Fatalf("slots: %d tasks; want max_concurrency, 2", len(cs))
		}
		for _, c := range cs {
			if err := completeTask(e.q, c.Task.Ref(), c.Lease.Token, now); err != nil {
				t.Fatal(err)
			}
		}
		if cs := e.claim(queue.ClaimRequest{Queue: "slots", LeaseFor: time.Hour, MaxTasks: 10}, now.Add(time.Second)); len(cs) != 2 {
			t.Fatalf("slots again: %d tasks; want 2", len(cs))
		}
	})

	t.Run("a_queue_held_back_by_its_limit_holds_back_no_other_queue", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		e.declare(queues.Declaration{Name: "limited", MaxPerSecond: ptrTo(0.01), Burst: ptrTo(1)}, t0)
		e.declare(queues.Declaration{Name: "free"}, t0)
		e.declare(queues.Declaration{Name: "limited2", MaxPerSecond: ptrTo(0.01), Burst: ptrTo(1)}, t0)
		for i := range 5 {
			for _, name := range []string{"limited", "free", "limited2"} {
				e.submit(queue.SubmitRequest{Queue: name, Input: jsonOf(i)}, t0)
			}
		}
		now := t0.Add(time.Second)
		e.claim(queue.ClaimRequest{Queue: "limited", LeaseFor: time.Hour}, now)
		var wg sync.WaitGroup
		var mu sync.Mutex
		started := map[string]int{}
		for range 4 { // claims of the limited queue racing those of the others
			wg.Add(3)
			for _, name := range []string{"limited", "free", "limited2"} {
				go func() {
					defer wg.Done()
					cs, err := e.q.Claim(ctx, queue.ClaimRequest{Queue: name, LeaseFor: time.Hour}, now)
					var rl *queue.RateLimitedError
					if err != nil && !errors.As(err, &rl) {
						t.Errorf("%s: %v", name, err)
					}
					mu.Lock()
					started[name] += len(cs)
					mu.Unlock()
				}()
			}
		}
		wg.Wait()
		if started["limited"] != 0 || started["free"] != 4 || started["limited2"] != 1 {
			t.Fatalf("started %v; want limited 0, free 4, limited2 1", started)
		}
	})

	t.Run("a_push_queue_whose_tasks_workers_also_claim_counts_both_in_one_limit", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		e.declare(queues.Declaration{Name: "pushed", MaxPerSecond: ptrTo(1.0), Burst: ptrTo(2),
			Target: &queues.Target{URL: "https://example.com/hook", Secret: "/s3q/hook"}}, t0)
		for i := range 6 {
			e.submit(queue.SubmitRequest{Queue: "pushed", Input: jsonOf(i)}, t0)
		}
		// The dispatcher (one process) and two workers' API containers
		// claim at once, as fast as they can.
		now := t0.Add(time.Second)
		procs := []*queue.Queue{e.q, e.reopen(), e.reopen()}
		var wg sync.WaitGroup
		var mu sync.Mutex
		started := 0
		for _, q := range procs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cs, err := q.Claim(ctx, queue.ClaimRequest{Queue: "pushed", LeaseFor: time.Hour, MaxTasks: 3}, now)
				var rl *queue.RateLimitedError
				if err != nil && !errors.As(err, &rl) {
					t.Errorf("claim: %v", err)
				}
				mu.Lock()
				started += len(cs)
				mu.Unlock()
			}()
		}
		wg.Wait()
		if started > 2 {
			t.Fatalf("%d tasks started at once; the burst is 2", started)
		}
	})

	t.Run("a_sweep_of_a_flooded_limited_queue_starts_nothing_and_is_not_held_back", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		e.declare(queues.Declaration{Name: "flood", MaxPerSecond: ptrTo(0.001), Burst: ptrTo(1)}, t0)
		for i := range 20 {
			e.submit(queue.SubmitRequest{Queue: "flood", Input: jsonOf(i), TTL: check.Dur("5m")}, t0)
		}
		lapsed := e.claim(queue.ClaimRequest{Queue: "flood", LeaseFor: time.Minute}, t0.Add(time.Second))
		if len(lapsed) != 1 {
			t.Fatalf("first claim: %d tasks", len(lapsed))
		}
		etag := func() string {
			obj, err := e.s.Get(ctx, queue.RateKey("flood"))
			if err != nil {
				t.Fatal(err)
			}
			return obj.ETag
		}
		before := etag()
		// The deadlines pass, the lease lapses: the sweep expires every
		// task, the 19 the limit holds back and the started one alike, and
		// writes nothing to the rate state (a start is a claim's).
		rep, err := e.reopen().Sweep(ctx, t0.Add(10*time.Minute), queue.SweepOptions{Publisher: &recorder{}})
		if err != nil || rep.Expired != 20 {
			t.Fatalf("sweep: %+v, %v; want the 20 tasks expired", rep, err)
		}
		if after := etag(); after != before {
			t.Fatal("the sweep wrote the rate state")
		}
		if running := e.list(queue.ListRequest{Queue: "flood", Status: queue.StatusRunning, Limit: 30}); len(running) != 0 {
			t.Fatalf("the sweep started %d tasks", len(running))
		}
	})
}

// rateReadFault fails the next left GETs of key with a retryable error (a
// 503, a timeout).
type rateReadFault struct {
	store.Store
	key  string
	mu   sync.Mutex
	left int
}

func (r *rateReadFault) Get(ctx context.Context, key string) (store.Object, error) {
	r.mu.Lock()
	fail := key == r.key && r.left > 0
	if fail {
		r.left--
	}
	r.mu.Unlock()
	if fail {
		return store.Object{}, store.Retryable(errors.New("injected 503 on the rate state's read"))
	}
	return r.Store.Get(ctx, key)
}
