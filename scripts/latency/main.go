// Command latency measures the HTTP API through the dev server (the same
// handlers as Lambda, in-process gofakes3 as S3): many concurrent clients
// each submit, claim and complete tasks, and it prints per operation the
// p50 and p99 latency and the S3 requests one call used (read from the
// server's own per-request log lines):
//
//	bench api op=submit clients=16 calls=N p50_ms=X p99_ms=Y s3_requests=R
//
// claim counts claims that got a task; claim_empty those that found none
// (another client had just taken it).
//
// It only prints; nothing fails on a timing.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/s3q/s3q/shared/client"
	"github.com/s3q/s3q/shared/devserver"
	"github.com/s3q/s3q/shared/queue"
)

func main() {
	clients := flag.Int("clients", 16, "concurrent clients")
	perClient := flag.Int("tasks", 50, "tasks each client submits, claims and completes")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("latency: ")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// The server's request log, parsed for S3 request counts per route.
	pr, pw := io.Pipe()
	s3 := map[string][]float64{}
	var logMu sync.Mutex
	logDone := make(chan struct{})
	go func() {
		defer close(logDone)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			var line struct {
				Msg    string `json:"msg"`
				Route  string `json:"route"`
				Status int    `json:"status"`
				S3     struct {
					Requests float64 `json:"requests"`
				} `json:"s3"`
			}
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "request" {
				logMu.Lock()
				key := line.Route
				if line.Status == 204 {
					key += " (empty)"
				}
				s3[key] = append(s3[key], line.S3.Requests)
				logMu.Unlock()
			}
		}
	}()

	started := make(chan string, 1)
	go func() {
		err := devserver.Run(ctx, devserver.Options{
			Addr: "127.0.0.1:0", Out: io.Discard, TickInterval: time.Hour,
			Logger:  slog.New(slog.NewJSONHandler(pw, nil)),
			Started: func(u string) { started <- u },
		})
		if err != nil && ctx.Err() == nil {
			log.Fatal(err)
		}
	}()
	var base string
	select {
	case base = <-started:
	case <-time.After(30 * time.Second):
		log.Fatal("dev server did not start")
	}
	c, err := client.New(ctx, base, client.Options{})
	if err != nil {
		log.Fatal(err)
	}

	lat := map[string][]time.Duration{}
	var mu sync.Mutex
	record := func(op string, d time.Duration) {
		mu.Lock()
		lat[op] = append(lat[op], d)
		mu.Unlock()
	}
	var wg sync.WaitGroup
	begin := time.Now()
	for i := 0; i < *clients; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ttl := queue.Duration(time.Hour)
			for n := 0; n < *perClient; n++ {
				t0 := time.Now()
				if _, err := c.Submit(ctx, client.SubmitRequest{SubmitRequest: queue.SubmitRequest{TaskType: "bench", Input: []byte(`{"n":1}`), TTL: &ttl}}); err != nil {
					log.Fatal(err)
				}
				record("submit", time.Since(t0))
				for {
					t1 := time.Now()
					cs, err := c.Claim(ctx, client.ClaimRequest{LeaseFor: time.Minute})
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
					if _, err := c.Complete(ctx, cs[0].Lease, []byte(`{"ok":true}`)); err != nil {
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
	cancel()
	time.Sleep(200 * time.Millisecond) // let the last log lines drain
	_ = pw.Close()
	<-logDone

	routes := map[string]string{"submit": "POST /queues/{queue}/tasks", "claim": "POST /queues/{queue}/claim",
		"claim_empty": "POST /queues/{queue}/claim (empty)", "complete": "POST /queues/{queue}/tasks/{id}/complete"}
	for _, op := range []string{"submit", "claim", "complete", "claim_empty"} {
		ds := lat[op]
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		logMu.Lock()
		reqs := s3[routes[op]]
		logMu.Unlock()
		fmt.Printf("bench api op=%s clients=%d calls=%d p50_ms=%.2f p99_ms=%.2f s3_requests=%.2f\n",
			op, *clients, len(ds), ms(pct(ds, 50)), ms(pct(ds, 99)), mean(reqs))
	}
	total := *clients * *perClient
	fmt.Printf("bench api lifecycles=%d seconds=%.1f lifecycles_per_s=%.1f\n", total, elapsed.Seconds(), float64(total)/elapsed.Seconds())
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
