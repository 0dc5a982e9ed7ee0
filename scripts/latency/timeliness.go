package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/s3q/s3q/shared/client"
	"github.com/s3q/s3q/shared/dispatch"
	"github.com/s3q/s3q/shared/pushsig"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/worker"
)

// Prices of the running task-hour figure (us-east-1, per request or
// GB-second): API Gateway HTTP API, Lambda requests and arm64 duration at
// the stack's default 256 MB, S3 GET and PUT.
const (
	usdAPIRequest    = 1.00 / 1e6
	usdLambdaRequest = 0.20 / 1e6
	usdLambdaGBs     = 0.0000133334
	usdS3Get         = 0.0004 / 1000
	usdS3Put         = 0.005 / 1000
	lambdaGB         = 0.25
	lambdaCallSecs   = 0.020 // a task read or heartbeat, billed per ms
)

// timeliness prints the figures of expiry, cancel and retry on time
// (docs/guarantees.md "When each thing happens"), through the dev server
// b (its timers every b.tick): the lateness of Task Expired events
// behind expires_at, the time from a cancel to the handler seeing it, the
// time to retry a dead letter, and the cost of a running task-hour.
func (b *bench) timeliness(tasks int, base string) {
	b.expireLateness(tasks, base)
	b.cancelReach("worker", 20)
	b.cancelReach("exec", 10)
	b.cancelReachPush(10)
	b.retryAfterDeadLetter()
	b.runningTaskHour()
}

// expireLateness submits tasks with deadlines spread over 25-45s and
// reads GET /events every 100ms from before the first submit (a slow
// submit phase must not hold the reading back), noting when each task's
// Task Expired event first shows: its lateness behind expires_at.
func (b *bench) expireLateness(n int, base string) {
	ctx := context.Background()
	c := b.c.In("timely-expire")
	due := map[string]time.Time{}
	seen := map[string]time.Time{} // every Task Expired event's task, when first seen
	var mu sync.Mutex
	submitted := make(chan struct{})
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		for deadline := time.Now().Add(4 * time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			resp, err := http.Get(base + "/events?limit=1000")
			if err != nil {
				log.Fatal(err)
			}
			var body struct {
				Events []queue.Event `json:"events"`
			}
			_ = json.NewDecoder(resp.Body).Decode(&body)
			resp.Body.Close()
			now := time.Now()
			mu.Lock()
			for _, r := range body.Events {
				if _, had := seen[r.TaskID]; !had && r.DetailType == queue.DetailTypeTaskExpired {
					seen[r.TaskID] = now
				}
			}
			all := true
			select {
			case <-submitted:
				for id := range due {
					if _, ok := seen[id]; !ok {
						all = false
						break
					}
				}
			default:
				all = false
			}
			mu.Unlock()
			if all {
				return
			}
		}
	}()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i := 0; i < n; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			ttl := queue.Duration(25*time.Second + time.Duration(rand.Int64N(int64(20*time.Second))))
			res, err := c.Submit(ctx, client.SubmitRequest{SubmitRequest: queue.SubmitRequest{TaskType: "t", TTL: &ttl}})
			if err != nil {
				log.Fatal(err)
			}
			mu.Lock()
			due[res.Task.ID] = *res.Task.ExpiresAt
			mu.Unlock()
		}()
	}
	wg.Wait()
	close(submitted)
	<-polled
	var late []time.Duration
	mu.Lock()
	for id, at := range due {
		if s, ok := seen[id]; ok {
			late = append(late, s.Sub(at))
		}
	}
	mu.Unlock()
	sort.Slice(late, func(i, j int) bool { return late[i] < late[j] })
	fmt.Printf("bench timeliness latency=%s expire_event_lateness_p50_ms=%.0f p99_ms=%.0f tasks=%d seen=%d\n",
		b.profile, ms(pct(late, 50)), ms(pct(late, 99)), n, len(late))
}

