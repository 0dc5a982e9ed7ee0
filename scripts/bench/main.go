// Command bench measures s3q against a real S3 gateway (versitygw, started
// on a loopback port for the run) and prints one line per figure:
//
//	bench lifecycle ttl=no requests=N put=N list=N get=N delete=N usd_per_million=X
//	bench lifecycle ttl=yes ...
//	bench lifecycle ttl=no max_concurrency=10 ...   (a queue declared with max_concurrency)
//	bench priority tasks=N high=H claim_order_violations=V requests_per_claim=R ...   (priority.go)
//	bench lifecycle ttl=no priority=yes ...   (every task with a priority, 1 to 5 in turn)
//	bench ratelimit queue_max_per_second=R workers=W seconds=S started_per_second_max=M p99=P extra_requests_per_task=X ...   (ratelimit.go)
//	bench ratelimit push max_per_second=R seconds=S started_per_second_max=M ...
//	bench throughput server=versitygw workers=W tasks_per_s=X raw_ops_per_s=Y bound_ratio=R
//	bench sweep ..., bench tick ..., bench list ..., bench history ... (sweep.go, tick.go, list.go)
//	bench faults mix=M rate=R submits=N tasks=T duplicates=D dedup_violations=V lost=L run_twice=R http_500=E
//	bench push latency=L target=http tasks=N rate=R pickup_p50_ms=A pickup_p99_ms=B requests_per_task=R
//	bench push latency=L target=http delayed=N lateness_p50_ms=A lateness_p99_ms=B
//	bench push latency=L target=http path=in-process tasks=N rate=R pickup_p50_ms=A pickup_p99_ms=B requests_per_task=R
//	bench dispatch storm batches=60 spread_s=60 invokes=I peak_concurrent=C
//	bench ops op=purge status=pending stored=300 changed=100 requests=R ... per_task=X   (ops.go; and retry, cancel, expire, stats)
//
// (push.go: push through s3q dev at each -push-latency, -only push runs
// just those; the storm through the submit and dispatch functions with a
// counting Lambda client, -only storm.)
//
// Lifecycle: tasks are submitted by one process and then claimed and
// completed one at a time by another (a worker), as in production; the
// requests of the whole submit → claim → complete path are counted and
// divided by the number of tasks, so a LIST page that serves many claims is
// amortised over them. Prices are S3 list prices: PUT/LIST $0.005 per
// 1,000, GET $0.0004 per 1,000, DELETE free.
//
// Throughput: W claim-and-complete loops in one worker process (one
// queue.Queue) drain a backlog; raw_ops_per_s is the server's own rate of
// conditional PUT+GET pairs with W goroutines in the same run, and
// bound_ratio = tasks_per_s × requests_per_task ÷ (2 × raw_ops_per_s): the
// share of the server's request rate the queue turns into work.
//
// Faults: package faultrun's run under each fault mix (lost_answers,
// mixed) at -fault-rate, and its audit; the goal is zeros.
//
// Nothing here fails on a timing or a finding; it only prints.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"log"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/s3q/s3q/scripts/internal/figures"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/s3local"
	"github.com/s3q/s3q/shared/store"
)

