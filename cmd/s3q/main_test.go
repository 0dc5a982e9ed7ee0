package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/api"
	"github.com/s3q/s3q/shared/api/openapitest"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/s3local/s3localtest"
)

var servers s3localtest.Servers

func TestMain(m *testing.M) { os.Exit(s3localtest.Main(m, &servers)) }

// cli runs s3q with args against url and returns stdout, stderr and the exit code.
func cli(t *testing.T, url string, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	full := append([]string{}, args...)
	if url != "" {
		full = append(full, "--url", url)
	}
	code := run(context.Background(), full, strings.NewReader(""), &out, &errOut)
	return out.String(), errOut.String(), code
}

func apiURL(t *testing.T) string {
	t.Helper()
	q, decls := queues.New(s3localtest.NewStore(t, servers.GoFakeS3), queues.Options{Core: queue.Options{ListCacheFor: -1}})
	ts := httptest.NewServer(openapitest.Handler(t, api.New(q, decls, api.Options{Logger: slog.New(slog.DiscardHandler)})))
	t.Cleanup(ts.Close)
	return ts.URL
}

func TestHelpReadsWellForEveryCommand(t *testing.T) {
	out, _, code := cli(t, "", "--help")
	if code != 0 || !strings.Contains(out, "Commands:") || !strings.Contains(out, "submit") || !strings.Contains(out, "Durations accept s, m, h and d") {
		t.Fatalf("help (%d):\n%s", code, out)
	}
	for name := range commands {
		out, _, code := cli(t, "", name, "--help")
		if code != 0 || !strings.HasPrefix(out, "s3q "+name+" — ") || !strings.Contains(out, "Usage:") || strings.Contains(out, "`") {
			t.Fatalf("%s --help (%d):\n%s", name, code, out)
		}
	}
	out, _, _ = cli(t, "", "submit", "--help")
	for _, want := range []string{"-t, --type TYPE", "--ttl DURATION", "--at TIME", "--in DURATION", "--dedup-key KEY", "--wait DURATION", "--file FILE"} {
		if !strings.Contains(out, want) {
			t.Errorf("submit --help lacks %q", want)
		}
	}
}

func TestBadUsageExitsTwoWithAHint(t *testing.T) {
	for _, args := range [][]string{{"nope"}, {"status"}, {"submit", "--ttl", "3x", "-t", "a"}, {"submit"}, {"list", "-o", "xml"}, {"--bogus", "status"}} {
		_, errOut, code := cli(t, "", args...)
		if code != 2 || errOut == "" {
			t.Errorf("%v: exit %d, stderr %q", args, code, errOut)
		}
	}
	_, errOut, code := cli(t, "http://127.0.0.1:1", "status", queue.NewID(time.Now()))
	if code != 5 || !strings.Contains(errOut, "make dev") {
		t.Fatalf("unreachable API: exit %d, stderr %q", code, errOut)
	}
}

