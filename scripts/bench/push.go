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
	"net/http/httputil"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/s3q/s3q/shared/devserver"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/s3local"
	"github.com/s3q/s3q/shared/worker"
)

// benchPush measures push delivery through s3q dev (in-process gofakes3
// behind a request-counting proxy, the API on loopback, dispatch in
// process) to a local HTTP target that verifies every signature:
//
//	bench push target=http tasks=N pickup_p50_ms=A pickup_p99_ms=B requests_per_task=R
//	bench push target=http delayed=N lateness_p50_ms=A lateness_p99_ms=B
//
// pickup is from sending the submit to the target receiving the delivery,
// for tasks due now, submitted one after another; requests_per_task
// counts every S3 request of that phase (submit, wake, claim, complete)
// divided by the tasks. lateness is from a task's available_at to its
// delivery, for tasks submitted with a delay of 2-4s. Timers are off
// (--tick 1h): only the wakes deliver.
func benchPush(ctx context.Context, tasks, delayed int) error {
	s3, err := s3local.StartGoFakeS3(s3local.GoFakeS3Options{})
	if err != nil {
		return err
	}
	defer s3.Close()
	var s3Requests atomic.Int64
	s3URL, _ := url.Parse(s3.Endpoint)
	proxy := httputil.NewSingleHostReverseProxy(s3URL)
	counting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s3Requests.Add(1)
		proxy.ServeHTTP(w, r)
	}))
	defer counting.Close()

	const secret = "bench-secret"
	var mu sync.Mutex
	received := map[string]time.Time{}
	available := map[string]time.Time{}
	var targetURL string
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		at := time.Now()
		body, _ := io.ReadAll(r.Body)
		if _, err := worker.VerifySignature(worker.PushTarget{Secret: secret, URL: targetURL, Queue: "bench", Tolerance: time.Minute}, r, body, at); err != nil {
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

	ctx, cancel := context.WithCancel(ctx)
	started := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- devserver.Run(ctx, devserver.Options{
			Addr: "127.0.0.1:0", Endpoint: counting.URL, Bucket: s3.Bucket, AccessKey: s3.AccessKey, SecretKey: s3.SecretKey,
			TickInterval: time.Hour,
			PushQueues:   []queue.Declaration{{Name: "bench", Target: &queue.Target{URL: target.URL, Secret: "dev"}}},
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
	submit := func(body string) (string, time.Time, error) {
		at := time.Now()
		resp, err := http.Post(api+"/queues/bench/tasks", "application/json", strings.NewReader(body))
		if err != nil {
			return "", at, err
		}
		defer resp.Body.Close()
		var out struct {
			Task struct {
				ID string `json:"id"`
			} `json:"task"`
		}
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusCreated || json.Unmarshal(b, &out) != nil {
			return "", at, fmt.Errorf("submit: %d %s", resp.StatusCode, bytes.TrimSpace(b))
		}
		return out.Task.ID, at, nil
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

	// Warm up: the queue is declared and registered by its first submit.
	if id, _, err := submit(`{"task_type":"bench.push"}`); err == nil {
		wait([]string{id}, 5*time.Second)
	}
	time.Sleep(200 * time.Millisecond)

	before := s3Requests.Load()
	sent := map[string]time.Time{}
	var ids []string
	for range tasks {
		id, at, err := submit(`{"task_type":"bench.push","input":{"n":1}}`)
		if err != nil {
			return err
		}
		sent[id] = at
		ids = append(ids, id)
		time.Sleep(5 * time.Millisecond)
	}
	wait(ids, 30*time.Second)
	time.Sleep(300 * time.Millisecond) // the completes of the last deliveries
	reqs := s3Requests.Load() - before
	var pickup []float64
	mu.Lock()
	for _, id := range ids {
		if r, ok := received[id]; ok {
			pickup = append(pickup, float64(r.Sub(sent[id]).Microseconds())/1000)
		}
	}
	mu.Unlock()
	if len(pickup) < tasks {
		fmt.Fprintf(os.Stderr, "bench: push: %d of %d tasks delivered\n", len(pickup), tasks)
	}
	fmt.Printf("bench push target=http tasks=%d pickup_p50_ms=%.1f pickup_p99_ms=%.1f requests_per_task=%.2f\n",
		tasks, pct(pickup, 50), pct(pickup, 99), float64(reqs)/float64(tasks))

	ids = ids[:0]
	base := time.Now().Add(2 * time.Second)
	for i := range delayed {
		at := base.Add(time.Duration(i) * 2 * time.Second / time.Duration(max(delayed, 1)))
		id, _, err := submit(fmt.Sprintf(`{"task_type":"bench.delayed","schedule_at":%q}`, at.UTC().Format(time.RFC3339Nano)))
		if err != nil {
			return err
		}
		ids = append(ids, id)
	}
	wait(ids, 30*time.Second)
	var late []float64
	mu.Lock()
	for _, id := range ids {
		if r, ok := received[id]; ok {
			late = append(late, float64(r.Sub(available[id]).Microseconds())/1000)
		}
	}
	mu.Unlock()
	fmt.Printf("bench push target=http delayed=%d lateness_p50_ms=%.1f lateness_p99_ms=%.1f\n", delayed, pct(late, 50), pct(late, 99))
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
