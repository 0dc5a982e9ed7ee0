// Command latency measures s3q as a user sees it, through the dev server
// (the same handlers as Lambda) over versitygw, with S3 near (latency=none:
// loopback) and far (latency=typical: the fault proxy adds 20-40 ms to 98%
// of S3 requests and 150-300 ms to 2%, drawn from a fixed seed so runs
// compare). Per latency profile it prints:
//
//	bench api latency=L op=submit clients=C calls=N p50_ms=A p99_ms=B s3_requests=R round_trips=T
//	bench api latency=L lifecycles=N seconds=S lifecycles_per_s=X
//	bench api latency=L servers=split op=... (the same, one server per operation)
//	bench pickup latency=L mode=worker concurrency=K tasks=N rate=R p50_ms=A p99_ms=B
//	bench throughput latency=L workers=1 concurrency=K tasks=N tasks_per_s=X
//
// api: each client submits, claims and completes tasks one after another;
// s3_requests is the mean S3 requests of one call and round_trips the mean
// of the longest chain of them that ran one after another (both read from
// the server's per-request log line). claim counts claims that got a task;
// claim_empty those that found none (another client had just taken it).
//
// pickup: one worker process (package worker, default options but the
// concurrency) runs while tasks are submitted at a steady rate; pickup is
// from sending the submit to the handler starting.
//
// throughput: one worker process drains a backlog; tasks_per_s is the
// backlog over the time from the worker's start to its last complete.
//
// It only prints; nothing fails on a timing.
package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/s3q/s3q/scripts/internal/figures"
	"github.com/s3q/s3q/shared/client"
	"github.com/s3q/s3q/shared/devserver"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/s3local"
	"github.com/s3q/s3q/shared/s3local/faultproxy"
	"github.com/s3q/s3q/shared/worker"
)

func main() {
	profiles := flag.String("latency", "none,typical", "latency profiles to run, comma-separated")
	seed := flag.Uint64("seed", 1, "seed of the latency draws")
	clients := flag.String("clients", "1,16", "client counts of the api figures")
	lifecycles := flag.Int("lifecycles", 100, "submit, claim, complete rounds per api figure (split over the clients)")
	pickupTasks := flag.Int("pickup-tasks", 100, "tasks of the pickup figure")
	pickupRate := flag.Float64("pickup-rate", 5, "tasks per second submitted in the pickup figure")
	pickupConc := flag.String("pickup-concurrency", "4,1", "worker concurrencies of the pickup figures")
	tpTasks := flag.Int("throughput-tasks", 100, "backlog of the throughput figure")
	tpConc := flag.String("throughput-concurrency", "1,4", "worker concurrencies of the throughput figures")
	split := flag.Int("split-lifecycles", 30, "lifecycles of the api figure with submit, claim and complete each through its own server (as the submit, claim and tasks functions of a deployment are), clients=1; 0 skips it")
	timelyTasks := flag.Int("timeliness-tasks", 200, "tasks of the expiry lateness figure (latency=typical only)")
	only := flag.String("only", "", "run only these figures, comma-separated: api, pickup, throughput, timeliness")
	serve := flag.String("serve", "", "measure nothing: serve the dev server of this latency profile, print \"serving latency=P url=URL\" and run until standard input closes (scripts/clientbench measures the clients through it)")
	flag.Parse()
	run := figures.Program("latency", *only)

	ctx := context.Background()
	srv := figures.VersityGW(ctx)
	defer srv.Close()

	if *serve != "" {
		p := figures.Profiles(*serve)[0]
		b, err := start(ctx, srv, p, *seed, 1)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("serving latency=%s url=%s\n", p.Name, b.base)
		_, _ = io.Copy(io.Discard, os.Stdin)
		b.stop()
		return
	}

	for _, p := range figures.Profiles(*profiles) {
		b, err := start(ctx, srv, p, *seed, 1)
		if err != nil {
			log.Fatal(err)
		}
		if run("api") {
			for _, n := range figures.Counts(*clients) {
				b.api(n, max(1, *lifecycles/n))
			}
		}
		if run("api") && *split > 0 {
			sb, err := start(ctx, srv, p, *seed, 3)
			if err != nil {
				log.Fatal(err)
			}
			sb.api(1, *split)
			sb.stop()
		}
		if run("pickup") {
			for _, k := range figures.Counts(*pickupConc) {
				b.pickup(k, *pickupTasks, *pickupRate)
			}
		}
		if run("throughput") {
			for _, k := range figures.Counts(*tpConc) {
				b.throughput(k, *tpTasks)
			}
		}
		b.stop()
		if run("timeliness") && p.Name == "typical" {
			// Its own dev server, whose timers fire every 20s as the
			// deployed rules every minute.
			startTick = 20 * time.Second
			tb, err := start(ctx, srv, p, *seed, 1)
			startTick = time.Hour
			if err != nil {
				log.Fatal(err)
			}
			tb.timeliness(*timelyTasks, tb.base)
			tb.stop()
		}
	}
}

