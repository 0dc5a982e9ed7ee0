package devserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/s3q/s3q/shared/queue"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/devserver"
	"github.com/s3q/s3q/shared/s3local"
)

// dev runs a dev server until the test ends and returns its base URL.
type dev struct {
	url  string
	out  *bytes.Buffer
	stop func() error
}

func start(t *testing.T, opts devserver.Options) *dev {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan string, 1)
	opts.Addr = "127.0.0.1:0"
	opts.Started = func(u string) { started <- u }
	d := &dev{out: &bytes.Buffer{}}
	opts.Out = d.out
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewJSONHandler(io.Discard, nil))
	}
	done := make(chan error, 1)
	go func() { done <- devserver.Run(ctx, opts) }()
	select {
	case d.url = <-started:
	case err := <-done:
		t.Fatalf("Run: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the dev server did not start")
	}
	var once sync.Once
	var err error
	d.stop = func() error {
		once.Do(func() { cancel(); err = <-done })
		return err
	}
	t.Cleanup(func() { d.stop() })
	return d
}

// call sends a request and decodes a JSON answer.
func call(t *testing.T, method, url, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if len(b) > 0 {
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s %s: %d %s is not JSON", method, url, resp.StatusCode, b)
		}
	}
	if ct := resp.Header.Get("Content-Type"); len(b) > 0 && ct != "application/json" {
		t.Errorf("Content-Type = %q", ct)
	}
	return resp.StatusCode, m
}

func field(m map[string]any, path ...string) any {
	var v any = m
	for _, p := range path {
		switch x := v.(type) {
		case map[string]any:
			v = x[p]
		case []any:
			if p != "0" || len(x) == 0 {
				return nil
			}
			v = x[0]
		default:
			return nil
		}
	}
	return v
}

func TestDevServer(t *testing.T) {
	runs := &timerRuns{}
	d := start(t, devserver.Options{
		TickInterval: 50 * time.Millisecond,
		Logger:       slog.New(slog.NewJSONHandler(runs, nil)),
	})

	t.Run("it_prints_the_url_and_a_curl_example", func(t *testing.T) {
		if out := d.out.String(); !strings.Contains(out, d.url) || !strings.Contains(out, "curl -s -X POST "+d.url+"/queues/default/tasks") {
			t.Errorf("banner:\n%s", out)
		}
	})
	t.Run("a_task_is_submitted_claimed_and_completed_over_http", func(t *testing.T) {
		status, sub := call(t, "POST", d.url+"/queues/default/tasks", `{"task_type":"hello","input":{"name":"world"},"ttl":"1h"}`)
		if status != 201 || field(sub, "task", "expires_in_seconds") == nil {
			t.Fatalf("submit: %d %v", status, sub)
		}
		id := field(sub, "task", "id").(string)
		status, cl := call(t, "POST", d.url+"/queues/default/claim", `{"lease_for":"1m","worker_id":"me"}`)
		if status != 200 || field(cl, "tasks", "0", "task", "id") != id {
			t.Fatalf("claim: %d %v", status, cl)
		}
		token := field(cl, "tasks", "0", "lease", "token").(string)
		status, done := call(t, "POST", d.url+"/queues/default/tasks/"+id+"/complete", `{"lease_token":"`+token+`","output":{"ok":true}}`)
		if status != 200 || field(done, "task", "status") != "completed" {
			t.Fatalf("complete: %d %v", status, done)
		}
		status, hist := call(t, "GET", d.url+"/queues/default/tasks/"+id+"/history", "")
		if status != 200 || len(hist["versions"].([]any)) != 3 {
			t.Errorf("history: %d %v", status, hist)
		}
	})
	t.Run("an_empty_claim_is_204_and_errors_keep_their_shape", func(t *testing.T) {
		if status, body := call(t, "POST", d.url+"/queues/empty/claim", `{}`); status != 204 || body != nil {
			t.Errorf("claim: %d %v", status, body)
		}
		if status, body := call(t, "POST", d.url+"/queues/default/tasks", `{"task_type":"t","bogus":1}`); status != 400 || field(body, "error", "field") != "bogus" {
			t.Errorf("unknown field: %d %v", status, body)
		}
		if status, body := call(t, "DELETE", d.url+"/queues/default/claim", ``); status != 405 || field(body, "error", "code") != "method_not_allowed" {
			t.Errorf("wrong method: %d %v", status, body)
		}
		if status, body := call(t, "GET", d.url+"/nope", ``); status != 404 || field(body, "error", "code") != "not_found" {
			t.Errorf("unknown route: %d %v", status, body)
		}
		if status, body := call(t, "POST", d.url+"/queues/default/tasks", `{"task_type":"t","input":"`+strings.Repeat("x", 7<<20)+`"}`); status != 413 {
			t.Errorf("huge body: %d %v", status, body)
		}
	})
	t.Run("the_timers_fire_sweep_and_tick", func(t *testing.T) {
		deadline := time.Now().Add(5 * time.Second)
		for (runs.of("sweep-expired") < 2 || runs.of("schedule-tick") < 2) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if sweeps, ticks := runs.of("sweep-expired"), runs.of("schedule-tick"); sweeps < 2 || ticks < 2 {
			t.Errorf("sweeps %d, ticks %d in 5s at a 50ms interval", sweeps, ticks)
		}
	})
	t.Run("it_shuts_down_cleanly_when_the_context_ends", func(t *testing.T) {
		if err := d.stop(); err != nil {
			t.Fatalf("Run returned %v", err)
		}
		if _, err := http.Get(d.url + "/queues/default/tasks"); err == nil {
			t.Errorf("still serving after shutdown")
		}
	})
}

