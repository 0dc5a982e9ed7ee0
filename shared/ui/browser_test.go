package ui_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/s3q/s3q/shared/api/openapitest"
	"github.com/s3q/s3q/shared/client"
	"github.com/s3q/s3q/shared/devserver"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/s3local"
	"github.com/s3q/s3q/shared/s3local/faultproxy"
	"github.com/s3q/s3q/shared/schedule"
	"github.com/s3q/s3q/shared/wire"
)

// The console in a real browser (Chromium, headless, driven by chromedp)
// against a dev server on gofakes3, every S3 request of which passes a
// counting proxy: each view is opened, acted on, checked to cost exactly
// what its footer says, and saved as a screenshot under
// $TEST_ARTIFACTS/ui (default .artifacts/ui at the repository's root).
//
// Chromium comes from scripts/install-chromium, which `make test` runs;
// without it this test fails.
func TestConsoleInABrowser(t *testing.T) {
	chrome := findChromium(t)
	d := startDev(t, devserver.Options{TickInterval: time.Hour, ConsoleRefresh: time.Hour})
	ctx := context.Background()
	api, err := client.New(ctx, d.url, client.Options{HTTPClient: d.checked})
	if err != nil {
		t.Fatal(err)
	}
	seed(t, api, d)

	b := newBrowser(t, chrome, d)

	t.Run("queues", func(t *testing.T) {
		b.open(t, "/ui/", "queues")
		b.hasText(t, "table.grid", "paging")
		b.hasText(t, "table.grid", "work")
		// The paging queue's 120 tasks are live and ready.
		live := b.eval(t, `[...document.querySelectorAll("tbody tr")].find(r => r.textContent.includes("paging")).children[1].textContent.trim()`)
		if live != "120" {
			t.Errorf("live of paging = %q, want 120", live)
		}
	})

	t.Run("a_submitted_task_appears_with_its_deadline_and_timeline", func(t *testing.T) {
		res, err := api.Submit(ctx, client.SubmitRequest{SubmitRequest: wire.SubmitRequest{
			TaskType: "hello", Input: json.RawMessage(`{"name":"world"}`), TTL: ptr(queue.Duration(time.Hour))}})
		if err != nil {
			t.Fatal(err)
		}
		b.open(t, "/ui/queues/default", "tasks")
		b.hasText(t, "#tasks", res.Task.ID[len(res.Task.ID)-12:])
		// Another one, seen by an in-place refresh, without a navigation.
		res2, err := api.Submit(ctx, client.SubmitRequest{SubmitRequest: wire.SubmitRequest{TaskType: "hello2"}})
		if err != nil {
			t.Fatal(err)
		}
		b.eval(t, `window.s3q.refresh().then(() => "ok")`, chromedp.EvalAwaitPromise)
		b.hasText(t, "#tasks", res2.Task.ID[len(res2.Task.ID)-12:])
		// A refresh that finds the page unchanged waits twice as long.
		base := b.eval(t, `window.s3q.delay()`)
		b.eval(t, `window.s3q.refresh().then(() => "ok")`, chromedp.EvalAwaitPromise)
		if twice := b.eval(t, `window.s3q.delay() / 2`); twice != base {
			t.Errorf("after an unchanged refresh the delay is 2×%s, want 2×%s", twice, base)
		}
		// A hidden tab stops refreshing; it refreshes at once when it is back.
		before := b.eval(t, `window.s3q.fetches()`)
		b.eval(t, `Object.defineProperty(document, "hidden", {configurable: true, get: () => true});
			document.dispatchEvent(new Event("visibilitychange")); "ok"`)
		b.hasText(t, "#refresh-status", "stopped while this tab is hidden")
		if n := b.eval(t, `window.s3q.fetches()`); n != before {
			t.Errorf("hiding the tab fetched the page (%s, then %s)", before, n)
		}
		b.eval(t, `Object.defineProperty(document, "hidden", {configurable: true, get: () => false});
			document.dispatchEvent(new Event("visibilitychange")); "ok"`)
		b.eval(t, `window.s3q.refresh().then(() => "ok")`, chromedp.EvalAwaitPromise) // the one it started
		if n := b.eval(t, `window.s3q.fetches() - 1`); n != before {
			t.Errorf("back in view it fetched %s times, want once", n)
		}
		b.hasText(t, "#refresh-status", "Next refresh in")
		// The browser's own document.hidden again, or leaving the page
		// (a visibilitychange) would look like coming back to it.
		b.eval(t, `delete document.hidden; String(document.hidden)`)

		b.clickNav(t, fmt.Sprintf(`a[title=%q]`, res.Task.ID))
		b.checkCost(t, "task")
		b.hasText(t, "h1", res.Task.ID)
		b.hasText(t, "#h-deadline + p", "Must start by")
		b.hasText(t, "ol.timeline", "Submitted")
		b.hasText(t, "details.json", `"name": "world"`)
		b.shot(t, "task")
	})

	t.Run("large_input_starts_collapsed_and_an_artifact_has_a_link", func(t *testing.T) {
		res, err := api.Submit(ctx, client.SubmitRequest{SubmitRequest: wire.SubmitRequest{
			TaskType: "big", Input: json.RawMessage(`{"blob":"` + strings.Repeat("abcdefgh", 600) + `"}`)}})
		if err != nil {
			t.Fatal(err)
		}
		b.open(t, "/ui/queues/default/tasks/"+res.Task.ID, "")
		if open := b.eval(t, `document.querySelector("details.json").open`); open != "false" {
			t.Errorf("a 4.8 KB input is open: %s", open)
		}
		b.hasText(t, "details.json summary", "collapsed")
		b.do(t, chromedp.Click(chromedp.CSS("details.json summary")))
		if open := b.eval(t, `document.querySelector("details.json").open`); open != "true" {
			t.Errorf("a click on its summary does not open it")
		}
		b.shot(t, "task-large-input")

		// An artifact uploaded through the API gets a download link by name.
		var up struct {
			Artifact client.ArtifactURL `json:"artifact"`
		}
		report := []byte("report body\n")
		if _, err := api.Call(ctx, "POST", "/queues/default/tasks/"+res.Task.ID+"/artifacts", nil,
			map[string]any{"name": "report.txt", "size": len(report)}, &up); err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest("PUT", up.Artifact.UploadURL, bytes.NewReader(report))
		for k, vs := range up.Artifact.Headers {
			req.Header[k] = vs
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("upload: %v %v", resp, err)
		}
		resp.Body.Close()
		b.open(t, "/ui/queues/default/tasks/"+res.Task.ID, "")
		b.hasText(t, "#h-artifacts + p", "Artifacts were uploaded")
		b.do(t, chromedp.SendKeys(chromedp.ID("artifact-name"), "report.txt"))
		b.clickNav(t, "#h-artifacts ~ form button")
		b.checkCost(t, "artifact")
		href := b.eval(t, `document.querySelector("main a.button").href`)
		if !strings.Contains(href, "report.txt") || !strings.HasPrefix(href, "http://127.0.0.1:") {
			t.Errorf("download link %q", href)
		}
		if got, err := http.Get(href); err != nil {
			t.Error(err)
		} else {
			body, _ := io.ReadAll(got.Body)
			got.Body.Close()
			if !bytes.Equal(body, report) {
				t.Errorf("the link downloads %q", body)
			}
		}
		b.shot(t, "artifact")
	})

	t.Run("retry_a_dead_lettered_task", func(t *testing.T) {
		b.open(t, "/ui/dead?queue=work", "dead")
		b.hasText(t, "#dead", "upstream answered 502")
		if n := b.count(t, "#dead tbody input[name=ref]"); n != 3 {
			t.Fatalf("%d failed tasks listed, want 3", n)
		}
		id := b.eval(t, `document.querySelector("#dead tbody input[name=ref]").value`)
		b.clickNav(t, `#dead tbody a.button`)
		b.hasText(t, "h1", "Retry 1 task?")
		b.hasText(t, ".confirm", "becomes pending again")
		b.shot(t, "confirm")
		b.clickNav(t, "#confirm")
		b.checkCost(t, "retry, done")
		b.hasText(t, "#results", "now pending")
		b.shot(t, "done")
		b.open(t, "/ui/queues/"+id[:strings.Index(id, "/")]+"/tasks/"+id[strings.Index(id, "/")+1:], "")
		b.hasText(t, "#task-status", "pending")
		b.hasText(t, "ol.timeline", "Retried by hand")
		b.shot(t, "task-retried")
	})

	t.Run("bulk_retry_of_the_selected_tasks", func(t *testing.T) {
		b.open(t, "/ui/dead?queue=work", "")
		if n := b.count(t, "#dead tbody input[name=ref]"); n != 2 {
			t.Fatalf("%d failed tasks listed, want 2", n)
		}
		b.do(t, chromedp.Click(chromedp.CSS("input.select-all")))
		b.hasText(t, ".selected-count", "2 selected")
		b.clickNav(t, `button[value=retry]`)
		b.hasText(t, "h1", "Retry 2 tasks?")
		b.clickNav(t, "#confirm")
		b.checkCost(t, "bulk retry, done")
		b.hasText(t, "h1", "Retry: 2 of 2 done")
		b.open(t, "/ui/dead?queue=work", "")
		if n := b.count(t, "#dead tbody input[name=ref]"); n != 0 {
			t.Errorf("%d failed tasks left after the bulk retry", n)
		}
		b.open(t, "/ui/dead?status=expired", "expired")
		b.hasText(t, "#dead", "manual")
	})

	// The queue operations: counts by status, the oldest pending task,
	// pause and resume, retry of every failed task of a queue.
	t.Run("queue_operations", func(t *testing.T) {
		b.open(t, "/ui/queues/work", "")
		if b.count(t, "#queue-state") == 0 {
			t.Fatal("the queue's page shows no stats")
		}
		b.hasText(t, "#oldest-pending", "due ")
		b.clickNav(t, "#queue-toggle")
		b.checkCost(t, "queue, paused")
		b.hasText(t, "#queue-state", "paused")
		b.shot(t, "tasks-paused")
		b.clickNav(t, "#queue-toggle")
		b.hasText(t, "#queue-state", "active")

		b.open(t, "/ui/", "queues-by-status")
		failed := b.eval(t, `(() => { const h = [...document.querySelectorAll("thead th")].map(th => th.textContent.trim());
			const row = [...document.querySelectorAll("tbody tr")].find(r => r.querySelector("th").textContent.includes("flaky"));
			return row.children[h.indexOf("Failed")].textContent.trim(); })()`)
		if failed != "2" {
			t.Errorf("failed of flaky = %q, want 2", failed)
		}

		b.open(t, "/ui/dead?queue=flaky", "")
		b.clickNav(t, "#bulk-retry")
		b.checkCost(t, "bulk retry, dry run")
		b.hasText(t, "#bulk-dry-run", "2 tasks would change")
		b.shot(t, "bulk-confirm")
		b.clickNav(t, "#confirm")
		b.checkCost(t, "bulk retry, done")
		b.hasText(t, "#bulk-result", "2 were changed")
		b.open(t, "/ui/dead?queue=flaky", "")
		if n := b.count(t, "#dead tbody input[name=ref]"); n != 0 {
			t.Errorf("%d failed tasks left in flaky after retrying every one", n)
		}
	})

	t.Run("pause_a_schedule_and_its_next_fire_disappears", func(t *testing.T) {
		b.open(t, "/ui/schedules?queue=work", "schedules")
		b.hasText(t, "#schedules", "every 5 minutes")
		b.hasText(t, "#schedules .next-fire", "CET")
		b.open(t, "/ui/queues/work/schedules/reports", "schedule")
		if n := b.count(t, "#next-fires li"); n != 5 {
			t.Fatalf("%d next fires, want 5", n)
		}
		b.hasText(t, "#fires", "triggered by hand")
		b.clickNav(t, `button[aria-label="Pause schedule reports"]`)
		b.checkCost(t, "schedule, paused")
		b.hasText(t, "#schedule-state", "paused")
		b.hasText(t, "#next-fires-none", "Paused: no next fire")
		if n := b.count(t, "#next-fires li"); n != 0 {
			t.Errorf("%d next fires of a paused schedule", n)
		}
		b.shot(t, "schedule-paused")
		b.open(t, "/ui/schedules?queue=work", "")
		b.hasText(t, "#schedules .next-fire", "none")
		// A paused schedule still fires by hand.
		b.clickNav(t, `a[aria-label="Trigger schedule reports"]`)
		b.hasText(t, ".confirm", "fires once now")
		b.clickNav(t, "#confirm")
		b.checkCost(t, "trigger, done")
		b.hasText(t, "#results", "fired task")
	})

	t.Run("follow_paging_to_the_end", func(t *testing.T) {
		b.open(t, "/ui/queues/paging?status=pending", "tasks-paging")
		seen := map[string]bool{}
		for page := 1; ; page++ {
			ids := b.eval(t, `[...document.querySelectorAll("#tasks tbody input[name=ref]")].map(i => i.value).join(" ")`)
			for _, id := range strings.Fields(ids) {
				if seen[id] {
					t.Errorf("page %d repeats %s", page, id)
				}
				seen[id] = true
			}
			if b.count(t, "#next-page") == 0 {
				break
			}
			if page > 5 {
				t.Fatal("more than 5 pages of 50 for 120 tasks")
			}
			b.clickNav(t, "#next-page")
			b.checkCost(t, fmt.Sprintf("paging page %d", page+1))
		}
		if len(seen) != 120 {
			t.Errorf("paging saw %d tasks, want 120", len(seen))
		}
		b.hasText(t, ".pager", "End of the listing")
	})

	t.Run("api_errors_are_shown_with_code_and_field", func(t *testing.T) {
		b.open(t, "/ui/queues/work?type=not%20a%20type", "error-field")
		b.hasText(t, "#list-error", "invalid_input")
		b.hasText(t, "#list-error .field", "task_type")
		if v := b.eval(t, `document.getElementById("f-type").getAttribute("aria-invalid")`); v != "true" {
			t.Errorf("the type field is not marked invalid: %q", v)
		}
		b.open(t, "/ui/queues/work/tasks/not-an-id", "error-page")
		b.hasText(t, ".error", "invalid_input")
	})

	t.Run("keyboard_and_labels", func(t *testing.T) {
		b.open(t, "/ui/queues/work", "")
		// Tab reaches the skip link first, with a visible focus ring.
		b.do(t, chromedp.KeyEvent("\t"))
		if got := b.eval(t, `document.activeElement.textContent + " | " + getComputedStyle(document.activeElement).outlineStyle`); got != "Skip to content | solid" {
			t.Errorf("after Tab: %q, want the skip link with a solid outline", got)
		}
		// j and k move between the rows' links.
		b.do(t, chromedp.KeyEvent("j"), chromedp.KeyEvent("j"))
		if got, want := b.eval(t, `document.activeElement.title`), b.eval(t, `document.querySelectorAll("#tasks tbody th a")[1].title`); got != want || got == "" {
			t.Errorf("j j focused %q, want the second row's task %q", got, want)
		}
		b.do(t, chromedp.KeyEvent("k"))
		if got, want := b.eval(t, `document.activeElement.title`), b.eval(t, `document.querySelector("#tasks tbody th a").title`); got != want {
			t.Errorf("k focused %q, want the first row's task %q", got, want)
		}
		b.do(t, chromedp.KeyEvent("/"))
		if id := b.eval(t, `document.activeElement.id`); id != "find-ref" {
			t.Errorf(`"/" focused %q, want the find box`, id)
		}
		// Every visible control has a name a screen reader can say.
		unlabelled := b.eval(t, `[...document.querySelectorAll("input:not([type=hidden]), select, button")].filter(e =>
			!(e.labels && e.labels.length) && !e.getAttribute("aria-label") && !e.textContent.trim()).map(e => e.outerHTML).join("\n")`)
		if unlabelled != "" {
			t.Errorf("controls without a label:\n%s", unlabelled)
		}
		// The find box opens a task by queue/id.
		b.do(t, chromedp.Evaluate[chromedp.Void](`document.getElementById("find-ref").value = ""`), chromedp.SendKeys(chromedp.ID("find-ref"), "work/0190a000-0000-7000-8000-000000000000"))
		b.clickNav(t, `.find button`)
		b.hasText(t, ".error", "not_found")
	})

	t.Run("dark", func(t *testing.T) {
		if _, err := chromedp.Call(b.ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}}); err != nil {
			t.Fatal(err)
		}
		defer chromedp.Call(b.ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{})
		b.open(t, "/ui/", "queues-dark")
		if bg := b.eval(t, `getComputedStyle(document.documentElement).backgroundColor`); bg != "rgb(17, 20, 24)" {
			t.Errorf("dark background = %q", bg)
		}
		b.open(t, "/ui/queues/work", "tasks-dark")
	})

	t.Run("events", func(t *testing.T) {
		// A dev server of its own whose sweep runs every second, so that
		// a task expires and its event shows.
		e := startDev(t, devserver.Options{TickInterval: time.Second})
		eapi, err := client.New(ctx, e.url, client.Options{HTTPClient: e.checked})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := eapi.Submit(ctx, client.SubmitRequest{SubmitRequest: wire.SubmitRequest{TaskType: "short", TTL: ptr(queue.Duration(time.Second))}}); err != nil {
			t.Fatal(err)
		}
		eb := b.at(e)
		deadline := time.Now().Add(90 * time.Second)
		for {
			eb.open(t, "/ui/events", "")
			if eb.count(t, "#events tbody th") > 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("no event within 90s of a task's 1s TTL, with a sweep every second")
			}
			time.Sleep(500 * time.Millisecond)
		}
		eb.hasText(t, "#events", "Task Expired")
		eb.shot(t, "events")
	})

	b.checkConsole(t)
}

