// Command consolebench prints what each view of the console costs in S3
// requests on a bucket with many tasks (-tasks, default 10,000), one line
// per view:
//
//	bench console view=queues tasks=10000 status=200 s3_requests=N footer=N api_calls=N
//
// It runs s3q dev on an in-process gofakes3 server behind a proxy that
// counts every S3 request, fills the bucket straight through the core
// (uncounted): -tasks pending tasks in queue bulk, 10 in queue small, 100
// dead-lettered and 20 expired in bulk, and a schedule; then it opens each
// view over HTTP as a browser would and prints the requests the bucket saw
// (s3_requests) beside what the page's footer says (footer). The two
// must be equal. Nothing here fails on a figure; it only prints.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"html"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/s3q/s3q/shared/client"
	"github.com/s3q/s3q/shared/devserver"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/s3local"
	"github.com/s3q/s3q/shared/s3local/faultproxy"
	"github.com/s3q/s3q/shared/schedule"
	"github.com/s3q/s3q/shared/wire"
)

func main() {
	tasks := flag.Int("tasks", 10000, "pending tasks in queue bulk")
	manyQueues := flag.Int("queues", 1000, "one-task queues beside bulk and small, for the queues view (0: none)")
	flag.Parse()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	s3, err := s3local.StartGoFakeS3(s3local.GoFakeS3Options{})
	check(err)
	defer s3.Close()
	proxy, err := faultproxy.Start(faultproxy.Options{Target: s3.Endpoint})
	check(err)
	defer proxy.Close()
	started := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- devserver.Run(ctx, devserver.Options{
			Addr: "127.0.0.1:0", Endpoint: proxy.URL, Bucket: s3.Bucket, Region: s3.Region, AccessKey: s3.AccessKey, SecretKey: s3.SecretKey,
			TickInterval: time.Hour, ConsoleRefresh: -1, Out: io.Discard, Logger: slog.New(slog.DiscardHandler),
			Started: func(u string) { started <- u },
		})
	}()
	var base string
	select {
	case base = <-started:
	case err := <-done:
		log.Fatal(err)
	}

	api, err := client.New(ctx, base, client.Options{})
	check(err)
	start := time.Now()
	ids := fill(ctx, api, s3, *tasks)
	log.Printf("filled the bucket in %s", time.Since(start).Round(time.Millisecond))

	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar, Timeout: time.Minute}
	view := func(name, path string) string {
		return measure(hc, proxy, *tasks, name, http.MethodGet, base+path, nil)
	}
	view("queues", "/ui/")
	if *manyQueues > 0 {
		fillQueues(ctx, api, s3, *manyQueues)
		// A first view reads the stats of its page of queues; a refresh
		// within 30s reuses them.
		measureAs(hc, proxy, fmt.Sprintf("queues=%d", *manyQueues+2), "queues", http.MethodGet, base+"/ui/", nil)
		measureAs(hc, proxy, fmt.Sprintf("queues=%d", *manyQueues+2), "queues_refresh", http.MethodGet, base+"/ui/", nil)
	}
	page := view("tasks_any_status", "/ui/queues/bulk")
	view("tasks_small_queue_any_status", "/ui/queues/small")
	page = view("tasks_pending", "/ui/queues/bulk?status=pending")
	if m := regexp.MustCompile(`id="next-page" href="([^"]+)"`).FindStringSubmatch(page); m != nil {
		view("tasks_pending_page_2", html.UnescapeString(m[1]))
	}
	view("tasks_failed", "/ui/queues/bulk?status=failed")
	view("tasks_of_a_type", "/ui/queues/bulk?type=none-of-these")
	view("task", "/ui/queues/bulk/tasks/"+ids.pending)
	view("task_dead_lettered", "/ui/queues/bulk/tasks/"+ids.failed)
	view("dead_letters", "/ui/dead")
	view("dead_letters_of_a_queue", "/ui/dead?queue=bulk")
	view("expired", "/ui/dead?status=expired")
	view("schedules", "/ui/schedules?queue=bulk")
	view("schedule", "/ui/queues/bulk/schedules/nightly")
	view("events", "/ui/events")
	confirm := view("confirm_retry", "/ui/confirm?action=retry&ref=bulk/"+ids.failed+"&back=/ui/dead")
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(confirm)
	if m == nil {
		log.Fatal("no CSRF token on the confirmation page")
	}
	form := url.Values{"csrf": {m[1]}, "action": {"retry"}, "ref": {"bulk/" + ids.failed}, "back": {"/ui/dead"}}
	measure(hc, proxy, *tasks, "retry_one", http.MethodPost, base+"/ui/do", form)
	confirm = view("confirm_retry_every_failed", "/ui/queues/bulk/bulk?op=retry&status=failed&back=/ui/dead")
	if m = regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(confirm); m == nil {
		log.Fatal("no CSRF token on the bulk confirmation page")
	}
	form = url.Values{"csrf": {m[1]}, "op": {"retry"}, "status": {"failed"}, "back": {"/ui/dead"}}
	measure(hc, proxy, *tasks, "retry_every_failed", http.MethodPost, base+"/ui/queues/bulk/bulk", form)

	cancel()
	if err := <-done; err != nil {
		log.Fatal(err)
	}
}