// timerRuns counts the log lines of the timer functions that ran their
// work, by function.
type timerRuns struct {
	mu   sync.Mutex
	runs map[string]int
}

func (r *timerRuns) Write(p []byte) (int, error) {
	var line struct {
		Msg      string `json:"msg"`
		Function string `json:"function"`
		Wired    bool   `json:"wired"`
	}
	if json.Unmarshal(p, &line) == nil && line.Msg == "timer" && line.Wired {
		r.mu.Lock()
		if r.runs == nil {
			r.runs = map[string]int{}
		}
		r.runs[line.Function]++
		r.mu.Unlock()
	}
	return len(p), nil
}

func (r *timerRuns) of(function string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.runs[function]
}

func TestDevServerDataDir(t *testing.T) {
	dir := t.TempDir()
	d := start(t, devserver.Options{DataDir: dir})
	_, sub := call(t, "POST", d.url+"/queues/default/tasks", `{"task_type":"kept","ttl":"1h"}`)
	id, _ := field(sub, "task", "id").(string)
	if id == "" {
		t.Fatalf("submit: %v", sub)
	}
	if err := d.stop(); err != nil {
		t.Fatal(err)
	}

	d2 := start(t, devserver.Options{DataDir: dir})
	if status, got := call(t, "GET", d2.url+"/queues/default/tasks/"+id, ""); status != 200 || field(got, "task", "task_type") != "kept" {
		t.Fatalf("after a restart: %d %v", status, got)
	}
	status, cl := call(t, "POST", d2.url+"/queues/default/claim", `{"lease_for":"1m"}`)
	if status != 200 || field(cl, "tasks", "0", "task", "id") != id {
		t.Fatalf("claim after a restart: %d %v", status, cl)
	}
	if status, hist := call(t, "GET", d2.url+"/queues/default/tasks/"+id+"/history", ""); status != 200 || len(hist["versions"].([]any)) != 1 {
		t.Errorf("history keeps the current version: %d %v", status, hist)
	}
}