// benchSecret is the name of the push targets' signing secret.
const benchSecret = "s3q/bench"

// startTick is the timers' interval of the dev servers start starts.
var startTick = time.Hour

// bench is one dev server over the proxy of one latency profile.
type bench struct {
	profile string
	mode    string // "one" server, or "split": submit, claim and complete each through its own
	c       *client.Client
	claimC  *client.Client // the client claims go through (c but in split mode)
	tasksC  *client.Client // the client completes go through (c but in split mode)
	stop    func()
	base    string // the first dev server's URL

	mu    sync.Mutex
	calls map[string][]callLog // route -> the server's log of each call
}

// callLog is what the server logged of one call.
type callLog struct{ requests, roundTrips float64 }

// start starts n dev servers (1, or 3 for split mode) over one proxy of
// profile p in front of srv, sharing one bucket prefix, their request log
// lines read into b.calls.
func start(ctx context.Context, srv *s3local.Server, p faultproxy.Profile, seed uint64, n int) (*bench, error) {
	proxy, err := faultproxy.Start(faultproxy.Options{Target: srv.Endpoint, Latency: p, LatencySeed: seed})
	if err != nil {
		return nil, err
	}
	b := &bench{profile: p.Name, mode: "one", calls: map[string][]callLog{}}
	if n > 1 {
		b.mode = "split"
	}
	pr, pw := io.Pipe()
	logDone := make(chan struct{})
	go func() {
		defer close(logDone)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var line struct {
				Msg    string `json:"msg"`
				Route  string `json:"route"`
				Status int    `json:"status"`
				S3     struct {
					Requests   float64 `json:"requests"`
					RoundTrips float64 `json:"round_trips"`
				} `json:"s3"`
			}
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "request" {
				key := line.Route
				if line.Status == 204 {
					key += " (empty)"
				}
				b.mu.Lock()
				b.calls[key] = append(b.calls[key], callLog{line.S3.Requests, line.S3.RoundTrips})
				b.mu.Unlock()
			}
		}
	}()
	sctx, cancel := context.WithCancel(ctx)
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	prefix := "latency-" + hex.EncodeToString(rnd[:]) + "/"
	var clients []*client.Client
	var dones []chan error
	b.stop = func() {
		cancel()
		for _, d := range dones {
			<-d
		}
		_ = pw.Close()
		<-logDone
		proxy.Close()
	}
	for range n {
		started := make(chan string, 1)
		done := make(chan error, 1)
		dones = append(dones, done)
		go func() {
			done <- devserver.Run(sctx, devserver.Options{
				Addr: "127.0.0.1:0", Endpoint: proxy.URL, Bucket: srv.Bucket, Prefix: prefix,
				Region: srv.Region, AccessKey: srv.AccessKey, SecretKey: srv.SecretKey,
				Out: io.Discard, TickInterval: startTick,
				PushSecrets: map[string]string{benchSecret: "bench"},
				Logger:      slog.New(slog.NewJSONHandler(pw, nil)),
				Started:     func(u string) { started <- u },
			})
		}()
		var base string
		select {
		case base = <-started:
		case err := <-done:
			dones = dones[:len(dones)-1]
			b.stop()
			return nil, fmt.Errorf("dev server: %v", err)
		case <-time.After(30 * time.Second):
			log.Fatal("dev server did not start")
		}
		c, err := client.New(ctx, base, client.Options{})
		if err != nil {
			b.stop()
			return nil, err
		}
		clients = append(clients, c)
		if b.base == "" {
			b.base = base
		}
	}
	b.c, b.claimC, b.tasksC = clients[0], clients[0], clients[0]
	if n >= 3 {
		b.claimC, b.tasksC = clients[1], clients[2]
	}
	return b, nil
}

