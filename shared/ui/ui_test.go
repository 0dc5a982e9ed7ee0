package ui

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/api"
	"github.com/s3q/s3q/shared/client"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/reqcount"
	"github.com/s3q/s3q/shared/schedule"
	"github.com/s3q/s3q/shared/store/memstore"
	"github.com/s3q/s3q/shared/wire"
)

// newTestConsole serves the API over a mem store and the console over
// it, both on loopback. wrap, when given, stands between them.
func newTestConsole(t *testing.T, wrap ...func(http.Handler) http.Handler) (console *httptest.Server, apiURL string) {
	t.Helper()
	q, decls := queues.New(reqcount.Wrap(memstore.New()), queues.Options{})
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	var h http.Handler = api.New(q, decls, api.Options{Logger: quiet, Schedules: schedule.New(q.Store(), q, schedule.Options{})})
	for _, w := range wrap {
		h = w(h)
	}
	apiSrv := httptest.NewServer(h)
	t.Cleanup(apiSrv.Close)
	c, err := New(context.Background(), apiSrv.URL, client.Options{}, Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	return srv, apiSrv.URL
}

func get(t *testing.T, u string, header ...string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", u, nil)
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Host" {
			req.Host = header[i+1]
			continue
		}
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestPagesAnswerWithTheirCostAndStrictHeaders(t *testing.T) {
	srv, apiURL := newTestConsole(t)
	c, _ := client.New(context.Background(), apiURL, client.Options{})
	if _, err := c.Submit(context.Background(), client.SubmitRequest{SubmitRequest: wire.SubmitRequest{TaskType: "hello"}}); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/ui/", "/ui/queues/default", "/ui/dead", "/ui/schedules"} {
		resp, body := get(t, srv.URL+path)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, body)
		}
		csp := resp.Header.Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'none'", "script-src 'self'", "form-action 'self'", "frame-ancestors 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("%s: CSP %q lacks %q", path, csp, want)
			}
		}
		if strings.Contains(body, "<script>") || strings.Contains(body, " style=") || strings.Contains(body, " onclick=") {
			t.Errorf("%s: inline script or style, which the CSP refuses", path)
		}
		n, err := strconv.Atoi(resp.Header.Get(HeaderPageS3Requests))
		if err != nil || n < 1 {
			t.Errorf("%s: %s = %q", path, HeaderPageS3Requests, resp.Header.Get(HeaderPageS3Requests))
		}
		if !strings.Contains(body, `data-s3="`+strconv.Itoa(n)+`"`) {
			t.Errorf("%s: the footer does not say %d requests", path, n)
		}
	}
}

func TestAForeignHostIsRefused(t *testing.T) {
	srv, _ := newTestConsole(t)
	resp, _ := get(t, srv.URL+"/ui/", "Host", "evil.example:80")
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("Host evil.example: %d, want 403", resp.StatusCode)
	}
	resp, _ = get(t, srv.URL+"/ui/", "Host", "localhost:8090")
	if resp.StatusCode != http.StatusOK {
		t.Errorf("Host localhost: %d, want 200", resp.StatusCode)
	}
}

