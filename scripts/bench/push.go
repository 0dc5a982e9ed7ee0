package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/s3q/s3q/shared/devserver"
	"github.com/s3q/s3q/shared/dispatch"
	"github.com/s3q/s3q/shared/lambdafn/lambdafntest"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/s3local"
	"github.com/s3q/s3q/shared/s3local/faultproxy"
	"github.com/s3q/s3q/shared/store"
	"github.com/s3q/s3q/shared/store/memstore"
	"github.com/s3q/s3q/shared/worker"
)

// pushRun is one push pickup figure: tasks due now, submitted at rate a
// second (open loop: each submit starts at its time, whatever the ones
// before it are doing) into one push queue declared with max_concurrency
// 64.
type pushRun struct{ tasks, rate int }

// parsePushRuns reads "200@20,1000@100": tasks@rate, comma-separated.
func parsePushRuns(s string) ([]pushRun, error) {
	var out []pushRun
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		t, r, ok := strings.Cut(part, "@")
		tasks, err1 := strconv.Atoi(t)
		rate, err2 := strconv.Atoi(r)
		if !ok || err1 != nil || err2 != nil || tasks < 1 || rate < 1 {
			return nil, fmt.Errorf("push run %q: want tasks@rate, such as 200@20", part)
		}
		out = append(out, pushRun{tasks, rate})
	}
	return out, nil
}

