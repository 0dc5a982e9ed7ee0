// Command clientbench measures the s3q clients the same way in each
// language, through the dev server over versitygw behind the fault proxy of
// each latency profile (scripts/latency -serve). Per profile it prints
//
//	bench clients lang=go|python op=submit latency=L calls=N p50_ms=A p99_ms=B client_cpu_ms=C
//	bench clients lang=go|python worker concurrency=4 latency=L tasks=200 tasks_per_s=X
//
// submit: one caller submits N tasks one after another (p50/p99 of a call's
// wall time; client_cpu_ms is the CPU the measuring process spent per call,
// the client's own overhead). worker: a backlog of no-op tasks drained by
// one worker of concurrency 4; tasks_per_s is the backlog over the time
// from the worker's start to its last complete. The Python figures come
// from clients/python/scripts/bench.py in the venv of scripts/install-pyenv.
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
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/s3q/s3q/shared/client"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/worker"
)

func main() {
	profiles := flag.String("latency", "none,typical", "latency profiles, comma-separated")
	workerLat := flag.String("worker-latency", "typical", "latency profiles of the worker figures, comma-separated")
	calls := flag.Int("calls", 200, "submits of the submit figures")
	tasks := flag.Int("tasks", 200, "backlog of the worker figures")
	conc := flag.Int("concurrency", 4, "worker concurrency")
	python := flag.String("python", ".bin/pyenv/bin/python", "the Python of the client's venv (scripts/install-pyenv)")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("clientbench: ")
	ctx := context.Background()

	for _, p := range strings.Split(*profiles, ",") {
		url, stop := serve(p)
		submitGo(ctx, url, p, *calls)
		runPython(*python, "submit", "--url", url, "--latency", p, "--calls", fmt.Sprint(*calls))
		if strings.Contains(","+*workerLat+",", ","+p+",") {
			workerGo(ctx, url, p, *tasks, *conc)
			runPython(*python, "worker", "--url", url, "--latency", p, "--tasks", fmt.Sprint(*tasks), "--concurrency", fmt.Sprint(*conc))
		}
		stop()
	}
}

// serve starts `go run ./scripts/latency -serve p` and returns its URL and
// a function that stops it.
func serve(p string) (string, func()) {
	cmd := exec.Command("go", "run", "./scripts/latency", "-serve", p)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		log.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		log.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		log.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if _, url, ok := strings.Cut(sc.Text(), " url="); ok && strings.HasPrefix(sc.Text(), "serving ") {
			go func() { _, _ = io.Copy(io.Discard, out) }()
			return url, func() { _ = in.Close(); _ = cmd.Wait() }
		}
	}
	log.Fatalf("scripts/latency -serve %s printed no URL", p)
	return "", nil
}

func runPython(python string, args ...string) {
	cmd := exec.Command(python, append([]string{"clients/python/scripts/bench.py"}, args...)...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		log.Printf("python bench %s: %v", args[0], err)
	}
}

func cpu() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func submitGo(ctx context.Context, url, p string, n int) {
	c, err := client.New(ctx, url, client.Options{Queue: "bench-go-submit-" + queue.NewID(time.Now())[24:]})
	if err != nil {
		log.Fatal(err)
	}
	req := client.SubmitRequest{SubmitRequest: queue.SubmitRequest{TaskType: "bench.noop", Input: json.RawMessage(`{}`)}}
	if _, err := c.Submit(ctx, req); err != nil { // the connection, the queue's auto-declaration
		log.Fatal(err)
	}
	ms := make([]float64, 0, n)
	cpu0 := cpu()
	for i := 0; i < n; i++ {
		req.Input = json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))
		t0 := time.Now()
		if _, err := c.Submit(ctx, req); err != nil {
			log.Fatal(err)
		}
		ms = append(ms, float64(time.Since(t0).Microseconds())/1000)
	}
	perCall := float64((cpu() - cpu0).Microseconds()) / 1000 / float64(n)
	fmt.Printf("bench clients lang=go op=submit latency=%s calls=%d p50_ms=%.2f p99_ms=%.2f client_cpu_ms=%.3f\n",
		p, n, pct(ms, 50), pct(ms, 99), perCall)
}

func pct(xs []float64, p float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	i := int(p/100*float64(len(s)-1) + 0.5)
	return s[min(len(s)-1, i)]
}

// counting is the worker's API with its completes counted.
type counting struct {
	*client.Client
	mu    sync.Mutex
	n     int
	last  time.Time
	want  int
	doneC chan struct{}
}

func (c *counting) Complete(ctx context.Context, req client.CompleteRequest) (client.Task, error) {
	t, err := c.Client.Complete(ctx, req)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	c.last = time.Now()
	if c.n == c.want {
		close(c.doneC)
	}
	return t, err
}

func workerGo(ctx context.Context, url, p string, tasks, conc int) {
	base, err := client.New(ctx, url, client.Options{})
	if err != nil {
		log.Fatal(err)
	}
	c := base.In("bench-go-worker-" + queue.NewID(time.Now())[24:])
	for i := 0; i < tasks; i += 500 {
		var reqs []queue.SubmitRequest
		for j := i; j < min(tasks, i+500); j++ {
			reqs = append(reqs, queue.SubmitRequest{TaskType: "bench.noop", Input: json.RawMessage(fmt.Sprint(j))})
		}
		if _, err := c.SubmitBatch(ctx, reqs); err != nil {
			log.Fatal(err)
		}
	}
	api := &counting{Client: c, want: tasks, doneC: make(chan struct{})}
	w := worker.New(api, worker.Options{Concurrency: conc, Wait: 5 * time.Second, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	w.Handle("bench.noop", func(context.Context, *worker.Task) (json.RawMessage, error) { return nil, nil })
	wctx, cancel := context.WithCancel(ctx)
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	select {
	case <-api.doneC:
	case <-time.After(10 * time.Minute):
	}
	cancel()
	<-done
	api.mu.Lock()
	defer api.mu.Unlock()
	fmt.Printf("bench clients lang=go worker concurrency=%d latency=%s tasks=%d tasks_per_s=%.1f\n",
		conc, p, api.n, float64(api.n)/api.last.Sub(start).Seconds())
}