func TestAPostWithoutItsTokenChangesNothing(t *testing.T) {
	srv, apiURL := newTestConsole(t)
	c, _ := client.New(context.Background(), apiURL, client.Options{})
	res, err := c.Submit(context.Background(), client.SubmitRequest{SubmitRequest: wire.SubmitRequest{TaskType: "hello"}})
	if err != nil {
		t.Fatal(err)
	}
	form := url.Values{"action": {"cancel"}, "ref": {"default/" + res.Task.ID}}
	post := func(form url.Values, cookie, origin string) int {
		req, _ := http.NewRequest("POST", srv.URL+"/ui/do", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if cookie != "" {
			req.AddCookie(&http.Cookie{Name: csrfCookie, Value: cookie})
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	// The token of a page, with its cookie.
	resp, body := get(t, srv.URL+"/ui/confirm?action=cancel&ref=default/"+res.Task.ID)
	var cookie string
	for _, ck := range resp.Cookies() {
		if ck.Name == csrfCookie {
			cookie = ck.Value
		}
	}
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(body)
	if cookie == "" || m == nil {
		t.Fatalf("no cookie or token on the confirmation page: %q\n%s", cookie, body)
	}
	for name, status := range map[string]int{
		"no_token":           post(form, cookie, ""),
		"a_token_of_another": post(url.Values{"action": {"cancel"}, "ref": form["ref"], "csrf": {m[1]}}, "AAAAAAAAAAAAAAAAAAAAAAAAAA", ""),
		"another_origin":     post(url.Values{"action": {"cancel"}, "ref": form["ref"], "csrf": {m[1]}}, cookie, "http://evil.example"),
	} {
		if status != http.StatusForbidden {
			t.Errorf("%s: %d, want 403", name, status)
		}
	}
	if task, _ := c.Get(context.Background(), res.Task.ID); task.Status != queue.StatusPending {
		t.Fatalf("a refused POST changed the task: %s", task.Status)
	}
	if status := post(url.Values{"action": {"cancel"}, "ref": form["ref"], "csrf": {m[1]}}, cookie, srv.URL); status != http.StatusOK {
		t.Fatalf("the page's own form: %d", status)
	}
	if task, _ := c.Get(context.Background(), res.Task.ID); task.Status != queue.StatusCancelled {
		t.Errorf("after the confirmed cancel the task is %s", task.Status)
	}
}

func TestAPIErrorsShowTheirCodeAndField(t *testing.T) {
	srv, _ := newTestConsole(t)
	for _, c := range []struct {
		path, status, code, field string
	}{
		{"/ui/queues/default?type=not%20a%20type", "400", "invalid_input", "task_type"},
		{"/ui/queues/default?priority=9", "400", "invalid_input", "priority"},
		{"/ui/queues/default/tasks/0190a000-0000-7000-8000-000000000000", "404", "not_found", ""},
		{"/ui/dead?status=running", "400", "", ""},
		{"/ui/queues/default/schedules/nope", "404", "not_found", ""},
		{"/ui/nothing-here", "404", "not_found", ""},
		{"/ui/confirm?action=explode&ref=default/x", "400", "invalid_input", "action"},
		{"/ui/events", "404", "not_found", ""},
	} {
		resp, body := get(t, srv.URL+c.path)
		if strconv.Itoa(resp.StatusCode) != c.status || !strings.Contains(body, `role="alert"`) {
			t.Errorf("%s: %d, want %s with an error shown", c.path, resp.StatusCode, c.status)
		}
		if c.code != "" && !strings.Contains(body, "<code>"+c.code+"</code>") {
			t.Errorf("%s: code %s not shown", c.path, c.code)
		}
		if c.field != "" && !strings.Contains(body, `<code class="field">`+c.field+`</code>`) {
			t.Errorf("%s: field %s not shown", c.path, c.field)
		}
	}
}

func TestAnAPIThatDoesNotAnswerIsAnErrorPage(t *testing.T) {
	c, err := New(context.Background(), "http://127.0.0.1:1", client.Options{}, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	c.ServeHTTP(rec, httptest.NewRequest("GET", "http://localhost/ui/", nil))
	if rec.Code != http.StatusBadGateway || !strings.Contains(rec.Body.String(), "api_unreachable") {
		t.Errorf("%d %s", rec.Code, rec.Body.String())
	}
}

func TestCronInWords(t *testing.T) {
	for expr, want := range map[string]string{
		"0 9 * * 1-5":   "at 09:00 on Monday through Friday",
		"30 6 * * *":    "every day at 06:30",
		"*/15 * * * *":  "every 15 minutes",
		"* * * * *":     "every minute",
		"0 * * * *":     "every hour, on the hour",
		"5 * * * *":     "every hour at 5 past",
		"0 0 1 * *":     "at 00:00 on day 1 of the month",
		"0 12 * * 0,6":  "at 12:00 on Sunday and Saturday",
		"0 8 1,15 * *":  "at 08:00 on day 1 and 15 of the month",
		"0 3 * 1 *":     "at 03:00 in January",
		"0 */2 * * *":   "at minute 0 past every 2 hours",
		"@daily":        "every day at 00:00",
		"@every 90s":    "every 1m30s",
		"0 9 * * MON":   "at 09:00 on Monday",
		"1 2 3 4":       "",
		"0 9 L * *":     "",
		"0 9-17 * * *":  "at minute 0 past hours 9 through 17",
		"*/10 9 * * *":  "every 10 minutes of hour 9",
		"0 0 * * 7":     "at 00:00 on Sunday",
		"15 14 1 * 1-5": "at 14:15 on day 1 of the month or on Monday through Friday",
	} {
		if got := cronWords(expr); got != want {
			t.Errorf("cronWords(%q) = %q, want %q", expr, got, want)
		}
	}
}

// The timeline says what moved a task, and who, from its versions.
func TestTimelineTellsEachStep(t *testing.T) {
	t0 := time.Date(2026, 1, 28, 9, 0, 0, 0, time.UTC)
	lease := t0.Add(time.Minute)
	v := func(tk queue.Task) client.Version { return client.Version{Task: client.Task{Task: tk.Wire()}} }
	submitted := queue.Task{Status: queue.StatusPending, CreatedAt: t0, UpdatedAt: t0, AvailableAt: t0, MaxAttempts: 2}
	claimed := submitted
	claimed.Status, claimed.Attempt, claimed.WorkerID, claimed.LeaseExpiresAt, claimed.UpdatedAt = queue.StatusRunning, 1, "w1", &lease, t0.Add(time.Second)
	failed := claimed
	failed.Status, failed.LastError, failed.EndedBy, failed.LeaseExpiresAt, failed.UpdatedAt = queue.StatusPending, "boom", "fail", nil, t0.Add(2*time.Second)
	reclaimed := failed
	reclaimed.Status, reclaimed.Attempt, reclaimed.WorkerID, reclaimed.LeaseExpiresAt, reclaimed.UpdatedAt = queue.StatusRunning, 2, "w2", &lease, t0.Add(3*time.Second)
	lapsed := reclaimed
	lapsed.Status, lapsed.LeaseExpiresAt, lapsed.UpdatedAt = queue.StatusFailed, nil, lease.Add(time.Second)
	published := lapsed
	published.DeadLetterEventSentAt, published.UpdatedAt = &lease, lease.Add(2*time.Second)
	retried := published
	retried.Status, retried.Attempt, retried.UpdatedAt = queue.StatusPending, 0, lease.Add(time.Minute)
	steps := timeline([]client.Version{v(submitted), v(claimed), v(failed), v(reclaimed), v(lapsed), v(published), v(retried)}, true)
	want := []struct{ what, who string }{
		{"Submitted", "client"},
		{"Claimed (attempt 1 of 2)", "worker w1"},
		{"Failed, to be retried: boom", "worker w1"},
		{"Claimed (attempt 2 of 2)", "worker w2"},
		{"Dead-lettered: attempts spent", "sweep or a claim"},
		{"Task Dead-Lettered event published", "sweep"},
		{"Retried by hand", "operator"},
	}
	for i, w := range want {
		if steps[i].What != w.what || steps[i].Who != w.who {
			t.Errorf("step %d = %q by %q, want %q by %q", i, steps[i].What, steps[i].Who, w.what, w.who)
		}
	}
	if later := timeline([]client.Version{v(reclaimed), v(lapsed)}, false); later[0].What != "Continued from earlier versions" || later[1].What != "Dead-lettered: attempts spent" {
		t.Errorf("a later page of versions: %q, %q", later[0].What, later[1].What)
	}
	if len(steps[1].Changes) == 0 || steps[1].Changes[0] != (change{"status", "pending", "running"}) {
		t.Errorf("the claim's changes: %v", steps[1].Changes)
	}
}

// Every pair of text and background colours of the stylesheet passes
// WCAG AA (4.5:1), in the light and the dark scheme.
func TestColoursPassWCAGAA(t *testing.T) {
	css, err := os.ReadFile("static/app.css")
	if err != nil {
		t.Fatal(err)
	}
	light, dark := string(css), ""
	if i := strings.Index(light, "@media (prefers-color-scheme: dark)"); i >= 0 {
		light, dark = light[:i], light[i:]
	}
	vars := func(s string) map[string]string {
		m := map[string]string{}
		for _, v := range regexp.MustCompile(`--([a-z-]+):\s*(#[0-9a-f]{6})`).FindAllStringSubmatch(s, -1) {
			if _, ok := m[v[1]]; !ok {
				m[v[1]] = v[2]
			}
		}
		return m
	}
	pairs := [][2]string{
		{"fg", "bg"}, {"fg", "panel"}, {"muted", "bg"}, {"muted", "panel"}, {"link", "bg"}, {"link", "panel"},
		{"accent-fg", "accent"}, {"bad", "bg"}, {"bad", "panel"}, {"ok", "bg"}, {"warn", "bg"},
		{"b-pending-fg", "b-pending"}, {"b-running-fg", "b-running"}, {"b-completed-fg", "b-completed"},
		{"b-failed-fg", "b-failed"}, {"b-expired-fg", "b-expired"}, {"b-cancelled-fg", "b-cancelled"},
	}
	for scheme, m := range map[string]map[string]string{"light": vars(light), "dark": vars(dark)} {
		for _, p := range pairs {
			fg, bg := m[p[0]], m[p[1]]
			if fg == "" || bg == "" {
				t.Errorf("%s: --%s or --%s missing", scheme, p[0], p[1])
				continue
			}
			if r := contrast(fg, bg); r < 4.5 {
				t.Errorf("%s: --%s %s on --%s %s is %.2f:1, under 4.5:1", scheme, p[0], fg, p[1], bg, r)
			}
		}
	}
}

// contrast is the WCAG contrast ratio of two #rrggbb colours.
func contrast(a, b string) float64 {
	lum := func(hex string) float64 {
		var c [3]float64
		for i := range c {
			v, _ := strconv.ParseUint(hex[1+2*i:3+2*i], 16, 8)
			s := float64(v) / 255
			if s <= 0.03928 {
				c[i] = s / 12.92
			} else {
				c[i] = math.Pow((s+0.055)/1.055, 2.4)
			}
		}
		return 0.2126*c[0] + 0.7152*c[1] + 0.0722*c[2]
	}
	la, lb := lum(a), lum(b)
	if la < lb {
		la, lb = lb, la
	}
	return (la + 0.05) / (lb + 0.05)
}

func TestLargeJSONStartsCollapsed(t *testing.T) {
	small := prettyJSON([]byte(`{"a":1}`))
	if small.Large || small.Text != "{\n  \"a\": 1\n}" {
		t.Errorf("small: %+v", small)
	}
	big := prettyJSON([]byte(`{"a":"` + strings.Repeat("x", 3000) + `"}`))
	if !big.Large {
		t.Errorf("a 3 KB value is not collapsed")
	}
	long := prettyJSON([]byte("[" + strings.Repeat("1,", 60) + "1]"))
	if !long.Large || long.Lines < 60 {
		t.Errorf("61 lines: %+v", long.Lines)
	}
	if prettyJSON(nil) != nil {
		t.Error("no value is not nil")
	}
	if b := prettyJSON([]byte(`not json`)); b.Text != "not json" {
		t.Errorf("invalid JSON is shown as it is: %q", b.Text)
	}
}

// Against an API without the queue operations (an older deployment) the
// pages show what it has and offer no bulk action.
func TestAnAPIWithoutQueueOperations(t *testing.T) {
	// The API's own 404 for a route it lacks, and API Gateway's.
	for name, answer := range map[string]string{
		"api":         `{"error":{"code":"not_found","message":"no route"}}`,
		"api_gateway": `{"message":"Not Found"}`,
	} {
		t.Run(name, func(t *testing.T) {
			older := func(next http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					p := r.URL.Path
					if strings.HasSuffix(p, "/stats") || strings.Contains(p, "/bulk/") || strings.HasSuffix(p, "/pause") && !strings.Contains(p, "/schedules/") {
						w.Header().Set("Content-Type", "application/json")
						w.WriteHeader(http.StatusNotFound)
						io.WriteString(w, answer)
						return
					}
					next.ServeHTTP(w, r)
				})
			}
			srv, apiURL := newTestConsole(t, older)
			c, _ := client.New(context.Background(), apiURL, client.Options{})
			if _, err := c.Submit(context.Background(), client.SubmitRequest{SubmitRequest: wire.SubmitRequest{TaskType: "hello"}}); err != nil {
				t.Fatal(err)
			}
			resp, body := get(t, srv.URL+"/ui/")
			if resp.StatusCode != 200 || !strings.Contains(body, ">default</a>") || strings.Contains(body, "Oldest pending") {
				t.Errorf("queues: %d\n%s", resp.StatusCode, body)
			}
			resp, body = get(t, srv.URL+"/ui/queues/default?status=pending")
			if resp.StatusCode != 200 || strings.Contains(body, "queue-state") || strings.Contains(body, "/bulk?") {
				t.Errorf("queue page: %d\n%s", resp.StatusCode, body)
			}
			resp, _ = get(t, srv.URL+"/ui/queues/default/bulk?op=cancel")
			if resp.StatusCode != http.StatusNotImplemented {
				t.Errorf("a bulk confirmation: %d, want 501", resp.StatusCode)
			}
		})
	}
	// With them, the same pages show the stats and offer the bulk actions.
	srv, apiURL := newTestConsole(t)
	c, _ := client.New(context.Background(), apiURL, client.Options{})
	if _, err := c.Submit(context.Background(), client.SubmitRequest{SubmitRequest: wire.SubmitRequest{TaskType: "hello"}}); err != nil {
		t.Fatal(err)
	}
	if _, body := get(t, srv.URL+"/ui/"); !strings.Contains(body, "Oldest pending") {
		t.Errorf("queues with stats lack the oldest pending column")
	}
	if _, body := get(t, srv.URL+"/ui/queues/default?status=pending"); !strings.Contains(body, "/bulk?op=cancel") {
		t.Errorf("the pending tasks of a queue offer no bulk cancel")
	}
}

// A finished task's page does not say it "must start by" a time still
// ahead: that is for a pending task. The Schedules link names no queue
// and opens the queues to choose from, not queue default's (empty) list
// where another queue has the schedules.
func TestAFinishedTaskHasNoStartByAndSchedulesOpensTheQueueChooser(t *testing.T) {
	ctx := context.Background()
	srv, apiURL := newTestConsole(t)
	c, _ := client.New(ctx, apiURL, client.Options{})
	res, err := c.Submit(ctx, client.SubmitRequest{SubmitRequest: wire.SubmitRequest{TaskType: "hello", TTL: ptrDur(time.Hour)}})
	if err != nil {
		t.Fatal(err)
	}
	pending := res.Task.ID
	_, body := get(t, srv.URL+"/ui/queues/default/tasks/"+pending)
	if !strings.Contains(body, "Must start by") {
		t.Errorf("a pending task's page does not say it must start by its deadline:\n%s", body)
	}
	cs, err := c.Claim(ctx, client.ClaimRequest{})
	if err != nil || len(cs) != 1 {
		t.Fatalf("claim: %v %v", cs, err)
	}
	if _, err := c.Complete(ctx, client.CompleteRequest{Lease: cs[0].Lease}); err != nil {
		t.Fatal(err)
	}
	_, body = get(t, srv.URL+"/ui/queues/default/tasks/"+pending)
	if strings.Contains(body, "Must start by") || !strings.Contains(body, "Had to start by") || !strings.Contains(body, "it started in time") {
		t.Errorf("a completed task's page:\n%s", body)
	}

	if _, _, err := c.DeclareQueue(ctx, "reports", client.QueueRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateSchedule(ctx, schedule.Request{ID: "nightly", TaskType: "report", Queue: "reports", Cron: "@daily"}); err != nil {
		t.Fatal(err)
	}
	resp, body := get(t, srv.URL+"/ui/schedules")
	if resp.StatusCode != 200 || !strings.Contains(body, `/ui/schedules?queue=reports"`) || !strings.Contains(body, `/ui/schedules?queue=default"`) || strings.Contains(body, "Schedules of <code>default</code>") {
		t.Errorf("schedules without a queue: %d\n%s", resp.StatusCode, body)
	}
	if _, body := get(t, srv.URL+"/ui/schedules?queue=reports"); !strings.Contains(body, "nightly") {
		t.Errorf("the schedules of reports:\n%s", body)
	}
}

func ptrDur(d time.Duration) *queue.Duration { v := queue.Duration(d); return &v }

// The queues page's cost is bounded: it shows a page of queuesPerPage
// queues, and a refresh within statsReuse reuses their stats (no GET
// /stats again) until an action changes something.
func TestTheQueuesPageIsPagedAndReusesStats(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	statsCalls := 0
	counting := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/stats") {
				mu.Lock()
				statsCalls++
				mu.Unlock()
			}
			next.ServeHTTP(w, r)
		})
	}
	srv, apiURL := newTestConsole(t, counting)
	c, _ := client.New(ctx, apiURL, client.Options{})
	for i := 0; i < queuesPerPage+5; i++ {
		if _, _, err := c.DeclareQueue(ctx, fmt.Sprintf("q%02d", i), client.QueueRequest{}); err != nil {
			t.Fatal(err)
		}
	}
	calls := func() int { mu.Lock(); defer mu.Unlock(); n := statsCalls; statsCalls = 0; return n }
	_, body := get(t, srv.URL+"/ui/")
	if n := calls(); n != queuesPerPage || strings.Count(body, `href="/ui/queues/q`) != queuesPerPage || !strings.Contains(body, "cursor=") {
		t.Fatalf("first view: %d stats calls, %d queue links, want %d and a next page:\n%s", n, strings.Count(body, `href="/ui/queues/q`), queuesPerPage, body)
	}
	get(t, srv.URL+"/ui/")
	if n := calls(); n != 0 {
		t.Errorf("a refresh within %s made %d stats calls, want none", statsReuse, n)
	}
	if resp, err := http.Post(srv.URL+"/ui/do", "application/x-www-form-urlencoded", strings.NewReader("")); err == nil {
		resp.Body.Close() // refused (no CSRF token), but a POST: counts are read again
	}
	get(t, srv.URL+"/ui/")
	if n := calls(); n != queuesPerPage {
		t.Errorf("after an action: %d stats calls, want %d", n, queuesPerPage)
	}
}