func TestSubmitStatusListHistoryAndOpsThroughTheAPI(t *testing.T) {
	url := apiURL(t)
	out, errOut, code := cli(t, url, "submit", "-t", "email.send", "-i", `{"to":"a@b.c"}`, "--ttl", "2h", "-o", "json")
	if code != 0 {
		t.Fatalf("submit: %d %s", code, errOut)
	}
	var res struct {
		Task queue.Task `json:"task"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Task.ID == "" {
		t.Fatalf("submit json %q: %v", out, err)
	}
	id := res.Task.ID

	out, _, code = cli(t, url, "status", id)
	if code != 0 || !strings.Contains(out, "expires_at:") || !strings.Contains(out, "(in 1h 59m)") && !strings.Contains(out, "(in 2h)") {
		t.Fatalf("status (%d):\n%s", code, out)
	}

	at := time.Now().Add(48 * time.Hour).UTC().Format(time.RFC3339)
	out, _, code = cli(t, url, "submit", "-t", "later", "--at", at, "--dedup-key", "k1")
	if code != 0 || !strings.Contains(out, "available_at:") {
		t.Fatalf("submit --at (%d):\n%s", code, out)
	}
	out, _, code = cli(t, url, "submit", "-t", "later", "--at", at, "--dedup-key", "k1")
	if code != 0 || !strings.Contains(out, "deduplicated") {
		t.Fatalf("dedup submit (%d):\n%s", code, out)
	}

	out, _, code = cli(t, url, "expire", id)
	if code != 0 || !strings.Contains(out, "expired") {
		t.Fatalf("expire (%d):\n%s", code, out)
	}
	out, _, code = cli(t, url, "list", "--status", "expired")
	if code != 0 || !strings.Contains(out, id) || !strings.Contains(out, "STATUS") {
		t.Fatalf("list (%d):\n%s", code, out)
	}
	out, _, code = cli(t, url, "history", id)
	if code != 0 || !strings.Contains(out, "Version 1: pending (expires_at:") || !strings.Contains(out, "Version 2: expired (expired_at:") {
		t.Fatalf("history (%d):\n%s", code, out)
	}
	out, errOut, code = cli(t, url, "history", id, "--limit", "1")
	if code != 0 || !strings.Contains(out, ": expired") || strings.Contains(out, "pending") || !strings.Contains(errOut, "more: s3q history "+id+" --cursor ") {
		t.Fatalf("history --limit 1 (%d):\n%s%s", code, out, errOut)
	}
	out, _, code = cli(t, url, "history", id, "--limit", "1", "--all")
	if code != 0 || !strings.Contains(out, "Version 1: pending") || !strings.Contains(out, "Version 2: expired") {
		t.Fatalf("history --limit 1 --all (%d):\n%s", code, out)
	}
	_, errOut, code = cli(t, url, "retry", id)
	if code != 4 || !strings.Contains(errOut, "invalid_state") {
		t.Fatalf("retry of an expired task: %d %s", code, errOut)
	}
	_, errOut, code = cli(t, url, "submit", "-t", "a/b")
	if code != 2 || !strings.Contains(errOut, "task_type") {
		t.Fatalf("bad type: %d %s", code, errOut)
	}
}

func TestSubmitFileSubmitsEveryLineWithProgress(t *testing.T) {
	url := apiURL(t)
	var b strings.Builder
	for i := 0; i < 7; i++ {
		b.WriteString(`{"task_type":"bulk","input":{"i":1},"ttl":"1h"}` + "\n")
	}
	b.WriteString(`{"task_type":"bad/type"}` + "\n")
	path := filepath.Join(t.TempDir(), "tasks.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := cli(t, url, "submit", "--file", path)
	if code != 1 || !strings.Contains(out, "landed 7, replayed 0, refused 1") || !strings.Contains(errOut, "submitting [") || !strings.Contains(errOut, "line 8") {
		t.Fatalf("submit --file (%d):\nstdout %s\nstderr %s", code, out, errOut)
	}
}

func TestWorkerExecRunsTheCommandWithInputOnStdin(t *testing.T) {
	url := apiURL(t)
	out, _, _ := cli(t, url, "submit", "-t", "upper", "-i", `"hello"`, "-o", "json")
	var res struct {
		Task queue.Task `json:"task"`
	}
	_ = json.Unmarshal([]byte(out), &res)
	bad, _, _ := cli(t, url, "submit", "-t", "upper", "-i", `"fail"`, "--max-attempts", "1", "-o", "json")
	var badRes struct {
		Task queue.Task `json:"task"`
	}
	_ = json.Unmarshal([]byte(bad), &badRes)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	var wout, werr bytes.Buffer
	cmd := `read x; case "$x" in *fail*) echo nope >&2; exit 1;; esac; echo "$x" | tr a-z A-Z`
	code := run(ctx, []string{"worker", "--url", url, "--type", "upper", "--exec", cmd}, strings.NewReader(""), &wout, &werr)
	if code != 0 {
		t.Fatalf("worker exit %d: %s", code, werr.String())
	}
	got, _, _ := cli(t, url, "status", res.Task.ID, "-o", "json")
	if !strings.Contains(got, `"status": "completed"`) || !strings.Contains(got, `"output": "HELLO"`) {
		t.Fatalf("worked task:\n%s\nworker log:\n%s", got, werr.String())
	}
	got, _, _ = cli(t, url, "status", badRes.Task.ID, "-o", "json")
	if !strings.Contains(got, `"status": "failed"`) || !strings.Contains(got, "exit 1: nope") {
		t.Fatalf("failed task:\n%s", got)
	}
}

func TestInvokeRunsAFunctionWithASampleEvent(t *testing.T) {
	srv := servers.VersityGW
	t.Setenv("S3Q_BUCKET", srv.Bucket)
	t.Setenv("S3Q_ENDPOINT", srv.Endpoint)
	t.Setenv("S3Q_PREFIX", "invoke-"+strings.ToLower(queue.NewID(time.Now())[:8])+"/")
	t.Setenv("AWS_REGION", srv.Region)
	t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
	// As in the stack, queues must be declared unless S3Q_AUTO_DECLARE is on.
	out, errOut, code := cli(t, "", "invoke", "submit", "../../events/submit.json")
	if code != 3 || !strings.Contains(out, `"statusCode": 404`) || !strings.Contains(out, "queue_not_found") {
		t.Fatalf("invoke submit to an undeclared queue (%d):\n%s\n%s", code, out, errOut)
	}
	t.Setenv("S3Q_AUTO_DECLARE", "true")
	out, errOut, code = cli(t, "", "invoke", "submit", "../../events/submit.json")
	if code != 0 || !strings.Contains(out, `"statusCode": 201`) {
		t.Fatalf("invoke submit (%d):\n%s\n%s", code, out, errOut)
	}
	out, errOut, code = cli(t, "", "invoke", "sweep-expired", "../../events/sweep-expired.json")
	if code != 0 || !strings.Contains(out, "sweep-expired") || !strings.Contains(out, `"wired": true`) || !strings.Contains(out, `"expired": 0`) {
		t.Fatalf("invoke sweep (%d):\n%s\n%s", code, out, errOut)
	}
	_, errOut, code = cli(t, "", "invoke", "nope", "../../events/submit.json")
	if code != 2 || !strings.Contains(errOut, "nope") {
		t.Fatalf("unknown function: %d %s", code, errOut)
	}
}

// s3q worker --exec hands the command the trace context the task was
// submitted in (s3q submit --traceparent/--tracestate) as TRACEPARENT and
// TRACESTATE.
func TestWorkerExecGetsTheSubmitsTraceContext(t *testing.T) {
	url := apiURL(t)
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	out, errOut, code := cli(t, url, "submit", "-t", "traced", "--traceparent", tp, "--tracestate", "vendor=abc", "-o", "json")
	var res struct {
		Task queue.Task `json:"task"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || code != 0 {
		t.Fatalf("submit (%d): %v %s", code, err, errOut)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	var wout, werr bytes.Buffer
	if code := run(ctx, []string{"worker", "--url", url, "--type", "traced", "--exec", `printf '"%s|%s"' "$TRACEPARENT" "$TRACESTATE"`}, strings.NewReader(""), &wout, &werr); code != 0 {
		t.Fatalf("worker exit %d: %s", code, werr.String())
	}
	got, _, _ := cli(t, url, "status", res.Task.ID, "-o", "json")
	if !strings.Contains(got, `"output": "`+tp+`|vendor=abc"`) {
		t.Fatalf("the command did not get the trace context:\n%s\nworker log:\n%s", got, werr.String())
	}
}