// cancelReach runs n tasks at once under one worker (a Go handler, or a
// command run as s3q worker --exec runs it, in its own process group,
// killed on cancel), cancels each at a random moment while it runs and
// notes when its handler returned: the time from the cancel's answer.
func (b *bench) cancelReach(mode string, n int) {
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	qn := "timely-cancel-" + mode
	c := b.c.In(qn)
	var mu sync.Mutex
	started := map[string]chan struct{}{}
	ended := map[string]time.Time{}
	w := worker.New(b.c, worker.Options{Queue: qn, Concurrency: n, Logger: slog.New(slog.DiscardHandler)})
	w.Handle("t", func(hctx context.Context, t *worker.Task) (json.RawMessage, error) {
		mu.Lock()
		close(started[t.ID])
		mu.Unlock()
		if mode == "exec" {
			cmd := exec.CommandContext(hctx, "sh", "-c", "sleep 120 & wait")
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
			_ = cmd.Run()
		} else {
			<-hctx.Done()
		}
		mu.Lock()
		ended[t.ID] = time.Now()
		mu.Unlock()
		return nil, hctx.Err()
	})
	var ids []string
	for i := 0; i < n; i++ {
		res, err := c.Submit(ctx, client.SubmitRequest{SubmitRequest: queue.SubmitRequest{TaskType: "t"}})
		if err != nil {
			log.Fatal(err)
		}
		mu.Lock()
		started[res.Task.ID] = make(chan struct{})
		mu.Unlock()
		ids = append(ids, res.Task.ID)
	}
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	cancelled := map[string]time.Time{}
	var cmu sync.Mutex
	var wg sync.WaitGroup
	for _, id := range ids {
		mu.Lock()
		ch := started[id]
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-ch
			time.Sleep(time.Duration(rand.Int64N(int64(3 * time.Second))))
			if _, err := c.Cancel(ctx, id); err != nil {
				log.Fatal(err)
			}
			cmu.Lock()
			cancelled[id] = time.Now()
			cmu.Unlock()
		}()
	}
	wg.Wait()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		mu.Lock()
		k := len(ended)
		mu.Unlock()
		if k == n {
			break
		}
	}
	var reach []time.Duration
	mu.Lock()
	for id, at := range ended {
		reach = append(reach, at.Sub(cancelled[id]))
	}
	mu.Unlock()
	sort.Slice(reach, func(i, j int) bool { return reach[i] < reach[j] })
	fmt.Printf("bench timeliness latency=%s cancel_reach_p50_ms=%.0f p99_ms=%.0f mode=%s tasks=%d reached=%d cancel_poll_ms=%d\n",
		b.profile, ms(pct(reach, 50)), ms(pct(reach, 99)), mode, n, len(reach), worker.DefaultCancelPoll.Milliseconds())
	stop()
	<-done
}

// cancelReachPush delivers n tasks at once to a local HTTP target whose
// handler waits for its request to end, cancels each at a random moment
// of its delivery and notes when the handler saw its request's context
// done (the dispatcher ended the request): the time from the cancel's
// answer.
func (b *bench) cancelReachPush(n int) {
	ctx := context.Background()
	qn := "timely-cancel-push"
	var mu sync.Mutex
	started := map[string]chan struct{}{}
	ended := map[string]time.Time{}
	ready := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-ready
		id := r.Header.Get(pushsig.HeaderTaskID)
		mu.Lock()
		ch := started[id]
		mu.Unlock()
		if ch == nil {
			http.Error(w, "unknown task", http.StatusBadRequest)
			return
		}
		close(ch)
		// A Go server notices a closed connection once the body is read
		// (as a target does, to verify the signature).
		_, _ = io.Copy(io.Discard, r.Body)
		<-r.Context().Done()
		mu.Lock()
		ended[id] = time.Now()
		mu.Unlock()
	}))
	defer srv.Close()
	timeout := queue.Duration(5 * time.Minute)
	if _, _, err := b.c.DeclareQueue(ctx, queues.Declaration{Name: qn, Timeout: &timeout,
		Target: &queues.Target{URL: srv.URL, Secret: benchSecret}}); err != nil {
		log.Fatal(err)
	}
	c := b.c.In(qn)
	for i := 0; i < n; i++ {
		res, err := c.Submit(ctx, client.SubmitRequest{SubmitRequest: queue.SubmitRequest{TaskType: "t"}})
		if err != nil {
			log.Fatal(err)
		}
		mu.Lock()
		started[res.Task.ID] = make(chan struct{})
		mu.Unlock()
	}
	close(ready)
	cancelled := map[string]time.Time{}
	var wg sync.WaitGroup
	mu.Lock()
	for id, ch := range started {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case <-ch:
			case <-time.After(2 * time.Minute):
				return // never delivered: not counted
			}
			time.Sleep(time.Duration(rand.Int64N(int64(3 * time.Second))))
			if _, err := c.Cancel(ctx, id); err != nil {
				log.Fatal(err)
			}
			mu.Lock()
			cancelled[id] = time.Now()
			mu.Unlock()
		}()
	}
	mu.Unlock()
	wg.Wait()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		mu.Lock()
		k := len(ended)
		mu.Unlock()
		if k >= len(cancelled) {
			break
		}
	}
	var reach []time.Duration
	mu.Lock()
	for id, at := range ended {
		if c, ok := cancelled[id]; ok {
			reach = append(reach, at.Sub(c))
		}
	}
	mu.Unlock()
	sort.Slice(reach, func(i, j int) bool { return reach[i] < reach[j] })
	fmt.Printf("bench timeliness latency=%s cancel_reach_p50_ms=%.0f p99_ms=%.0f mode=push tasks=%d reached=%d cancel_poll_ms=%d\n",
		b.profile, ms(pct(reach, 50)), ms(pct(reach, 99)), n, len(reach), dispatch.DefaultCancelPoll.Milliseconds())
}

