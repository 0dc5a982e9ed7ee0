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
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/api"
	"github.com/s3q/s3q/shared/devserver"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/store/memstore"
)

// memAPI serves the API over an in-memory store, through wrap when given.
func memAPI(t *testing.T, qo queues.Options, wrap func(http.Handler) http.Handler) string {
	t.Helper()
	qo.Core.ListCacheFor = -1
	q, decls := queues.New(memstore.New(), qo)
	var h http.Handler = api.New(q, decls, api.Options{Logger: slog.New(slog.DiscardHandler)})
	if wrap != nil {
		h = wrap(h)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts.URL
}

// jsonError decodes an -o json error answer.
func jsonError(t *testing.T, out string) (code, message, field string) {
	t.Helper()
	var body struct {
		Error struct{ Code, Message, Field string } `json:"error"`
	}
	if err := json.Unmarshal([]byte(out), &body); err != nil || body.Error.Code == "" {
		t.Fatalf("not an error in the API's shape: %v\n%s", err, out)
	}
	return body.Error.Code, body.Error.Message, body.Error.Field
}

func TestExitCodesTellErrorsApartInTextAndJSON(t *testing.T) {
	url := memAPI(t, queues.Options{}, nil)
	id := queue.NewID(time.Now())
	out, _, code := cli(t, url, "submit", "--id", id, "-t", "a", "-i", `{"n":1}`, "-o", "id")
	if code != 0 || strings.TrimSpace(out) != id {
		t.Fatalf("submit -o id (%d): %q", code, out)
	}
	cases := []struct {
		name string
		args []string
		exit int
		code string
	}{
		{"not found", []string{"status", queue.NewID(time.Now())}, 3, "not_found"},
		{"conflict", []string{"retry", id}, 4, "invalid_state"},
		{"a 400", []string{"submit", "-t", "a/b"}, 2, "invalid_input"},
		{"a usage error", []string{"status"}, 2, "usage"},
		{"a taken id with another body", []string{"submit", "--id", id, "-t", "a", "-i", `{"n":2}`}, 4, "conflict"},
	}
	for _, c := range cases {
		_, errOut, code := cli(t, url, c.args...)
		if code != c.exit || !strings.Contains(errOut, "s3q ") {
			t.Errorf("%s in text: exit %d, stderr %q; want exit %d", c.name, code, errOut, c.exit)
		}
		out, errOut, code := cli(t, url, append(c.args, "-o", "json")...)
		if code != c.exit || errOut != "" {
			t.Errorf("%s in JSON: exit %d, stderr %q; want exit %d and nothing on stderr", c.name, code, errOut, c.exit)
			continue
		}
		if got, msg, _ := jsonError(t, out); got != c.code || msg == "" {
			t.Errorf("%s in JSON: code %q message %q; want code %q", c.name, got, msg, c.code)
		}
	}
	// The not-found message says how to address another queue.
	if _, errOut, _ := cli(t, url, "history", queue.NewID(time.Now())); !strings.Contains(errOut, "-q/--queue") {
		t.Errorf("history of an unknown task does not mention -q: %s", errOut)
	}
	// Unreachable: 5, and how to start s3q dev.
	out, _, code = cli(t, "http://127.0.0.1:1", "status", id, "-o", "json")
	if c, msg, _ := jsonError(t, out); code != 5 || c != "unavailable" || !strings.Contains(msg, "connection refused") {
		t.Errorf("unreachable in JSON: exit %d, %s", code, out)
	}
	// Interrupted: 130.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var o, e bytes.Buffer
	if code := run(ctx, []string{"list", "--url", url}, strings.NewReader(""), &o, &e); code != 130 {
		t.Errorf("list interrupted: exit %d, %s", code, e.String())
	}
}

func TestFlagErrorsNameTheFlagWithAnExample(t *testing.T) {
	past := time.Now().Add(-3 * time.Hour).UTC().Format(time.RFC3339)
	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"submit", "-t", "a", "--max-attempts", "abc"}, []string{`--max-attempts "abc": not a whole number`, "e.g. --max-attempts 5"}},
		{[]string{"submit", "-t", "a", "--max-attempts", "0"}, []string{"--max-attempts 0: must be at least 1"}},
		{[]string{"worker", "--type", "a", "--exec", "true", "--concurrency", "0"}, []string{"--concurrency 0: must be at least 1"}},
		{[]string{"submit", "-t", "a", "--ttl"}, []string{"--ttl needs a value", "e.g. --ttl 1h"}},
		{[]string{"submit", "-t", "a", "--ttl", "3x"}, []string{`--ttl "3x"`, "e.g. --ttl 1h"}},
		{[]string{"submit", "-t", "a", "--at", past}, []string{"--at", "3h ago, in the past", "due at once", "--in"}},
		{[]string{"submit", "-t", "a", "--expires-at", past}, []string{"--expires-at", "3h ago", "expire at birth", "--ttl"}},
		{[]string{"submit", "-t", "a", "--at", "tomorrow"}, []string{`--at "tomorrow": not an RFC 3339 time`, "e.g. --at 20"}},
		{[]string{"submit", "-t", "a", "-i", "{\"a\":\n  x}"}, []string{"--input is not valid JSON: line 2, column 3"}},
		{[]string{"submit", "-t", "a", "-i", "@/nonexistent/input.json"}, []string{"--input @/nonexistent/input.json", "no such file"}},
		{[]string{"submit", "--bogus"}, []string{"unknown flag --bogus"}},
		{[]string{"list", "-o", "xml"}, []string{`--output "xml": want one of text, table, json, yaml, id`}},
	}
	for _, c := range cases {
		_, errOut, code := cli(t, "", c.args...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2: %s", c.args, code, errOut)
		}
		for _, w := range c.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("%v: stderr lacks %q:\n%s", c.args, w, errOut)
			}
		}
		if strings.Contains(errOut, " -max-attempts") || strings.Contains(errOut, " -ttl") || strings.Contains(errOut, "parse error") {
			t.Errorf("%v: the flag package's wording leaks: %s", c.args, errOut)
		}
	}
	// -o json: the same error in the API's shape, naming the flag.
	out, _, code := cli(t, "", "submit", "-t", "a", "--max-attempts", "abc", "-o", "json")
	if c, _, field := jsonError(t, out); code != 2 || c != "usage" || field != "--max-attempts" {
		t.Errorf("flag error in JSON (%d): %s", code, out)
	}
}