func main() {
	tasks := flag.Int("tasks", 1000, "tasks per lifecycle figure")
	throughputTasks := flag.Int("throughput-tasks", 400, "backlog drained per throughput figure")
	workers := flag.String("workers", "1,4,16", "worker counts for the throughput figures")
	rawFor := flag.Duration("raw-for", 2*time.Second, "how long to measure the raw PUT+GET rate")
	only := flag.String("only", "", "run only these figures, comma-separated: lifecycle, priority, ratelimit, throughput, sweep (idle: its idle figure alone), tick, list, layout, ops, faults, push, storm")
	faultMixes := flag.String("fault-mixes", "lost_answers,mixed", "fault mixes of the faults figures (empty: none)")
	faultRate := flag.Float64("fault-rate", 0.10, "share of S3 requests that meet a fault in the faults figures")
	faultSubmits := flag.Int("fault-submits", 1000, "submits per faults figure")
	faultWorkers := flag.Int("fault-workers", 16, "workers per faults figure")
	pushRuns := flag.String("push-runs", "100@5,200@20,1000@100", "push pickup figures: tasks@rate (tasks due now, submitted at rate a second), comma-separated")
	pushDelayed := flag.Int("push-delayed", 50, "delayed tasks for the push lateness figure")
	pushLatency := flag.String("push-latency", "none,typical", "latency profiles of the push figures (faultproxy: none, typical), comma-separated")
	rlRate := flag.Float64("ratelimit-rate", 10, "max_per_second of the ratelimit figures")
	rlWorkers := flag.Int("ratelimit-workers", 16, "workers of the pulled ratelimit figure")
	rlSeconds := flag.Duration("ratelimit-seconds", 30*time.Second, "how long each ratelimit figure runs")
	flag.Parse()
	run := figures.Program("bench", *only)

	ctx := context.Background()
	srv := figures.VersityGW(ctx)
	defer srv.Close()

	for _, v := range []struct {
		ttl bool
		mc  int
	}{{false, 0}, {true, 0}, {false, 10}} {
		if !run("lifecycle") {
			break
		}
		c, err := lifecycle(ctx, srv, *tasks, v.ttl, v.mc)
		if err != nil {
			log.Fatal(err)
		}
		n := float64(*tasks)
		yes := map[bool]string{false: "no", true: "yes"}[v.ttl]
		mc := ""
		if v.mc > 0 {
			mc = fmt.Sprintf(" max_concurrency=%d", v.mc)
		}
		fmt.Printf("bench lifecycle ttl=%s%s requests=%.2f put=%.2f list=%.3f get=%.2f delete=%.2f usd_per_million=%.2f\n",
			yes, mc, float64(c.Total())/n, float64(c.Put)/n, float64(c.List)/n, float64(c.Get+c.Head)/n, float64(c.Delete)/n, usd(c)/n*1e6)
	}
	for _, w := range figures.Counts(*workers) {
		if !run("throughput") {
			break
		}
		tps, rpt, err := throughput(ctx, srv, w, *throughputTasks)
		if err != nil {
			log.Fatal(err)
		}
		raw, err := rawRate(ctx, srv, w, *rawFor)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Fprintf(os.Stderr, "bench: workers=%d drained with %.2f requests per task\n", w, rpt)
		fmt.Printf("bench throughput server=versitygw workers=%d tasks_per_s=%.1f raw_ops_per_s=%.1f bound_ratio=%.2f\n",
			w, tps, raw, tps*rpt/(2*raw))
	}
	if run("priority") {
		if err := benchPriority(ctx, srv, *tasks, 10); err != nil {
			log.Fatal(err)
		}
	}
	if run("ratelimit") {
		if err := benchRateLimit(ctx, srv, *rlRate, *rlWorkers, *rlSeconds); err != nil {
			log.Fatal(err)
		}
	}
	if run("sweep") {
		if err := benchSweep(ctx, srv); err != nil {
			log.Fatal(err)
		}
	} else if run("idle") {
		if err := benchIdleSweep(ctx, srv); err != nil {
			log.Fatal(err)
		}
	}
	if run("tick") {
		if err := benchTick(ctx, srv); err != nil {
			log.Fatal(err)
		}
	}
	if run("list") {
		if err := benchList(ctx, srv, 1000); err != nil {
			log.Fatal(err)
		}
	}
	if run("layout") {
		if err := benchLayout(ctx); err != nil {
			log.Fatal(err)
		}
	}
	if run("ops") {
		if err := benchOps(ctx, srv); err != nil {
			log.Fatal(err)
		}
	}
	if run("faults") {
		if err := benchFaults(ctx, srv, *faultMixes, *faultRate, *faultSubmits, *faultWorkers); err != nil {
			log.Fatal(err)
		}
	}
	if run("push") {
		runs, err := parsePushRuns(*pushRuns)
		if err != nil {
			log.Fatal(err)
		}
		for _, profile := range figures.Profiles(*pushLatency) {
			if err := benchPush(ctx, profile, runs, *pushDelayed); err != nil {
				log.Fatal(err)
			}
			if err := benchPushInProcess(ctx, profile, runs); err != nil {
				log.Fatal(err)
			}
		}
	}
	if run("storm") {
		if err := benchDispatchStorm(ctx); err != nil {
			log.Fatal(err)
		}
	}
}

func prefix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "bench-" + hex.EncodeToString(b[:]) + "/"
}

