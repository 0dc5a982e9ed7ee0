package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/s3q/s3q/shared/dispatch"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/s3local"
	"github.com/s3q/s3q/shared/store"
)

// benchRateLimit prints
//
//	bench ratelimit queue_max_per_second=R workers=W seconds=S started_per_second_max=M p99=P extra_requests_per_task=X rate_state_requests_per_task=Y burst=B started=N
//	bench ratelimit push max_per_second=R seconds=S started_per_second_max=M p99=P burst=B delivered=N
//	bench lifecycle ttl=no max_per_second=1000 requests=N put=N list=N get=N delete=N usd_per_million=X
//
// The first (windows of the tasks' started_at, the claims' now, which
// the limit counts): W workers spread over 4 processes (4 queue.Queue values, as
// 4 containers of the API would be) claim one task at a time from a queue
// declared with max_per_second R over a backlog it never runs out of,
// and complete each at once, for S seconds; a claim held back waits its
// RetryAfter, as the Go worker does. started_per_second_max is the most
// starts in any 1-second window (the limit allows burst + R in one: the
// first second may show it), p99 the 99th percentile of the counts of
// the windows from the third second on (the steady state), each window
// opening at a start. state_get, state_put and state_put_lost (refused
// 412: another process granted first) break the rate state's requests
// down per task. extra_requests_per_task is the run's S3 requests per task less
// those of the same workers draining as many tasks without a limit;
// rate_state_requests_per_task counts the requests to the rate state
// object alone.
//
// The lifecycle line: main.go's lifecycle (one submitter, one worker
// claiming and completing one task at a time, in one process) on a queue
// with a limit it never reaches: what the limit costs where no other
// process races for it.
//
// The push line: one dispatcher delivers a push queue with max_per_second R
// to a local HTTP target for S seconds; started_per_second_max and p99 are
// of the delivered tasks' started_at (the claims' now, what the limit
// counts), received_* of the times the target received them (a
// delivery's own latency, and a stall of the machine, shift those).
func benchRateLimit(ctx context.Context, srv *s3local.Server, rate float64, workers int, seconds time.Duration) error {
	burst := queue.DefaultBurst(rate)
	backlog := int(rate*seconds.Seconds()) + burst + 50

	// Pulled: W workers over 4 processes.
	rs := &rateCounting{Store: srv.Store(prefix())}
	counting := store.NewCounting(rs)
	_, decls := queues.New(counting, queues.Options{})
	r := rate
	if _, _, err := decls.Declare(ctx, queues.Declaration{Name: "paced", MaxPerSecond: &r}, time.Now()); err != nil {
		return err
	}
	if err := submitBacklog(ctx, counting, "paced", backlog); err != nil {
		return err
	}
	counting.Reset()
	rs.reset()
	starts, err := drainWorkers(ctx, counting, "paced", workers, seconds, 0)
	if err != nil {
		return err
	}
	limited := counting.Counts()
	stateReqs := rs.n.Load()

	// The same workers, as many tasks, no limit.
	base := store.NewCounting(srv.Store(prefix()))
	if err := submitBacklog(ctx, base, "free", len(starts)); err != nil {
		return err
	}
	base.Reset()
	if _, err := drainWorkers(ctx, base, "free", workers, 0, len(starts)); err != nil {
		return err
	}
	free := base.Counts()
	n := float64(len(starts))
	most, p99 := windows(starts)
	fmt.Printf("bench ratelimit queue_max_per_second=%g workers=%d seconds=%g started_per_second_max=%d p99=%d extra_requests_per_task=%.2f rate_state_requests_per_task=%.2f state_get=%.2f state_put=%.2f state_put_lost=%.2f burst=%d started=%d processes=4\n",
		rate, workers, seconds.Seconds(), most, p99, float64(limited.Total())/n-float64(free.Total())/n, float64(stateReqs)/n,
		float64(rs.gets.Load())/n, float64(rs.puts.Load())/n, float64(rs.lost.Load())/n, burst, len(starts))

	// The lifecycle (main.go's) of a queue with a limit it never reaches,
	// in one process: what the limit costs a task where nobody races.
	lc := store.NewCounting(srv.Store(prefix()))
	lq, ldecls := queues.New(lc, queues.Options{})
	high := float64(queue.MaxPerSecondLimit)
	if _, _, err := ldecls.Declare(ctx, queues.Declaration{Name: "lifecycle", MaxPerSecond: &high}, time.Now()); err != nil {
		return err
	}
	lc.Reset()
	const lifecycleTasks = 300
	for range lifecycleTasks {
		if _, err := lq.Submit(ctx, queue.SubmitRequest{ID: queue.NewID(time.Now()), Queue: "lifecycle", TaskType: "bench", Input: []byte(`{"n":1}`)}, time.Now()); err != nil {
			return err
		}
	}
	worker := queues.NewQueue(lc, queues.Options{})
	for done := 0; done < lifecycleTasks; {
		cs, err := worker.Claim(ctx, queue.ClaimRequest{Queue: "lifecycle", LeaseFor: time.Minute}, time.Now())
		var limited *queue.RateLimitedError
		if errors.As(err, &limited) {
			time.Sleep(limited.RetryAfter)
			continue
		}
		if err != nil {
			return err
		}
		for _, c := range cs {
			if _, err := worker.Complete(ctx, queue.CompleteRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token, Output: []byte(`{"ok":true}`)}, time.Now()); err != nil {
				return err
			}
			done++
		}
	}
	lcc := lc.Counts()
	ln := float64(lifecycleTasks)
	fmt.Printf("bench lifecycle ttl=no max_per_second=%d requests=%.2f put=%.2f list=%.3f get=%.2f delete=%.2f usd_per_million=%.2f\n",
		queue.MaxPerSecondLimit, float64(lcc.Total())/ln, float64(lcc.Put)/ln, float64(lcc.List)/ln, float64(lcc.Get+lcc.Head)/ln, float64(lcc.Delete)/ln, usd(lcc)/ln*1e6)

	// Pushed: one dispatcher, a local target.
	var (
		mu        sync.Mutex
		delivered []time.Time // when the target received each
		started   []time.Time // each delivered task's started_at (its claim's now)
	)
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var p struct {
			Task struct {
				StartedAt time.Time `json:"started_at"`
			} `json:"task"`
		}
		_ = json.Unmarshal(body, &p)
		mu.Lock()
		delivered = append(delivered, time.Now())
		started = append(started, p.Task.StartedAt)
		mu.Unlock()
		fmt.Fprint(w, `{}`)
	}))
	defer target.Close()
	pst := srv.Store(prefix())
	q, pdecls := queues.New(pst, queues.Options{AllowInsecureTargets: true})
	timeout := queue.Duration(5 * time.Second)
	if _, _, err := pdecls.Declare(ctx, queues.Declaration{Name: "pushed", MaxPerSecond: &r, Timeout: &timeout,
		Target: &queues.Target{URL: target.URL, Secret: "dev"}}, time.Now()); err != nil {
		return err
	}
	if err := submitBacklog(ctx, pst, "pushed", backlog); err != nil {
		return err
	}
	d := dispatch.New(q, dispatch.NewDeclared(pdecls, time.Second), dispatch.Options{
		Logger: slog.New(slog.DiscardHandler), HTTP: dispatch.NewHTTP(dispatch.StaticSecrets{"dev": "bench-secret"}, true),
		Soon: -1, Margin: 100 * time.Millisecond,
	})
	// The run claims while a delivery's lease (5s) ends before until.
	if _, err := d.Run(ctx, "pushed", time.Now().Add(seconds+timeout.Std()+100*time.Millisecond)); err != nil {
		return err
	}
	mu.Lock()
	most, p99 = windows(started)
	rmost, rp99 := windows(delivered)
	got := len(delivered)
	mu.Unlock()
	fmt.Printf("bench ratelimit push max_per_second=%g seconds=%g started_per_second_max=%d p99=%d received_per_second_max=%d received_p99=%d burst=%d delivered=%d\n",
		rate, seconds.Seconds(), most, p99, rmost, rp99, burst, got)
	return nil
}