func TestHelpDocumentsExitCodesVersionAndSubcommands(t *testing.T) {
	out, _, _ := cli(t, "", "--help")
	for _, w := range []string{"Exit codes:", "3    not found", "4    conflict", "5    unavailable", "130  interrupted", "  version ", "yaml"} {
		if !strings.Contains(out, w) {
			t.Errorf("s3q --help lacks %q", w)
		}
	}
	if out, _, code := cli(t, "", "version"); code != 0 || !strings.HasPrefix(out, "s3q ") {
		t.Errorf("version (%d): %s", code, out)
	}
	out, _, code := cli(t, "", "schedule", "create", "--help")
	if code != 0 || !strings.HasPrefix(out, "s3q schedule create — ") || !strings.Contains(out, "--cron") || strings.Contains(out, "--since") || strings.Contains(out, "history ID") {
		t.Errorf("schedule create --help (%d):\n%s", code, out)
	}
	out, _, _ = cli(t, "", "help", "queue", "list")
	if !strings.HasPrefix(out, "s3q queue list — ") || !strings.Contains(out, "--no-counts") || strings.Contains(out, "--target-url") {
		t.Errorf("help queue list:\n%s", out)
	}
}

func TestOutputFormatsYAMLAndID(t *testing.T) {
	url := memAPI(t, queues.Options{}, nil)
	var ids []string
	for i := 0; i < 3; i++ {
		out, errOut, code := cli(t, url, "submit", "-t", "fmt", "-i", fmt.Sprintf(`{"i":%d,"s":"a: b"}`, i), "-o", "id")
		if code != 0 {
			t.Fatalf("submit (%d): %s", code, errOut)
		}
		ids = append(ids, strings.TrimSpace(out))
	}
	out, _, code := cli(t, url, "list", "--status", "pending", "-o", "id")
	if code != 0 || strings.Fields(out) == nil || strings.Join(strings.Fields(out), ",") != strings.Join(ids, ",") {
		t.Errorf("list -o id (%d): %q, want %v", code, out, ids)
	}
	out, _, code = cli(t, url, "status", ids[0], "-o", "yaml")
	for _, w := range []string{"task:\n  id: " + ids[0] + "\n", "  status: pending\n", "  input:\n    i: 0\n    s: \"a: b\"\n"} {
		if code != 0 || !strings.Contains(out, w) {
			t.Errorf("status -o yaml lacks %q:\n%s", w, out)
		}
	}
	out, _, code = cli(t, url, "status", queue.NewID(time.Now()), "-o", "yaml")
	if code != 3 || !strings.HasPrefix(out, "error:\n  code: not_found\n") {
		t.Errorf("an error in yaml (%d):\n%s", code, out)
	}
	if out, _, code := cli(t, url, "list", "-o", "table"); code != 0 || !strings.Contains(out, "ID  ") {
		t.Errorf("list -o table (%d):\n%s", code, out)
	}
}