// lifecycle submits n tasks, then claims and completes them one at a time
// in a second process, and returns the requests of all of it. With mc > 0
// the queue is declared first with that max_concurrency.
func lifecycle(ctx context.Context, srv *s3local.Server, n int, ttl bool, mc int) (store.Counts, error) {
	counting := store.NewCounting(srv.Store(prefix()))
	submitter, decls := queues.New(counting, queues.Options{})
	if mc > 0 {
		if _, _, err := decls.Declare(ctx, queues.Declaration{Name: queue.DefaultQueue, MaxConcurrency: mc}, time.Now()); err != nil {
			return store.Counts{}, err
		}
		counting.Reset()
	}
	for i := 0; i < n; i++ {
		// With an id, as every client sends one: it costs
		// no request.
		req := queue.SubmitRequest{ID: queue.NewID(time.Now()), TaskType: "bench", Input: []byte(`{"n":1}`)}
		if ttl {
			d := queue.Duration(time.Hour)
			req.TTL = &d
		}
		if _, err := submitter.Submit(ctx, req, time.Now()); err != nil {
			return store.Counts{}, err
		}
	}
	worker := queues.NewQueue(counting, queues.Options{})
	for done := 0; done < n; {
		cs, err := worker.Claim(ctx, queue.ClaimRequest{LeaseFor: time.Minute}, time.Now())
		if err != nil {
			return store.Counts{}, err
		}
		if len(cs) == 0 {
			return store.Counts{}, fmt.Errorf("lifecycle: nothing to claim after %d of %d", done, n)
		}
		for _, c := range cs {
			if _, err := worker.Complete(ctx, queue.CompleteRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token, Output: []byte(`{"ok":true}`)}, time.Now()); err != nil {
				return store.Counts{}, err
			}
			done++
		}
	}
	return counting.Counts(), nil
}

// throughput drains a backlog of n tasks with w claim loops sharing one
// Queue and returns tasks per second and requests per task of the drain.
func throughput(ctx context.Context, srv *s3local.Server, w, n int) (float64, float64, error) {
	counting := store.NewCounting(srv.Store(prefix()))
	q := queues.NewQueue(counting, queues.Options{})
	reqs := make([]queue.SubmitRequest, n)
	for i := range reqs {
		reqs[i] = queue.SubmitRequest{TaskType: "bench"}
	}
	for i := 0; i < n; i += queue.MaxBatch {
		res, err := q.SubmitBatch(ctx, reqs[i:min(n, i+queue.MaxBatch)], time.Now())
		if err != nil {
			return 0, 0, err
		}
		for _, r := range res {
			if r.Err != nil {
				return 0, 0, r.Err
			}
		}
	}
	worker := queues.NewQueue(counting, queues.Options{})
	before := counting.Counts()
	var done atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	start := time.Now()
	for i := 0; i < w; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			idle := 0
			for done.Load() < int64(n) && idle < 200 {
				cs, err := worker.Claim(ctx, queue.ClaimRequest{LeaseFor: time.Minute}, time.Now())
				if err != nil {
					once.Do(func() { firstErr = err })
					return
				}
				if len(cs) == 0 {
					idle++
					time.Sleep(5 * time.Millisecond) // the other loops hold the rest
					continue
				}
				idle = 0
				for _, c := range cs {
					if _, err := worker.Complete(ctx, queue.CompleteRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token}, time.Now()); err != nil {
						once.Do(func() { firstErr = err })
						return
					}
					done.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if firstErr != nil {
		return 0, 0, firstErr
	}
	if got := done.Load(); got != int64(n) {
		return 0, 0, fmt.Errorf("throughput: %d of %d tasks done", got, n)
	}
	used := counting.Counts().Sub(before)
	return float64(n) / elapsed.Seconds(), float64(used.Total()) / float64(n), nil
}

// rawRate measures the server's rate of conditional PUT+GET pairs (a GET,
// then a PUT If-Match of the ETag it returned) with w goroutines, each on
// its own key, for d.
func rawRate(ctx context.Context, srv *s3local.Server, w int, d time.Duration) (float64, error) {
	s := srv.Store(prefix())
	var pairs atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	stop := time.Now().Add(d)
	start := time.Now()
	for i := 0; i < w; i++ {
		key := fmt.Sprintf("raw/%d", i)
		if _, err := s.PutIfAbsent(ctx, key, []byte(`{"v":0}`)); err != nil {
			return 0, err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for v := 1; time.Now().Before(stop); v++ {
				obj, err := s.Get(ctx, key)
				if err == nil {
					_, err = s.PutIfMatch(ctx, key, []byte(fmt.Sprintf(`{"v":%d}`, v)), obj.ETag)
				}
				if err != nil {
					once.Do(func() { firstErr = err })
					return
				}
				pairs.Add(1)
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return 0, firstErr
	}
	return float64(pairs.Load()) / time.Since(start).Seconds(), nil
}

// S3 list prices in US dollars per request (us-east-1, S3 Standard).
const (
	pricePutClass = 0.005 / 1000  // PUT, COPY, POST, LIST
	priceGetClass = 0.0004 / 1000 // GET, HEAD
)

// usd returns what the counted requests cost at S3 list prices. DELETE is free.
func usd(c store.Counts) float64 {
	return float64(c.Put+c.List)*pricePutClass + float64(c.Get+c.Head)*priceGetClass
}