func TestDevServerEndpoint(t *testing.T) {
	t.Run("an_endpoint_that_does_not_answer_fails_at_start", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		err := devserver.Run(ctx, devserver.Options{Addr: "127.0.0.1:0", Endpoint: "http://127.0.0.1:1", Out: io.Discard,
			AccessKey: "a", SecretKey: "b"})
		if err == nil || !strings.Contains(err.Error(), "does not answer") {
			t.Errorf("Run = %v", err)
		}
	})
	t.Run("a_real_endpoint_serves_the_api", func(t *testing.T) {
		srv, err := s3local.StartGoFakeS3(s3local.GoFakeS3Options{Bucket: "elsewhere"})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		d := start(t, devserver.Options{Endpoint: srv.Endpoint, Bucket: "elsewhere", Prefix: "dev/", AccessKey: srv.AccessKey, SecretKey: srv.SecretKey})
		if status, body := call(t, "POST", d.url+"/queues/default/tasks", `{"task_type":"t"}`); status != 201 {
			t.Fatalf("submit: %d %v", status, body)
		}
		if !strings.Contains(d.out.String(), "bucket elsewhere at "+srv.Endpoint) {
			t.Errorf("banner:\n%s", d.out)
		}
		page, err := srv.Store("dev/").List(t.Context(), queue.QueuePrefix(queue.DefaultQueue), "", 0)
		n := 0
		for _, it := range page.Items {
			if queue.IsTaskKey(it.Key) {
				n++
			}
		}
		if err != nil || n != 1 {
			t.Errorf("the task is not in the endpoint's bucket: %v %v", page, err)
		}
	})
	t.Run("an_endpoint_behind_a_proxy_that_drops_if_match_is_refused_at_start", func(t *testing.T) {
		srv, err := s3local.StartGoFakeS3(s3local.GoFakeS3Options{Bucket: "elsewhere"})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		target, err := url.Parse(srv.Endpoint)
		if err != nil {
			t.Fatal(err)
		}
		rp := httputil.NewSingleHostReverseProxy(target)
		proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			r.Header.Del("If-Match")
			rp.ServeHTTP(w, r)
		}))
		defer proxy.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err = devserver.Run(ctx, devserver.Options{Addr: "127.0.0.1:0", Endpoint: proxy.URL, Bucket: "elsewhere", Out: io.Discard,
			AccessKey: srv.AccessKey, SecretKey: srv.SecretKey})
		if err == nil || !strings.Contains(err.Error(), "If-Match") || !strings.Contains(err.Error(), "not honoured") {
			t.Errorf("Run = %v", err)
		}
	})
	t.Run("an_endpoint_and_a_data_dir_together_are_refused", func(t *testing.T) {
		err := devserver.Run(context.Background(), devserver.Options{Endpoint: "http://127.0.0.1:1", DataDir: t.TempDir(), Out: io.Discard})
		if err == nil {
			t.Error("no error")
		}
	})
}

func TestDevServerEventsAndArtifacts(t *testing.T) {
	d := start(t, devserver.Options{
		TickInterval: 50 * time.Millisecond,
	})

	t.Run("the_banner_points_at_get_events", func(t *testing.T) {
		if out := d.out.String(); !strings.Contains(out, "GET /events shows the latest Task Expired") || !strings.Contains(out, d.url+"/events") {
			t.Errorf("banner:\n%s", out)
		}
	})
	t.Run("get_events_shows_task_expired_and_task_dead_lettered_events_newest_first", func(t *testing.T) {
		// ttl 0: expired at submit; the next sweep publishes its event.
		status, sub := call(t, "POST", d.url+"/queues/default/tasks", `{"task_type":"too.late","ttl":0}`)
		if status != 201 || field(sub, "task", "status") != "expired" {
			t.Fatalf("submit: %d %v", status, sub)
		}
		expired := field(sub, "task", "id").(string)
		// max_attempts 1 and a failure: dead-lettered.
		call(t, "POST", d.url+"/queues/dl/tasks", `{"task_type":"doomed","max_attempts":1}`)
		status, cl := call(t, "POST", d.url+"/queues/dl/claim", `{"lease_for":"1m"}`)
		if status != 200 {
			t.Fatalf("claim: %d %v", status, cl)
		}
		failed := field(cl, "tasks", "0", "task", "id").(string)
		token := field(cl, "tasks", "0", "lease", "token").(string)
		if status, f := call(t, "POST", d.url+"/queues/dl/tasks/"+failed+"/fail", `{"lease_token":"`+token+`","error":"boom"}`); status != 200 || field(f, "task", "status") != "failed" {
			t.Fatalf("fail: %d %v", status, f)
		}

		var evs []any
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			_, body := call(t, "GET", d.url+"/events", "")
			if evs, _ = body["events"].([]any); len(evs) >= 2 {
				break
			}
			time.Sleep(20 * time.Millisecond) // the next timer run, not the expiry
		}
		if len(evs) != 2 {
			t.Fatalf("events after 10s of sweeps every 50ms: %v", evs)
		}
		seen := map[string]string{}
		for _, e := range evs {
			m := e.(map[string]any)
			if m["source"] != "s3q" || field(m, "detail", "task_id") != m["task_id"] {
				t.Errorf("event %v", m)
			}
			seen[m["task_id"].(string)] = m["detail_type"].(string)
		}
		if seen[expired] != "Task Expired" || seen[failed] != "Task Dead-Lettered" {
			t.Errorf("events %v", evs)
		}
		if status, body := call(t, "GET", d.url+"/events?limit=1", ""); status != 200 || len(body["events"].([]any)) != 1 {
			t.Errorf("limit=1: %d %v", status, body)
		}
		if status, body := call(t, "GET", d.url+"/events?limit=0", ""); status != 400 || field(body, "error", "field") != "limit" {
			t.Errorf("limit=0: %d %v", status, body)
		}
		if status, body := call(t, "POST", d.url+"/events", ""); status != 405 || field(body, "error", "code") != "method_not_allowed" {
			t.Errorf("POST /events: %d %v", status, body)
		}
		if status, hist := call(t, "GET", d.url+"/queues/default/tasks/"+expired, ""); status != 200 || field(hist, "task", "expiry_event_sent_at") == nil {
			t.Errorf("the record does not note its event: %d %v", status, hist)
		}
	})
	t.Run("artifact_urls_point_at_the_dev_s3_server", func(t *testing.T) {
		_, sub := call(t, "POST", d.url+"/queues/default/tasks", `{"task_type":"render","ttl":"1h"}`)
		id := field(sub, "task", "id").(string)
		status, up := call(t, "POST", d.url+"/queues/default/tasks/"+id+"/artifacts", `{"name":"out.txt","size":5}`)
		if status != 201 {
			t.Fatalf("POST artifacts: %d %v", status, up)
		}
		req, _ := http.NewRequest("PUT", field(up, "artifact", "upload_url").(string), strings.NewReader("hello"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("PUT: %v %v", resp, err)
		}
		resp.Body.Close()
		status, down := call(t, "GET", d.url+"/queues/default/tasks/"+id+"/artifacts/out.txt", "")
		if status != 200 {
			t.Fatalf("GET artifact: %d %v", status, down)
		}
		resp, err = http.Get(field(down, "artifact", "download_url").(string))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(b) != "hello" {
			t.Fatalf("GET through the URL: %d %q", resp.StatusCode, b)
		}
	})
}