// writeLines writes n submit lines (and extra ones) to a JSON Lines file.
func writeLines(t *testing.T, n int, extra ...string) string {
	t.Helper()
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, `{"task_type":"bulk","input":{"i":%d},"ttl":"1h"}`+"\n", i)
	}
	for _, l := range extra {
		b.WriteString(l + "\n")
	}
	path := filepath.Join(t.TempDir(), "tasks.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// countTasks counts the pending tasks of the default queue.
func countTasks(t *testing.T, url string) int {
	t.Helper()
	out, errOut, code := cli(t, url, "list", "--status", "pending", "--all", "--limit", "1000", "-o", "id")
	if code != 0 {
		t.Fatalf("list (%d): %s", code, errOut)
	}
	return len(strings.Fields(out))
}

func TestSubmitFileIsIdempotentAndResumesAfterCtrlC(t *testing.T) {
	// Ctrl-C arrives while the first batch is in flight.
	ctx, interrupt := context.WithCancel(context.Background())
	defer interrupt()
	var once sync.Once
	url := memAPI(t, queues.Options{}, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/tasks/batch") {
				once.Do(interrupt)
			}
			h.ServeHTTP(w, r)
		})
	})
	path := writeLines(t, 1200)
	var out, errOut bytes.Buffer
	code := run(ctx, []string{"submit", "--file", path, "--url", url}, strings.NewReader(""), &out, &errOut)
	if code != 130 || out.String() != "landed 500, replayed 0, refused 0\n" || !strings.Contains(errOut.String(), "interrupted after 500 of 1200 lines") {
		t.Fatalf("interrupted run (%d):\nstdout %s\nstderr %s", code, out.String(), errOut.String())
	}
	if n := countTasks(t, url); n != 500 {
		t.Fatalf("after the interrupted run: %d tasks, want the 500 it reported", n)
	}
	o, e, code := cli(t, url, "submit", "--file", path)
	if code != 0 || o != "landed 700, replayed 500, refused 0\n" {
		t.Fatalf("re-run (%d): %s %s", code, o, e)
	}
	o, e, code = cli(t, url, "submit", "--file", path, "-o", "json")
	var sum fileSummary
	if code != 0 || json.Unmarshal([]byte(o), &sum) != nil || sum.Landed != 0 || sum.Replayed != 1200 || len(sum.Results) != 1200 {
		t.Fatalf("third run (%d): %+v %s", code, sum.fileSummaryCounts(), e)
	}
	if n := countTasks(t, url); n != 1200 {
		t.Fatalf("after three runs: %d tasks, want 1200", n)
	}
	for _, r := range sum.Results[:3] {
		if err := queue.ValidateID(r.Task.ID); err != nil {
			t.Errorf("line %d: id %s: %v", r.Line, r.Task.ID, err)
		}
	}
	// The same lines in another queue are other tasks.
	if o, e, code := cli(t, url, "submit", "--file", path, "-q", "other"); code != 0 || o != "landed 1200, replayed 0, refused 0\n" {
		t.Fatalf("another queue (%d): %s %s", code, o, e)
	}
}