// retryAfterDeadLetter fails a task for good and retries it at once: the
// time the retry took (it publishes the owed Task Dead-Lettered event).
func (b *bench) retryAfterDeadLetter() {
	ctx := context.Background()
	c := b.c.In("timely-retry")
	var took []time.Duration
	for range 5 {
		res, err := c.Submit(ctx, client.SubmitRequest{SubmitRequest: queue.SubmitRequest{TaskType: "t", MaxAttempts: 1}})
		if err != nil {
			log.Fatal(err)
		}
		cs, err := c.Claim(ctx, client.ClaimRequest{Wait: 5 * time.Second})
		if err != nil || len(cs) != 1 {
			log.Fatalf("claim: %v %v", cs, err)
		}
		if _, err := c.Fail(ctx, client.FailRequest{Lease: cs[0].Lease, Error: "boom"}); err != nil {
			log.Fatal(err)
		}
		t0 := time.Now()
		if _, err := c.Retry(ctx, res.Task.ID); err != nil {
			log.Fatalf("retry right after the dead letter: %v", err)
		}
		took = append(took, time.Since(t0))
		if cs, err := c.Claim(ctx, client.ClaimRequest{Wait: 5 * time.Second}); err == nil && len(cs) == 1 {
			_, _ = c.Complete(ctx, client.CompleteRequest{Lease: cs[0].Lease})
		}
	}
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	fmt.Printf("bench timeliness latency=%s retry_after_deadletter_ms=%.0f max_ms=%.0f retries=%d\n",
		b.profile, ms(pct(took, 50)), ms(took[len(took)-1]), len(took))
}

// runningTaskHour prints what one running task costs an hour with the
// worker's defaults: a read every CancelPoll and a heartbeat every third
// of the default 5-minute lease, each one API call (one Lambda
// invocation) and the S3 requests the dev server logged for one.
func (b *bench) runningTaskHour() {
	ctx := context.Background()
	c := b.c.In("timely-hour")
	res, err := c.Submit(ctx, client.SubmitRequest{SubmitRequest: queue.SubmitRequest{TaskType: "t"}})
	if err != nil {
		log.Fatal(err)
	}
	cs, err := c.Claim(ctx, client.ClaimRequest{Wait: 5 * time.Second})
	if err != nil || len(cs) != 1 {
		log.Fatalf("claim: %v %v", cs, err)
	}
	b.forget()
	for range 10 {
		if _, err := c.Get(ctx, res.Task.ID); err != nil {
			log.Fatal(err)
		}
		if _, err := c.Heartbeat(ctx, client.HeartbeatRequest{Lease: cs[0].Lease}); err != nil {
			log.Fatal(err)
		}
	}
	perGet, perBeat := 0.0, 0.0
	var gets, beats []float64
	for _, l := range b.logged("GET /queues/{queue}/tasks/{id}") {
		gets = append(gets, l.requests)
	}
	for _, l := range b.logged("POST /queues/{queue}/tasks/{id}/heartbeat") {
		beats = append(beats, l.requests)
	}
	perGet, perBeat = mean(gets), mean(beats)
	reads := time.Hour.Seconds() / worker.DefaultCancelPoll.Seconds()
	hbs := time.Hour.Seconds() / (queue.DefaultTimeout / 3).Seconds()
	api := reads + hbs
	// A heartbeat is a GET and a PUT at most; a read a GET.
	s3 := reads*perGet + hbs*perBeat
	usd := api*(usdAPIRequest+usdLambdaRequest+lambdaGB*lambdaCallSecs*usdLambdaGBs) + reads*perGet*usdS3Get + hbs*perBeat*usdS3Put
	fmt.Printf("bench timeliness running_task_hour s3_requests=%.0f api_requests=%.0f usd=%.4f cancel_poll_s=%.0f heartbeat_s=%.0f\n",
		s3, api, usd, worker.DefaultCancelPoll.Seconds(), (queue.DefaultTimeout / 3).Seconds())
}