// seed makes what the views show: 120 pending tasks in queue paging, 3
// dead-lettered and 1 expired task in queue work, and a schedule there
// fired once by hand, and 2 dead-lettered tasks in queue flaky.
func seed(t *testing.T, api *client.Client, d *dev) {
	t.Helper()
	ctx := context.Background()
	if _, _, err := api.DeclareQueue(ctx, "work", client.QueueRequest{MaxConcurrency: 4, TTL: ptr(queue.Duration(24 * time.Hour))}); err != nil {
		t.Fatal(err)
	}
	var batch []wire.SubmitRequest
	for i := range 120 {
		batch = append(batch, wire.SubmitRequest{Queue: "paging", TaskType: "page", Input: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))})
	}
	items, err := api.SubmitBatch(ctx, batch)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range items {
		if it.Error != nil {
			t.Fatal(it.Error)
		}
	}
	work := api.In("work")
	for i := range 3 {
		if _, err := work.Submit(ctx, client.SubmitRequest{SubmitRequest: wire.SubmitRequest{TaskType: "flaky", MaxAttempts: 1,
			Input: json.RawMessage(fmt.Sprintf(`{"try":%d}`, i))}}); err != nil {
			t.Fatal(err)
		}
	}
	claimed, err := work.Claim(ctx, client.ClaimRequest{TaskTypes: []string{"flaky"}, MaxTasks: 3, LeaseFor: time.Hour, WorkerID: "worker-1"})
	if err != nil || len(claimed) != 3 {
		t.Fatalf("claim: %d, %v", len(claimed), err)
	}
	for i, c := range claimed {
		if _, err := work.Fail(ctx, client.FailRequest{Lease: c.Lease, Error: fmt.Sprintf("upstream answered 502 (try %d)", i)}); err != nil {
			t.Fatal(err)
		}
	}
	// Two more in queue flaky, for the retry of every failed task.
	flaky := api.In("flaky")
	for i := range 2 {
		if _, err := flaky.Submit(ctx, client.SubmitRequest{SubmitRequest: wire.SubmitRequest{TaskType: "flaky", MaxAttempts: 1,
			Input: json.RawMessage(fmt.Sprintf(`{"try":%d}`, i))}}); err != nil {
			t.Fatal(err)
		}
	}
	if claimed, err = flaky.Claim(ctx, client.ClaimRequest{MaxTasks: 2, LeaseFor: time.Hour, WorkerID: "worker-2"}); err != nil || len(claimed) != 2 {
		t.Fatalf("claim: %d, %v", len(claimed), err)
	}
	for _, c := range claimed {
		if _, err := flaky.Fail(ctx, client.FailRequest{Lease: c.Lease, Error: "timeout", Permanent: true}); err != nil {
			t.Fatal(err)
		}
	}
	// The sweep publishes their Task Dead-Lettered events (a task can be
	// retried once its event is out): one sweep, straight on the bucket.
	if _, err := queues.NewQueue(d.s3.Store(""), queues.Options{}).Sweep(ctx, time.Now(), queue.SweepOptions{}); err != nil {
		t.Fatal(err)
	}
	res, err := work.Submit(ctx, client.SubmitRequest{SubmitRequest: wire.SubmitRequest{TaskType: "late"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := work.Expire(ctx, res.Task.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := work.CreateSchedule(ctx, schedule.Request{ID: "reports", TaskType: "report", Queue: "work", Cron: "*/5 * * * *",
		Timezone: "Europe/Paris", Input: json.RawMessage(`{"kind":"daily"}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := work.TriggerSchedule(ctx, "reports"); err != nil {
		t.Fatal(err)
	}
}

// dev is a dev server on gofakes3 behind a counting proxy.
type dev struct {
	url   string
	proxy *faultproxy.Proxy
	s3    *s3local.Server
	logs  *syncBuf
	// checked is an HTTP client whose answers from the API are
	// validated against the OpenAPI document.
	checked *http.Client
}

type syncBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) tail(n int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	str := s.b.String()
	return str[max(0, len(str)-n):]
}

// startDev runs a dev server with opts on a gofakes3 server of its own,
// behind a proxy that counts every S3 request, until the test ends.
func startDev(t *testing.T, opts devserver.Options) *dev {
	t.Helper()
	s3, err := s3local.StartGoFakeS3(s3local.GoFakeS3Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s3.Close() })
	proxy, err := faultproxy.Start(faultproxy.Options{Target: s3.Endpoint})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	opts.Addr, opts.Endpoint, opts.Bucket, opts.Region = "127.0.0.1:0", proxy.URL, s3.Bucket, s3.Region
	opts.AccessKey, opts.SecretKey = s3.AccessKey, s3.SecretKey
	logs := &syncBuf{}
	opts.Out, opts.Logger = io.Discard, slog.New(slog.NewJSONHandler(logs, nil))
	// Every answer of the API, to the console's calls and to the
	// test's (through dev.checked), is validated against the OpenAPI
	// document.
	checked := &http.Client{Timeout: 30 * time.Second, Transport: &openapitest.Transport{T: t}}
	opts.ConsoleHTTPClient = checked
	started := make(chan string, 1)
	opts.Started = func(u string) { started <- u }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- devserver.Run(ctx, opts) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("dev server: %v", err)
		}
	})
	select {
	case u := <-started:
		return &dev{url: u, proxy: proxy, s3: s3, logs: logs, checked: checked}
	case err := <-done:
		t.Fatalf("dev server: %v", err)
	}
	return nil
}

// findChromium returns the browser's path, or fails the test saying how
// to install it.
func findChromium(t *testing.T) string {
	t.Helper()
	for _, p := range []string{os.Getenv("S3Q_CHROMIUM"), "/usr/bin/chromium", "/usr/bin/chromium-browser"} {
		if p == "" {
			continue
		}
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	t.Fatal("no Chromium: run scripts/install-chromium (make test does), or set S3Q_CHROMIUM")
	return ""
}

// browser is one headless Chromium tab on a dev server's console.
type browser struct {
	// uncounted is true on a dev server whose timers run: its views
	// are not checked against the bucket's count.
	uncounted bool
	ctx       context.Context
	d         *dev
	dir       string
	msgs      *messages
	before    int64 // the bucket's count before the last clickNav
}

type messages struct {
	mu   sync.Mutex
	list []chromedp.ConsoleMessage
}

func newBrowser(t *testing.T, chrome string, d *dev) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chrome), chromedp.NoSandbox,
		chromedp.WindowSize(1280, 900), chromedp.Flag("disable-gpu", true), chromedp.Flag("lang", "en-US"))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	b := &browser{ctx: ctx, d: d, dir: artifactsDir(t), msgs: &messages{}}
	console := chromedp.Console(ctx)
	go func() {
		for m, err := range console {
			if err != nil {
				return
			}
			b.msgs.mu.Lock()
			b.msgs.list = append(b.msgs.list, m)
			b.msgs.mu.Unlock()
		}
	}()
	return b
}

// at returns the browser, in the same tab, on another dev server.
func (b *browser) at(d *dev) *browser {
	c := *b
	c.d, c.uncounted = d, true
	return &c
}

// artifactsDir is where screenshots go: $TEST_ARTIFACTS/ui, or
// .artifacts/ui at the repository's root.
func artifactsDir(t *testing.T) string {
	t.Helper()
	base := os.Getenv("TEST_ARTIFACTS")
	if base == "" {
		dir, err := os.Getwd()
		if err != nil {
			t.Fatal(err)
		}
		for ; ; dir = filepath.Dir(dir) {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				break
			}
			if filepath.Dir(dir) == dir {
				t.Fatal("no go.mod above the test")
			}
		}
		base = filepath.Join(dir, ".artifacts")
	}
	dir := filepath.Join(base, "ui")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func (b *browser) do(t *testing.T, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatal(err)
	}
}

// open navigates to path, checks that the view cost what its footer
// says, and saves a screenshot named shot unless shot is "".
func (b *browser) open(t *testing.T, path, shot string) {
	t.Helper()
	b.settle()
	before := b.d.proxy.Counts().Requests
	b.d.proxy.StartTrace()
	b.do(t, chromedp.Navigate(b.d.url+path), chromedp.WaitReady(chromedp.CSS("#cost")))
	b.costIs(t, path, b.d.proxy.Counts().Requests-before)
	if shot != "" {
		b.shot(t, shot)
	}
}

// clickNav clicks what sel selects and waits for the page it leads to.
func (b *browser) clickNav(t *testing.T, sel string) {
	t.Helper()
	b.settle()
	b.before = b.d.proxy.Counts().Requests
	b.d.proxy.StartTrace()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if _, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(sel))); err != nil {
		t.Fatalf("click %s: %v", sel, err)
	}
	b.do(t, chromedp.WaitReady(chromedp.CSS("#cost")))
}

// checkCost checks the page a clickNav led to.
func (b *browser) checkCost(t *testing.T, what string) {
	t.Helper()
	b.costIs(t, what, b.d.proxy.Counts().Requests-b.before)
}

// costIs checks that the footer says the S3 requests the proxy saw.
func (b *browser) costIs(t *testing.T, what string, seen int64) {
	t.Helper()
	if b.uncounted {
		return
	}
	trace := b.d.proxy.StopTrace()
	footer := b.eval(t, `document.getElementById("cost").dataset.s3`)
	if footer != fmt.Sprint(seen) {
		t.Errorf("%s: the footer says %s S3 requests, the bucket saw %d: %v\n%s", what, footer, seen, trace, b.d.logs.tail(3000))
	}
	t.Logf("%s: %s S3 requests", what, footer)
}

// settle waits until nothing has reached the bucket for a moment, so
// that a view's count holds only its own requests (a submit's
// after-work, the other dev server's timers, are over).
func (b *browser) settle() {
	last := b.d.proxy.Counts().Requests
	for range 20 {
		time.Sleep(50 * time.Millisecond)
		n := b.d.proxy.Counts().Requests
		if n == last {
			return
		}
		last = n
	}
}

func (b *browser) eval(t *testing.T, js string, opts ...chromedp.EvaluateOption) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[any](js, opts...))
	if err != nil {
		t.Fatalf("eval %s: %v", js, err)
	}
	if v == nil {
		return ""
	}
	return fmt.Sprint(v)
}

func (b *browser) count(t *testing.T, sel string) int {
	t.Helper()
	var n int
	fmt.Sscan(b.eval(t, fmt.Sprintf(`document.querySelectorAll(%q).length`, sel)), &n)
	return n
}

// hasText checks that the first element sel selects contains text.
func (b *browser) hasText(t *testing.T, sel, text string) {
	t.Helper()
	got := b.eval(t, fmt.Sprintf(`(document.querySelector(%q) || {}).textContent || ""`, sel))
	if !strings.Contains(got, text) {
		t.Errorf("%s does not say %q: %q", sel, text, clip(got))
	}
}

func (b *browser) shot(t *testing.T, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(b.dir, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot %s", path)
}

// checkConsole fails on any script error or refused resource (a CSP
// violation shows as one).
func (b *browser) checkConsole(t *testing.T) {
	t.Helper()
	b.msgs.mu.Lock()
	defer b.msgs.mu.Unlock()
	for _, m := range b.msgs.list {
		if m.IsException() || m.Type == "error" || strings.Contains(m.Text, "Content Security Policy") {
			if strings.Contains(m.Text, "status of 404") || strings.Contains(m.Text, "status of 400") {
				continue // the error pages the test opens on purpose
			}
			t.Errorf("browser console: %s: %s (%s)", m.Type, m.Text, m.URL)
		}
	}
}

func clip(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

func ptr[T any](v T) *T { return &v }