func (s fileSummary) fileSummaryCounts() string { return s.String() }

func TestSubmitFileRefusedLinesExitOneInTextAndJSON(t *testing.T) {
	url := memAPI(t, queues.Options{}, nil)
	path := writeLines(t, 3, `{"task_type":"bad/type"}`)
	out, errOut, code := cli(t, url, "submit", "--file", path)
	if code != 1 || out != "landed 3, replayed 0, refused 1\n" || !strings.Contains(errOut, "line 4: refused: invalid_input") {
		t.Errorf("text (%d):\n%s\n%s", code, out, errOut)
	}
	out, errOut, code = cli(t, url, "submit", "--file", path, "-o", "json")
	var sum fileSummary
	if code != 1 || json.Unmarshal([]byte(out), &sum) != nil || sum.Refused != 1 || sum.Replayed != 3 ||
		sum.Results[3].Error == nil || sum.Results[3].Error.Code != "invalid_input" || sum.Results[3].Line != 4 {
		t.Errorf("json (%d):\n%s\n%s", code, out, errOut)
	}
	if strings.Contains(out, `"Status"`) || strings.Contains(out, `"Code"`) {
		t.Errorf("json errors are not in the API's shape:\n%s", out)
	}
	// A line that is not JSON refuses the file before anything is sent.
	bad := writeLines(t, 2, `{"task_type":`)
	_, errOut, code = cli(t, url, "submit", "--file", bad)
	if code != 2 || !strings.Contains(errOut, "line 3 is not JSON: line 1, column 14") {
		t.Errorf("a bad line (%d): %s", code, errOut)
	}
}

func TestFileLineIDsAreUUIDv7sOfContentQueueAndLine(t *testing.T) {
	a := [32]byte{1}
	b := [32]byte{2}
	id := fileLineID(a, "default", 7)
	if err := queue.ValidateID(id); err != nil {
		t.Fatal(err)
	}
	if fileLineID(a, "default", 7) != id {
		t.Error("not deterministic")
	}
	for _, other := range []string{fileLineID(b, "default", 7), fileLineID(a, "other", 7), fileLineID(a, "default", 8)} {
		if other == id {
			t.Errorf("content, queue and line do not all change the id: %s", other)
		}
	}
	if !(fileLineID(a, "default", 7) < fileLineID(a, "default", 8)) {
		t.Error("ids do not sort in line order")
	}
}

func TestSubmitWaitSaysTheTasksState(t *testing.T) {
	url := memAPI(t, queues.Options{}, nil)
	out, _, code := cli(t, url, "submit", "-t", "nobody.works", "--wait", "1s")
	if code != 0 || !strings.Contains(out, "the wait ran out: the task is pending and no worker has claimed it yet") || strings.Contains(out, "still running") {
		t.Errorf("wait with no worker (%d):\n%s", code, out)
	}
}

// A wait the task's deadline ends is not "unavailable": the task expired
// (exit 6, as for a task that ended failed or cancelled).
func TestSubmitWaitPastTheDeadlineExitsSix(t *testing.T) {
	url := memAPI(t, queues.Options{}, nil)
	_, errOut, code := cli(t, url, "submit", "-t", "nobody.works", "--ttl", "1s", "--wait", "5s")
	if code != 6 || !strings.Contains(errOut, "deadline_exceeded") {
		t.Errorf("wait past the deadline (%d): %s", code, errOut)
	}
}