// logged returns, and forgets, the server's log of the calls of route.
func (b *bench) logged(route string) []callLog {
	time.Sleep(100 * time.Millisecond) // let the last log lines drain
	b.mu.Lock()
	defer b.mu.Unlock()
	out := b.calls[route]
	delete(b.calls, route)
	return out
}

func (b *bench) forget() {
	b.mu.Lock()
	clear(b.calls)
	b.mu.Unlock()
}

// api runs n clients each doing per submit → claim → complete rounds.
func (b *bench) api(n, per int) {
	ctx := context.Background()
	b.forget()
	q := "api-" + strconv.Itoa(n)
	c, cc, tc := b.c.In(q), b.claimC.In(q), b.tasksC.In(q)
	lat := map[string][]time.Duration{}
	var mu sync.Mutex
	record := func(op string, d time.Duration) {
		mu.Lock()
		lat[op] = append(lat[op], d)
		mu.Unlock()
	}
	// The queue exists before the clock starts (its first submit would
	// declare it).
	if _, err := c.Submit(ctx, client.SubmitRequest{SubmitRequest: queue.SubmitRequest{TaskType: "warm"}}); err != nil {
		log.Fatal(err)
	}
	if cs, err := cc.Claim(ctx, client.ClaimRequest{LeaseFor: time.Minute, Wait: 5 * time.Second}); err != nil || len(cs) != 1 {
		log.Fatalf("warm-up claim: %v %v", cs, err)
	} else if _, err := tc.Complete(ctx, client.CompleteRequest{Lease: cs[0].Lease}); err != nil {
		log.Fatal(err)
	}
	b.forget()
	var wg sync.WaitGroup
	begin := time.Now()
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ttl := queue.Duration(time.Hour)
			for range per {
				t0 := time.Now()
				if _, err := c.Submit(ctx, client.SubmitRequest{SubmitRequest: queue.SubmitRequest{TaskType: "bench", Input: []byte(`{"n":1}`), TTL: &ttl}}); err != nil {
					log.Fatal(err)
				}
				record("submit", time.Since(t0))
				for {
					t1 := time.Now()
					cs, err := cc.Claim(ctx, client.ClaimRequest{LeaseFor: time.Minute})
					if err != nil {
						log.Fatal(err)
					}
					if len(cs) == 0 {
						record("claim_empty", time.Since(t1))
						time.Sleep(10 * time.Millisecond) // another client took the one there was
						continue
					}
					record("claim", time.Since(t1))
					t2 := time.Now()
					if _, err := tc.Complete(ctx, client.CompleteRequest{Lease: cs[0].Lease, Output: []byte(`{"ok":true}`)}); err != nil {
						log.Fatal(err)
					}
					record("complete", time.Since(t2))
					break
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(begin)
	routes := map[string]string{"submit": "POST /queues/{queue}/tasks", "claim": "POST /queues/{queue}/claim",
		"claim_empty": "POST /queues/{queue}/claim (empty)", "complete": "POST /queues/{queue}/tasks/{id}/complete"}
	for _, op := range []string{"submit", "claim", "complete", "claim_empty"} {
		ds := lat[op]
		if len(ds) == 0 && op == "claim_empty" {
			continue
		}
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		var reqs, rts []float64
		for _, l := range b.logged(routes[op]) {
			reqs, rts = append(reqs, l.requests), append(rts, l.roundTrips)
		}
		fmt.Printf("bench api latency=%s%s op=%s clients=%d calls=%d p50_ms=%.1f p99_ms=%.1f s3_requests=%.2f round_trips=%.2f\n",
			b.profile, b.modeField(), op, n, len(ds), ms(pct(ds, 50)), ms(pct(ds, 99)), mean(reqs), mean(rts))
	}
	total := n * per
	fmt.Printf("bench api latency=%s%s clients=%d lifecycles=%d seconds=%.1f lifecycles_per_s=%.1f\n",
		b.profile, b.modeField(), n, total, elapsed.Seconds(), float64(total)/elapsed.Seconds())
}

// modeField is " servers=split" in split mode, else nothing.
func (b *bench) modeField() string {
	if b.mode == "split" {
		return " servers=split"
	}
	return ""
}

// pickup runs one worker of concurrency k while n tasks are submitted at
// rate per second, and prints the time from each submit to its start.
func (b *bench) pickup(k, n int, rate float64) {
	ctx, cancel := context.WithCancel(context.Background())
	q := fmt.Sprintf("pickup-%d", k)
	c := b.c.In(q)
	var mu sync.Mutex
	sent := map[string]time.Time{}
	startedAt := map[string]time.Time{}
	var got atomic.Int64
	all := make(chan struct{})
	w := worker.New(b.c, worker.Options{Queue: q, Concurrency: k, Logger: slog.New(slog.DiscardHandler)})
	w.Handle("bench", func(_ context.Context, t *worker.Task) (json.RawMessage, error) {
		mu.Lock()
		if _, ok := startedAt[t.ID]; !ok {
			startedAt[t.ID] = time.Now()
			if got.Add(1) == int64(n) {
				close(all)
			}
		}
		mu.Unlock()
		return nil, nil
	})
	// The queue exists, and the worker has found it empty, before the
	// first task: a worker that has been waiting a while.
	if _, err := c.Submit(ctx, client.SubmitRequest{SubmitRequest: queue.SubmitRequest{TaskType: "warm"}}); err != nil {
		log.Fatal(err)
	}
	if cs, err := c.Claim(ctx, client.ClaimRequest{LeaseFor: time.Minute}); err == nil && len(cs) == 1 {
		_, _ = c.Complete(ctx, client.CompleteRequest{Lease: cs[0].Lease})
	}
	runDone := make(chan error, 1)
	go func() { runDone <- w.Run(ctx) }()
	time.Sleep(3 * time.Second)
	every := time.Duration(float64(time.Second) / rate)
	next := time.Now()
	for range n {
		time.Sleep(time.Until(next))
		next = next.Add(every)
		at := time.Now()
		res, err := c.Submit(ctx, client.SubmitRequest{SubmitRequest: queue.SubmitRequest{TaskType: "bench"}})
		if err != nil {
			log.Fatal(err)
		}
		mu.Lock()
		sent[res.Task.ID] = at
		mu.Unlock()
	}
	select {
	case <-all:
	case <-time.After(2 * time.Minute):
		fmt.Fprintf(os.Stderr, "latency: pickup: %d of %d tasks started\n", got.Load(), n)
	}
	cancel()
	<-runDone
	mu.Lock()
	var ds []time.Duration
	for id, s := range startedAt {
		if t, ok := sent[id]; ok {
			ds = append(ds, s.Sub(t))
		}
	}
	mu.Unlock()
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	fmt.Printf("bench pickup latency=%s mode=worker concurrency=%d tasks=%d rate=%g p50_ms=%.0f p99_ms=%.0f\n",
		b.profile, k, len(ds), rate, ms(pct(ds, 50)), ms(pct(ds, 99)))
}

// throughput has one worker of concurrency k drain a backlog of n tasks.
func (b *bench) throughput(k, n int) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	q := fmt.Sprintf("throughput-%d", k)
	c := b.c.In(q)
	for i := 0; i < n; i += 100 {
		reqs := make([]queue.SubmitRequest, min(100, n-i))
		for j := range reqs {
			reqs[j] = queue.SubmitRequest{TaskType: "bench"}
		}
		items, err := c.SubmitBatch(ctx, reqs)
		if err != nil {
			log.Fatal(err)
		}
		for _, it := range items {
			if it.Error != nil {
				log.Fatalf("submit: %v", it.Error)
			}
		}
	}
	var done atomic.Int64
	w := worker.New(b.c, worker.Options{Queue: q, Concurrency: k, Logger: slog.New(slog.DiscardHandler)})
	w.Handle("bench", func(context.Context, *worker.Task) (json.RawMessage, error) {
		if done.Add(1) == int64(n) {
			cancel() // the last task runs; Run completes it and returns
		}
		return nil, nil
	})
	begin := time.Now()
	runDone := make(chan error, 1)
	go func() { runDone <- w.Run(ctx) }()
	select {
	case <-runDone:
	case <-time.After(5 * time.Minute):
		fmt.Fprintf(os.Stderr, "latency: throughput: %d of %d tasks ran\n", done.Load(), n)
		cancel()
		<-runDone
	}
	elapsed := time.Since(begin)
	fmt.Printf("bench throughput latency=%s workers=1 concurrency=%d tasks=%d tasks_per_s=%.1f\n",
		b.profile, k, done.Load(), float64(done.Load())/elapsed.Seconds())
}

func pct(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	i := (len(ds)*p + 99) / 100
	if i >= len(ds) {
		i = len(ds) - 1
	}
	return ds[i]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}