// benchPush measures push delivery through s3q dev (in-process gofakes3
// behind the fault proxy, which adds the latency profile to every S3
// request and counts them; the API on loopback; dispatch in process) to a
// local HTTP target that verifies every signature:
//
//	bench push latency=L target=http tasks=N rate=R pickup_p50_ms=A pickup_p99_ms=B requests_per_task=R
//	bench push latency=L target=http delayed=N lateness_p50_ms=A lateness_p99_ms=B
//
// pickup is from sending the submit to the target receiving the delivery,
// for tasks due now, submitted at rate a second into one queue declared
// with max_concurrency 64 (a queue of its own per figure); requests_per_task
// counts every S3 request of that figure (submit, claim, slots, complete,
// the dispatcher's looks) divided by the tasks; submit_p50_ms and
// submit_p99_ms are the submits' own answer times, part of pickup. lateness is from a task's
// schedule_at to its delivery, for tasks submitted with schedule_at 2-4s
// ahead. Timers are off (--tick 1h): only the wakes and the runs that stay
// with a queue deliver.
func benchPush(ctx context.Context, latency faultproxy.Profile, runs []pushRun, delayed int) error {
	s3, err := s3local.StartGoFakeS3(s3local.GoFakeS3Options{})
	if err != nil {
		return err
	}
	defer s3.Close()
	proxy, err := faultproxy.Start(faultproxy.Options{Target: s3.Endpoint, Latency: latency, LatencySeed: 1})
	if err != nil {
		return err
	}
	defer proxy.Close()

	const secret = "bench-secret"
	var mu sync.Mutex
	received := map[string]time.Time{}
	available := map[string]time.Time{}
	var targetURL string
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		at := time.Now()
		body, _ := io.ReadAll(r.Body)
		if _, err := worker.VerifySignature(worker.PushTarget{Secret: secret, URL: targetURL, Queue: r.Header.Get("S3q-Queue"), Tolerance: time.Minute}, r, body, at); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		var p worker.Push
		_ = json.Unmarshal(body, &p)
		mu.Lock()
		if _, ok := received[p.Task.ID]; !ok {
			received[p.Task.ID], available[p.Task.ID] = at, p.Task.AvailableAt
		}
		mu.Unlock()
		fmt.Fprint(w, `{}`)
	}))
	defer target.Close()
	targetURL = target.URL

	decls := []queues.Declaration{{Name: "bench-delayed", MaxConcurrency: 64, Target: &queues.Target{URL: target.URL, Secret: "dev"}}}
	for _, r := range runs {
		decls = append(decls, queues.Declaration{Name: fmt.Sprintf("bench-%d", r.rate), MaxConcurrency: 64, Target: &queues.Target{URL: target.URL, Secret: "dev"}})
	}
	ctx, cancel := context.WithCancel(ctx)
	started := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- devserver.Run(ctx, devserver.Options{
			Addr: "127.0.0.1:0", Endpoint: proxy.URL, Bucket: s3.Bucket, AccessKey: s3.AccessKey, SecretKey: s3.SecretKey,
			TickInterval: time.Hour,
			PushQueues:   decls,
			PushSecrets:  map[string]string{"dev": secret},
			Out:          io.Discard, Logger: slog.New(slog.DiscardHandler),
			Started: func(u string) { started <- u },
		})
	}()
	var api string
	select {
	case api = <-started:
	case err := <-done:
		cancel()
		return err
	}
	defer func() { cancel(); <-done }()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	submit := func(queueName, body string) (string, error) {
		resp, err := client.Post(api+"/queues/"+queueName+"/tasks", "application/json", strings.NewReader(body))
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		var out struct {
			Task struct {
				ID string `json:"id"`
			} `json:"task"`
		}
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusCreated || json.Unmarshal(b, &out) != nil {
			return "", fmt.Errorf("submit: %d %s", resp.StatusCode, bytes.TrimSpace(b))
		}
		return out.Task.ID, nil
	}
	wait := func(ids []string, within time.Duration) {
		deadline := time.Now().Add(within)
		for time.Now().Before(deadline) {
			mu.Lock()
			n := 0
			for _, id := range ids {
				if _, ok := received[id]; ok {
					n++
				}
			}
			mu.Unlock()
			if n == len(ids) {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}

	for _, run := range runs {
		name := fmt.Sprintf("bench-%d", run.rate)
		// Warm up: the first submit reads the declaration.
		if id, err := submit(name, `{"task_type":"bench.push"}`); err == nil {
			wait([]string{id}, 10*time.Second)
		}
		time.Sleep(200 * time.Millisecond)
		before := proxy.Counts().Requests
		var (
			wg   sync.WaitGroup
			smu  sync.Mutex
			sent = map[string]time.Time{}
			ids  []string
			errs int
			subs []float64
		)
		start := time.Now()
		for i := range run.tasks {
			at := start.Add(time.Duration(i) * time.Second / time.Duration(run.rate))
			time.Sleep(time.Until(at))
			wg.Add(1)
			go func() {
				defer wg.Done()
				t0 := time.Now()
				id, err := submit(name, `{"task_type":"bench.push","input":{"n":1}}`)
				smu.Lock()
				defer smu.Unlock()
				if err != nil {
					errs++
					return
				}
				sent[id] = t0
				ids = append(ids, id)
				subs = append(subs, float64(time.Since(t0).Microseconds())/1000)
			}()
		}
		wg.Wait()
		wait(ids, 60*time.Second)
		time.Sleep(500 * time.Millisecond) // the completes of the last deliveries
		reqs := proxy.Counts().Requests - before
		var pickup []float64
		mu.Lock()
		for _, id := range ids {
			if r, ok := received[id]; ok {
				pickup = append(pickup, float64(r.Sub(sent[id]).Microseconds())/1000)
			}
		}
		mu.Unlock()
		if len(pickup) < run.tasks || errs > 0 {
			fmt.Fprintf(os.Stderr, "bench: push: %d of %d tasks delivered, %d submits failed\n", len(pickup), run.tasks, errs)
		}
		fmt.Printf("bench push latency=%s target=http tasks=%d rate=%d pickup_p50_ms=%.1f pickup_p99_ms=%.1f requests_per_task=%.2f submit_p50_ms=%.1f submit_p99_ms=%.1f\n",
			latency, run.tasks, run.rate, pct(pickup, 50), pct(pickup, 99), float64(reqs)/float64(run.tasks), pct(subs, 50), pct(subs, 99))
	}

	if delayed > 0 {
		var ids []string
		base := time.Now().Add(2 * time.Second)
		for i := range delayed {
			at := base.Add(time.Duration(i) * 2 * time.Second / time.Duration(delayed))
			id, err := submit("bench-delayed", fmt.Sprintf(`{"task_type":"bench.delayed","schedule_at":%q}`, at.UTC().Format(time.RFC3339Nano)))
			if err != nil {
				return err
			}
			ids = append(ids, id)
		}
		wait(ids, 60*time.Second)
		var late []float64
		mu.Lock()
		for _, id := range ids {
			if r, ok := received[id]; ok {
				late = append(late, float64(r.Sub(available[id]).Microseconds())/1000)
			}
		}
		mu.Unlock()
		fmt.Printf("bench push latency=%s target=http delayed=%d lateness_p50_ms=%.1f lateness_p99_ms=%.1f\n", latency, delayed, pct(late, 50), pct(late, 99))
	}
	return nil
}

// benchDispatchStorm runs the dispatch storm (one 60-task batch a second
// for 60 s, schedule_at spread over the next minute) through the submit
// and dispatch functions with a counting Lambda client, on a clock 20
// times faster than real time, its invocations held to the stack's
// reserved concurrency (10) as Lambda holds them (throttled ones wait):
//
//	bench dispatch storm batches=60 spread_s=60 invokes=I peak_concurrent=C throttled=T
func benchDispatchStorm(ctx context.Context) error {
	res, err := lambdafntest.DispatchStorm(ctx, lambdafntest.StormOptions{})
	if err != nil {
		return err
	}
	fmt.Printf("bench dispatch storm batches=60 spread_s=60 invokes=%d peak_concurrent=%d throttled=%d delivered=%d lateness_p99_ms=%d\n",
		res.Invokes, res.PeakConcurrent, res.Throttled, res.Delivered, res.LatenessP99.Milliseconds())
	return nil
}

// pct returns the p-th percentile of xs (nearest rank), 0 when empty.
func pct(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	i := int(p/100*float64(len(s))+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// benchPushInProcess measures the same pickup as benchPush without the
// HTTP API and the S3 server: submits straight into a queue over the mem
// store with the latency profile added to every request (faultproxy.Slow),
// the dispatcher in the same process (woken as s3q dev wakes it), a local
// HTTP target. It shows what the dispatcher keeps up with when the
// machine's CPU is not the limit (the S3 server, the proxy and request
// signing share it in benchPush):
//
//	bench push latency=L target=http path=in-process tasks=N rate=R pickup_p50_ms=A pickup_p99_ms=B requests_per_task=R
func benchPushInProcess(ctx context.Context, latency faultproxy.Profile, runs []pushRun) error {
	st := store.NewCounting(faultproxy.Slow(memstore.New(), faultproxy.NewDelays(latency, 1)))
	var mu sync.Mutex
	received := map[string]time.Time{}
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		mu.Lock()
		if _, ok := received[r.Header.Get("S3q-Task-Id")]; !ok {
			received[r.Header.Get("S3q-Task-Id")] = time.Now()
		}
		mu.Unlock()
		fmt.Fprint(w, `{}`)
	}))
	defer target.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	q, decls := queues.New(st, queues.Options{AllowInsecureTargets: true})
	d := dispatch.New(q, dispatch.NewDeclared(decls, time.Second), dispatch.Options{
		Logger: slog.New(slog.DiscardHandler), HTTP: dispatch.NewHTTP(dispatch.StaticSecrets{"dev": "bench-secret"}, true),
	})
	local := dispatch.NewLocal(ctx, d)
	d.SetWaker(local)
	defer local.Wait()
	defer cancel()
	for _, run := range runs {
		name := fmt.Sprintf("bench-%d", run.rate)
		if _, _, err := decls.Declare(ctx, queues.Declaration{Name: name, MaxConcurrency: 64, Target: &queues.Target{URL: target.URL, Secret: "dev"}}, time.Now()); err != nil {
			return err
		}
		before := st.Counts().Total()
		var (
			wg   sync.WaitGroup
			smu  sync.Mutex
			sent = map[string]time.Time{}
			errs int
		)
		start := time.Now()
		for i := range run.tasks {
			time.Sleep(time.Until(start.Add(time.Duration(i) * time.Second / time.Duration(run.rate))))
			wg.Add(1)
			go func() {
				defer wg.Done()
				t0 := time.Now()
				res, err := q.Submit(ctx, queue.SubmitRequest{Queue: name, TaskType: "bench.push"}, time.Now())
				smu.Lock()
				defer smu.Unlock()
				if err != nil {
					errs++
					return
				}
				sent[res.Task.ID] = t0
				local.Wake(ctx, dispatch.Wake{Queue: name})
			}()
		}
		wg.Wait()
		for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			mu.Lock()
			n := 0
			for id := range sent {
				if _, ok := received[id]; ok {
					n++
				}
			}
			mu.Unlock()
			if n == len(sent) {
				break
			}
		}
		time.Sleep(500 * time.Millisecond)
		var pickup []float64
		mu.Lock()
		for id, t0 := range sent {
			if r, ok := received[id]; ok {
				pickup = append(pickup, float64(r.Sub(t0).Microseconds())/1000)
			}
		}
		mu.Unlock()
		if len(pickup) < run.tasks || errs > 0 {
			fmt.Fprintf(os.Stderr, "bench: push in-process: %d of %d tasks delivered, %d submits failed\n", len(pickup), run.tasks, errs)
		}
		fmt.Printf("bench push latency=%s target=http path=in-process tasks=%d rate=%d pickup_p50_ms=%.1f pickup_p99_ms=%.1f requests_per_task=%.2f\n",
			latency, run.tasks, run.rate, pct(pickup, 50), pct(pickup, 99), float64(st.Counts().Total()-before)/float64(run.tasks))
	}
	return nil
}