type seeded struct{ pending, failed string }

// fill declares the queues through the API, writes the pending tasks
// straight through the core, many at once, and makes the dead letters and
// the expired tasks through the API.
func fill(ctx context.Context, api *client.Client, s3 *s3local.Server, n int) seeded {
	for _, name := range []string{"bulk", "small"} {
		_, _, err := api.DeclareQueue(ctx, name, client.QueueRequest{})
		check(err)
	}
	q := queues.NewQueue(s3.Store(""), queues.Options{})
	now := time.Now()
	var out seeded
	var mu sync.Mutex
	work := make(chan int)
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				name := "bulk"
				if i >= n {
					name = "small"
				}
				res, err := q.Submit(ctx, queue.SubmitRequest{ID: queue.NewID(now), Queue: name, TaskType: "work",
					Input: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))}, now)
				check(err)
				if i == n/2 {
					mu.Lock()
					out.pending = res.Task.ID
					mu.Unlock()
				}
			}
		}()
	}
	for i := range n + 10 {
		work <- i
	}
	close(work)
	wg.Wait()
	// 100 dead letters and 20 expired, of types of their own, through the
	// API.
	bulk := api.In("bulk")
	for range 100 {
		_, err := bulk.Submit(ctx, client.SubmitRequest{SubmitRequest: wire.SubmitRequest{TaskType: "flaky", MaxAttempts: 1}})
		check(err)
	}
	for failed := 0; failed < 100; {
		claimed, err := bulk.Claim(ctx, client.ClaimRequest{TaskTypes: []string{"flaky"}, MaxTasks: 100 - failed, LeaseFor: time.Hour, WorkerID: "bench"})
		check(err)
		if len(claimed) == 0 {
			log.Fatalf("claimed only %d of the 100 flaky tasks", failed)
		}
		for _, c := range claimed {
			_, err = bulk.Fail(ctx, client.FailRequest{Lease: c.Lease, Error: "upstream answered 502"})
			check(err)
			out.failed = c.Task.ID
			failed++
		}
	}
	for range 20 {
		res, err := bulk.Submit(ctx, client.SubmitRequest{SubmitRequest: wire.SubmitRequest{TaskType: "late"}})
		check(err)
		_, err = bulk.Expire(ctx, res.Task.ID)
		check(err)
	}
	_, err := q.Sweep(ctx, time.Now(), queue.SweepOptions{}) // publishes the dead letters' events
	check(err)
	_, err = api.In("bulk").CreateSchedule(ctx, schedule.Request{ID: "nightly", TaskType: "report", Queue: "bulk", Cron: "0 2 * * *", Timezone: "Europe/Paris"})
	check(err)
	return out
}

// fillQueues declares n queues q0000.. through the API and puts one task
// in each through the core.
func fillQueues(ctx context.Context, api *client.Client, s3 *s3local.Server, n int) {
	q := queues.NewQueue(s3.Store(""), queues.Options{})
	now := time.Now()
	work := make(chan int)
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				name := fmt.Sprintf("q%04d", i)
				_, _, err := api.DeclareQueue(ctx, name, client.QueueRequest{})
				check(err)
				_, err = q.Submit(ctx, queue.SubmitRequest{ID: queue.NewID(now), Queue: name, TaskType: "work"}, now)
				check(err)
			}
		}()
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
}

// measure opens one view and prints what the bucket saw beside what the
// page says; it returns the page.
func measure(hc *http.Client, proxy *faultproxy.Proxy, tasks int, name, method, u string, form url.Values) string {
	return measureAs(hc, proxy, fmt.Sprintf("tasks=%d", tasks), name, method, u, form)
}

// measureAs is measure with the line's setting (tasks=N, queues=N).
func measureAs(hc *http.Client, proxy *faultproxy.Proxy, setting, name, method, u string, form url.Values) string {
	before := proxy.Counts().Requests
	var resp *http.Response
	var err error
	if method == http.MethodPost {
		req, _ := http.NewRequest(method, u, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", "http://"+req.URL.Host)
		resp, err = hc.Do(req)
	} else {
		resp, err = hc.Get(u)
	}
	check(err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	seen := proxy.Counts().Requests - before
	footer, _ := strconv.Atoi(resp.Header.Get("S3q-Page-S3-Requests"))
	calls := ""
	if m := regexp.MustCompile(`data-calls="(\d+)"`).FindSubmatch(body); m != nil {
		calls = string(m[1])
	}
	fmt.Printf("bench console view=%s %s status=%d s3_requests=%d footer=%d api_calls=%s\n", name, setting, resp.StatusCode, seen, footer, calls)
	return string(body)
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