// --max-wait bounds the waits of the dev server's API as S3Q_MAX_WAIT does
// on Lambda: a longer one is a 400 naming wait.
func TestDevServerMaxWait(t *testing.T) {
	d := start(t, devserver.Options{MaxWait: 2 * time.Second})
	for _, c := range []struct{ path, body string }{
		{"/queues/default/claim/wait", `{"wait":"3s"}`},
		{"/queues/default/tasks/wait", `{"task_type":"a.b","wait":"3s"}`},
		// A wait on the plain routes is refused whatever its length.
		{"/queues/default/claim", `{"wait":"1s"}`},
		{"/queues/default/tasks", `{"task_type":"a.b","wait":"1s"}`},
	} {
		status, body := call(t, "POST", d.url+c.path, c.body)
		if status != 400 || field(body, "error", "field") != "wait" {
			t.Errorf("POST %s %s: %d %v", c.path, c.body, status, body)
		}
	}
	if status, _ := call(t, "POST", d.url+"/queues/default/claim/wait", `{"wait":"1s"}`); status != 204 {
		t.Errorf("a 1s wait: %d, want 204", status)
	}
}

// A submit of a short ttl to a dev server whose timers are far off starts
// a staying sweep: the task's Task Expired event goes out after its
// deadline without waiting for the next timer.
func TestDevServerASubmitOfANearDeadlineWakesTheSweep(t *testing.T) {
	d := start(t, devserver.Options{TickInterval: time.Hour})
	status, sub := call(t, "POST", d.url+"/queues/default/tasks", `{"task_type":"soon","ttl":"1s"}`)
	if status != 201 {
		t.Fatalf("submit: %d %v", status, sub)
	}
	id := field(sub, "task", "id").(string)
	deadline := time.Now().Add(60 * time.Second) // a bound on a loaded machine; no timer fires within it
	for time.Now().Before(deadline) {
		_, body := call(t, "GET", d.url+"/events", "")
		evs, _ := body["events"].([]any)
		for _, e := range evs {
			if m := e.(map[string]any); m["task_id"] == id && m["detail_type"] == "Task Expired" {
				return
			}
		}
		time.Sleep(100 * time.Millisecond) // the staying sweep, not the expiry
	}
	t.Fatal("no Task Expired event within a minute of a 1s ttl, with the timers an hour apart")
}