// submitBacklog submits n due tasks to queue name.
func submitBacklog(ctx context.Context, st store.Store, name string, n int) error {
	q := queues.NewQueue(st, queues.Options{})
	sem := make(chan struct{}, 16)
	var (
		wg    sync.WaitGroup
		first atomic.Value
	)
	for range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if _, err := q.Submit(ctx, queue.SubmitRequest{ID: queue.NewID(time.Now()), Queue: name, TaskType: "bench"}, time.Now()); err != nil {
				first.CompareAndSwap(nil, err)
			}
		}()
	}
	wg.Wait()
	if err, _ := first.Load().(error); err != nil {
		return err
	}
	return nil
}

// drainWorkers runs workers claim-and-complete loops over 4 processes
// for d (or until they have started upto tasks, when d is 0) and returns
// when each task started.
func drainWorkers(ctx context.Context, st store.Store, name string, workers int, d time.Duration, upto int) ([]time.Time, error) {
	procs := make([]*queue.Queue, 4)
	for i := range procs {
		procs[i] = queues.NewQueue(st, queues.Options{})
	}
	end := time.Now().Add(d)
	var (
		mu     sync.Mutex
		starts []time.Time
		wg     sync.WaitGroup
		first  error
	)
	done := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return first != nil || (d > 0 && time.Now().After(end)) || (d == 0 && len(starts) >= upto)
	}
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			q := procs[w%len(procs)]
			for !done() {
				cs, err := q.Claim(ctx, queue.ClaimRequest{Queue: name, LeaseFor: time.Minute, WorkerID: fmt.Sprintf("w%d", w)}, time.Now())
				var limited *queue.RateLimitedError
				switch {
				case errors.As(err, &limited):
					time.Sleep(limited.RetryAfter)
					continue
				case err != nil:
					mu.Lock()
					first = err
					mu.Unlock()
					return
				case len(cs) == 0:
					time.Sleep(50 * time.Millisecond)
					continue
				}
				mu.Lock()
				for _, c := range cs {
					starts = append(starts, *c.Task.StartedAt) // the claim's now: what the limit counts
				}
				mu.Unlock()
				for _, c := range cs {
					if _, err := q.Complete(ctx, queue.CompleteRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token}, time.Now()); err != nil {
						mu.Lock()
						first = err
						mu.Unlock()
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	return starts, first
}

// windows returns the most starts in any 1-second window (one opening at
// each start) and the 99th percentile of the counts of those that open
// 2s after the first start or later (the steady state: the first second
// may start burst + rate).
func windows(starts []time.Time) (most, p99 int) {
	if len(starts) == 0 {
		return 0, 0
	}
	s := append([]time.Time(nil), starts...)
	sort.Slice(s, func(i, j int) bool { return s[i].Before(s[j]) })
	var steady []float64
	j := 0
	for i := range s {
		for j < len(s) && s[j].Sub(s[i]) < time.Second {
			j++
		}
		most = max(most, j-i)
		if s[i].Sub(s[0]) >= 2*time.Second && s[len(s)-1].Sub(s[i]) >= time.Second {
			steady = append(steady, float64(j-i))
		}
	}
	if len(steady) == 0 {
		return most, 0
	}
	return most, int(pct(steady, 99))
}

// rateCounting counts the requests to rate state objects
// (q/{queue}/rate.json): n in all, gets and puts (lost: refused 412).
type rateCounting struct {
	store.Store
	n, gets, puts, lost atomic.Int64
}

func (r *rateCounting) note(key string, c *atomic.Int64) bool {
	if strings.HasSuffix(key, "/rate.json") {
		r.n.Add(1)
		c.Add(1)
		return true
	}
	return false
}

func (r *rateCounting) reset() {
	r.n.Store(0)
	r.gets.Store(0)
	r.puts.Store(0)
	r.lost.Store(0)
}

func (r *rateCounting) Get(ctx context.Context, key string) (store.Object, error) {
	r.note(key, &r.gets)
	return r.Store.Get(ctx, key)
}

func (r *rateCounting) PutIfAbsent(ctx context.Context, key string, body []byte, opts ...store.PutOption) (string, error) {
	mine := r.note(key, &r.puts)
	etag, err := r.Store.PutIfAbsent(ctx, key, body, opts...)
	if mine && errors.Is(err, store.ErrPrecondition) {
		r.lost.Add(1)
	}
	return etag, err
}

func (r *rateCounting) PutIfMatch(ctx context.Context, key string, body []byte, etag string, opts ...store.PutOption) (string, error) {
	mine := r.note(key, &r.puts)
	etag, err := r.Store.PutIfMatch(ctx, key, body, etag, opts...)
	if mine && errors.Is(err, store.ErrPrecondition) {
		r.lost.Add(1)
	}
	return etag, err
}