// A submit --wait whose task ends failed or cancelled exits 6, as its
// --help says; one that completes exits 0.
func TestSubmitWaitExitsSixWhenTheTaskEndsBadly(t *testing.T) {
	url := memAPI(t, queues.Options{}, nil)
	if out, _, _ := cli(t, url, "submit", "--help"); !strings.Contains(out, "exit 6 if the task ends failed, expired or cancelled") {
		t.Errorf("submit --help does not name exit 6:\n%s", out)
	}
	for _, c := range []struct {
		end, body, status string
		code              int
	}{
		{"fail", `{"lease_token":%q,"error":"boom","retryable":false}`, "failed", 6},
		{"cancel", `{}`, "cancelled", 6},
		{"complete", `{"lease_token":%q,"output":{}}`, "completed", 0},
	} {
		ctx, stop := context.WithCancel(context.Background())
		go endOneTask(ctx, t, url, c.end, c.body)
		out, errOut, code := cli(t, url, "submit", "-t", "a", "--wait", "20s", "-o", "json")
		stop()
		if code != c.code || !strings.Contains(out, `"status": "`+c.status+`"`) {
			t.Errorf("%s: exit %d, want %d:\n%s%s", c.end, code, c.code, out, errOut)
		}
	}
}

// endOneTask claims the next task of queue default and ends it by end
// (fail, cancel or complete), with body (given the lease token).
func endOneTask(ctx context.Context, t *testing.T, url, end, body string) {
	post := func(path, body string) (int, []byte) {
		req, _ := http.NewRequestWithContext(ctx, "POST", url+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, nil
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	for ctx.Err() == nil {
		if end == "cancel" { // a pending task: cancelled at once
			var got struct{ Tasks []struct{ ID string } }
			req, _ := http.NewRequestWithContext(ctx, "GET", url+"/queues/default/tasks?status=pending", nil)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				_ = json.NewDecoder(resp.Body).Decode(&got)
				resp.Body.Close()
			}
			if len(got.Tasks) == 0 {
				time.Sleep(50 * time.Millisecond)
				continue
			}
			post("/queues/default/tasks/"+got.Tasks[0].ID+"/cancel", body)
			return
		}
		code, b := post("/queues/default/claim", `{}`)
		var got struct {
			Tasks []struct {
				Task  struct{ ID string }    `json:"task"`
				Lease struct{ Token string } `json:"lease"`
			} `json:"tasks"`
		}
		if code != 200 || json.Unmarshal(b, &got) != nil || len(got.Tasks) == 0 {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		id := got.Tasks[0].Task.ID
		if strings.Contains(body, "%q") {
			body = fmt.Sprintf(body, got.Tasks[0].Lease.Token)
		}
		post("/queues/default/tasks/"+id+"/"+end, body)
		return
	}
}

func TestWorkerOnAnUndeclaredQueueSpeaksUp(t *testing.T) {
	strict := memAPI(t, queues.Options{RequireDeclared: true}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	start := time.Now()
	code := run(ctx, []string{"worker", "--url", strict, "-q", "emials", "--type", "email.send", "--exec", "true"}, strings.NewReader(""), &out, &errOut)
	if code != 3 || !strings.Contains(errOut.String(), `queue "emials" is not declared`) || time.Since(start) > 10*time.Second {
		t.Errorf("strict deployment: exit %d after %v: %s", code, time.Since(start), errOut.String())
	}
	auto := memAPI(t, queues.Options{}, nil)
	ctx, cancel = context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	errOut.Reset()
	code = run(ctx, []string{"worker", "--url", auto, "-q", "emials", "--type", "email.send", "--exec", "true"}, strings.NewReader(""), &out, &errOut)
	if code != 0 || !strings.Contains(errOut.String(), `warning: queue "emials" is not declared`) {
		t.Errorf("auto-declaring deployment: exit %d: %s", code, errOut.String())
	}
}

func TestInvokeFindsTheRunningDevServer(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- devserver.Run(ctx, devserver.Options{Addr: "127.0.0.1:0", Out: &bytes.Buffer{},
			Logger: slog.New(slog.DiscardHandler), Started: func(u string) { started <- u }})
	}()
	var url string
	select {
	case url = <-started:
	case err := <-done:
		t.Fatal(err)
	}
	defer func() { cancel(); <-done }()
	t.Setenv("S3Q_BUCKET", "")
	out, errOut, code := cli(t, url, "invoke", "submit", "../../events/submit.json")
	if code != 0 || !strings.Contains(out, `"statusCode": 201`) {
		t.Fatalf("invoke submit in s3q dev (%d):\n%s\n%s", code, out, errOut)
	}
	out, errOut, code = cli(t, url, "invoke", "tasks", "../../events/tasks-complete.json")
	if code != 2 || !strings.Contains(out, `"statusCode": 400`) || !strings.Contains(errOut, "the function answered 400") {
		t.Errorf("a 400 answer (%d):\n%s", code, errOut)
	}
	_, errOut, code = cli(t, "http://127.0.0.1:1", "invoke", "submit", "../../events/submit.json")
	if code != 5 || !strings.Contains(errOut, "make dev") || !strings.Contains(errOut, "S3Q_BUCKET") {
		t.Errorf("no dev server (%d): %s", code, errOut)
	}
}

// s3q list shows when a pending task is due, as the README says
// ("DUE in 2h"), beside when it expires.
func TestListShowsWhenAPendingTaskIsDue(t *testing.T) {
	url := memAPI(t, queues.Options{}, nil)
	cli(t, url, "submit", "-t", "report.build", "--in", "2h", "--ttl", "3h")
	cli(t, url, "submit", "-t", "now")
	out, errOut, code := cli(t, url, "list", "--status", "pending")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 3 || !strings.Contains(lines[0], "DUE") {
		t.Fatalf("list (%d):\n%s%s", code, out, errOut)
	}
	due := regexp.MustCompile(`ago\s+in (1h 59m|2h)\S*\s+in (2h 59m|3h)`)
	for _, l := range lines[1:] {
		switch {
		case strings.Contains(l, "report.build") && !due.MatchString(l):
			t.Errorf("the delayed task's row does not say due in 2h, then expires in 3h: %q", l)
		case strings.Contains(l, " now ") && !regexp.MustCompile(`ago\s+now\s+-`).MatchString(l):
			t.Errorf("the due task's row does not say due now: %q", l)
		}
	}
}

// s3q sweep and s3q tick need no environment against a running s3q dev:
// they ask it to run the function, and the sweep's events are the dev
// server's (GET /events, the console's Events page).
func TestSweepAndTickRunInTheRunningDevServer(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- devserver.Run(ctx, devserver.Options{Addr: "127.0.0.1:0", Out: &bytes.Buffer{},
			Logger: slog.New(slog.DiscardHandler), Started: func(u string) { started <- u }})
	}()
	var url string
	select {
	case url = <-started:
	case err := <-done:
		t.Fatal(err)
	}
	defer func() { cancel(); <-done }()
	t.Setenv("S3Q_BUCKET", "")
	out, errOut, code := cli(t, url, "submit", "-t", "report", "--ttl", "0s", "-o", "json")
	if code != 0 {
		t.Fatalf("submit (%d): %s", code, errOut)
	}
	var sub struct {
		Task queue.Task `json:"task"`
	}
	_ = json.Unmarshal([]byte(out), &sub)
	out, errOut, code = cli(t, url, "sweep")
	if code != 0 || !strings.Contains(out, "events sent:") || !regexp.MustCompile(`events sent:\s+1\b`).MatchString(out) {
		t.Fatalf("s3q sweep in s3q dev (%d):\n%s\n%s", code, out, errOut)
	}
	resp, err := http.Get(url + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(body), sub.Task.ID) || !strings.Contains(string(body), "Task Expired") {
		t.Fatalf("GET /events after s3q sweep: %s", body)
	}
	out, errOut, code = cli(t, url, "tick", "-o", "json")
	if code != 0 || !strings.Contains(out, `"fired": 0`) {
		t.Fatalf("s3q tick in s3q dev (%d):\n%s\n%s", code, out, errOut)
	}
}
