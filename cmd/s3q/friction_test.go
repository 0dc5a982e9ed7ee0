package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/client"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/wire"
	"github.com/s3q/s3q/shared/worker"
)

// alive says whether process pid runs: it exists (signal 0 reaches it)
// and, where /proc tells, is not a zombie.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true // no /proc here: it exists, and a zombie cannot be told apart
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z")
}

// A cancelled --exec task (lease lost, cancel asked, the shutdown grace
// over) kills everything the command started, not only sh: before, a
// child holding stdout kept the handler (and the worker's shutdown) until
// it ended by itself.
func TestExecHandlerCancelKillsTheWholeCommand(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	h := execHandler("sleep 300 & echo $! > " + pidFile + "; wait")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := h(ctx, &worker.Task{Task: client.Task{Task: wire.Task{ID: queue.NewID(time.Now()), TaskType: "t", Input: json.RawMessage(`{}`)}}})
		done <- err
	}()
	var pid int
	for pid == 0 {
		b, _ := os.ReadFile(pidFile)
		if s := strings.TrimSpace(string(b)); s != "" {
			pid, _ = strconv.Atoi(s)
		} else {
			time.Sleep(20 * time.Millisecond)
		}
	}
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a cancelled command succeeded")
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("the handler still runs %s after its cancel: it waits for the command's child", time.Since(start))
	}
	for i := 0; alive(pid) && i < 100; i++ {
		time.Sleep(100 * time.Millisecond)
	}
	if alive(pid) {
		t.Errorf("the command's child %d still runs after the cancel", pid)
	}
}

// An API 400 whose message does not name its field says the field in text
// mode too (-o json has it as "field").
func TestAPIErrorsNameTheirField(t *testing.T) {
	url := memAPI(t, queues.Options{}, nil)
	parent := queue.NewID(time.Now())
	_, errOut, code := cli(t, url, "submit", "-t", "a", "--parent", parent)
	if code != 2 || !strings.Contains(errOut, "no task "+parent) || !strings.Contains(errOut, "(invalid_input, field parent_id)") {
		t.Errorf("submit --parent %s (%d): %s", parent, code, errOut)
	}
	// A message that names its field already is left as it is.
	for _, args := range [][]string{{"list", "--status", "done"}, {"submit", "-t", "a", "--wait", "30s"}} {
		_, errOut, code = cli(t, url, args...)
		if code != 2 || !strings.Contains(errOut, "(invalid_input)") || strings.Contains(errOut, "field ") {
			t.Errorf("%v (%d): %s", args, code, errOut)
		}
	}
	if _, errOut, _ = cli(t, url, "list", "--status", "done"); !strings.Contains(errOut, `status "done" is not one of`) {
		t.Errorf("list --status done: %s", errOut)
	}
}

// A mistyped command, subcommand or flag gets a short error, exit 2, and
// the nearest name; a word near nothing gets no guess.
func TestTyposSuggestTheNearestName(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"subimt"}, `unknown command "subimt" (did you mean "submit"?)`},
		{[]string{"help", "hisotry"}, `unknown command "hisotry" (did you mean "history"?)`},
		{[]string{"queue", "craete", "x"}, `unknown queue subcommand "craete" (did you mean "create"?)`},
		{[]string{"schedule", "trgger", "d"}, `unknown schedule subcommand "trgger" (did you mean "trigger"?)`},
		{[]string{"submit", "-t", "a", "--queu", "emails"}, "unknown flag --queu (did you mean --queue?)"},
		{[]string{"submit", "-t", "a", "--ttl-form", "first_attempt"}, "unknown flag --ttl-form (did you mean --ttl-from?)"},
		{[]string{"xyz"}, `unknown command "xyz"` + "\n"},
		{[]string{"submit", "--bogus"}, "unknown flag --bogus\n"},
	}
	for _, c := range cases {
		out, errOut, code := cli(t, "", c.args...)
		if code != 2 || out != "" || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stdout %d bytes, stderr %q; want exit 2 and %q", c.args, code, len(out), errOut, c.want)
		}
		if strings.Contains(errOut, "Exit codes:") {
			t.Errorf("%v: prints the whole help for a typo:\n%s", c.args, errOut)
		}
	}
}

// Every command's help shows a flag's non-zero default (s3q dev's --addr is
// how to pick another port) and calls a duration DURATION, never VALUE.
func TestHelpShowsDefaultsAndDurationPlaceholders(t *testing.T) {
	out, _, _ := cli(t, "", "dev", "--help")
	if !strings.Contains(out, "--addr ADDRESS           address to serve the API on (default 127.0.0.1:8080)") {
		t.Errorf("dev --help does not show --addr's default:\n%s", out)
	}
	out, _, _ = cli(t, "", "worker", "--help")
	for _, w := range []string{"--concurrency INT        tasks to run at once (default 1)", "--lease DURATION", "--wait DURATION"} {
		if !strings.Contains(out, w) {
			t.Errorf("worker --help lacks %q:\n%s", w, out)
		}
	}
	for name := range commands {
		out, _, _ := cli(t, "", name, "--help")
		if strings.Contains(out, " VALUE ") || strings.Contains(out, "(default 0)") || strings.Contains(out, "(default false)") {
			t.Errorf("%s --help has a VALUE placeholder or a zero default:\n%s", name, out)
		}
	}
}

// s3q dev on a port in use says so and how to pick another, not that no
// API answers at the CLI's default URL; an --addr without a port is a
// usage error naming --addr.
func TestDevOnAPortInUseSaysHowToPickAnother(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	_, errOut, code := cli(t, "", "dev", "--addr", addr)
	if code != 1 || !strings.Contains(errOut, addr+" is in use") || !strings.Contains(errOut, "s3q dev --addr 127.0.0.1:") ||
		!strings.Contains(errOut, "export S3Q_URL=") || strings.Contains(errOut, "No s3q API answers") {
		t.Errorf("dev on a port in use: exit %d\n%s", code, errOut)
	}
	_, errOut, code = cli(t, "", "dev", "--addr", "18437")
	if code != 2 || !strings.Contains(errOut, `--addr "18437"`) || !strings.Contains(errOut, "e.g. --addr 127.0.0.1:") {
		t.Errorf("dev --addr without a port: exit %d\n%s", code, errOut)
	}
}

// Ctrl-C while submit --wait waits names the task, which may well exist,
// so it can be looked at.
func TestSubmitInterruptedNamesTheTask(t *testing.T) {
	landed := make(chan struct{}, 1)
	url := memAPI(t, queues.Options{}, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodPost {
				next.ServeHTTP(w, r)
				return
			}
			// The submit lands (after its 1s wait); its answer never comes.
			next.ServeHTTP(httptest.NewRecorder(), r)
			landed <- struct{}{}
			<-r.Context().Done()
		})
	})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-landed; cancel() }()
	var out, errOut bytes.Buffer
	code := run(ctx, []string{"submit", "-q", "default", "-t", "a", "--wait", "1s", "--url", url}, strings.NewReader(""), &out, &errOut)
	ref, _, ok := strings.Cut(strings.TrimPrefix(errOut.String(), "s3q submit: interrupted: task "), " ")
	if code != 130 || !ok || !strings.HasPrefix(ref, "default/") || !strings.Contains(errOut.String(), "(s3q status "+ref+")") {
		t.Fatalf("interrupted submit: exit %d, stderr %q", code, errOut.String())
	}
	if o, e, code := cli(t, url, "status", ref); code != 0 || !strings.Contains(o, "pending") {
		t.Errorf("the task the message names (%s): exit %d %s%s", ref, code, o, e)
	}
}

// An --input over the API's inline limit is refused before it is sent,
// naming the limit (a 20 MB file got "the body is 6291457 bytes, over the
// limit of 6291456"); one within it once compacted goes through.
func TestSubmitInputOverTheInlineLimitIsRefusedFirst(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, []byte(`{"x":"`+strings.Repeat("a", queue.MaxInputBytes)+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := cli(t, "http://127.0.0.1:1", "submit", "-t", "a", "-i", "@"+big)
	if code != 2 || !strings.Contains(errOut, "over the inline limit of 262144 bytes (256 KiB)") || strings.Contains(errOut, "No s3q API") {
		t.Errorf("submit -i @big: exit %d, %s", code, errOut)
	}
	spaced := filepath.Join(dir, "spaced.json")
	if err := os.WriteFile(spaced, []byte("{\n"+strings.Repeat(" ", queue.MaxInputBytes)+`"x": 1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	url := memAPI(t, queues.Options{}, nil)
	if out, errOut, code := cli(t, url, "submit", "-t", "a", "-i", "@"+spaced, "-o", "id"); code != 0 || out == "" {
		t.Errorf("submit of an input within the limit once compacted: exit %d, %s", code, errOut)
	}
}

// A queue's ttl reads "1h", or "1h from first_attempt", with no stray space.
func TestQueueShowsItsTTLPlainly(t *testing.T) {
	url := memAPI(t, queues.Options{}, nil)
	out, errOut, code := cli(t, url, "queue", "create", "emails", "--ttl", "1h")
	if code != 0 || !strings.Contains(out, "1h\n") || strings.Contains(out, "1h \n") {
		t.Errorf("queue create --ttl 1h (%d): %q %s", code, out, errOut)
	}
	out, errOut, code = cli(t, url, "queue", "create", "later", "--ttl", "2h", "--ttl-from", "first_attempt")
	if code != 0 || !strings.Contains(out, "2h from first_attempt\n") {
		t.Errorf("queue create --ttl-from first_attempt (%d): %q %s", code, out, errOut)
	}
}

// A command on an undeclared queue says, in CLI terms, how to find or
// declare one (the API's message speaks of PUT /queues/{queue}).
func TestQueueNotFoundSaysHowToDeclareIt(t *testing.T) {
	url := memAPI(t, queues.Options{}, nil)
	_, errOut, code := cli(t, url, "stats", "-q", "nosuch")
	if code != 3 || !strings.Contains(errOut, "queue_not_found") || !strings.Contains(errOut, "s3q queue create NAME") || !strings.Contains(errOut, "s3q queue list") {
		t.Errorf("stats -q nosuch: exit %d\n%s", code, errOut)
	}
}

// submit --file draws its bar with carriage returns on a terminal only; to
// a pipe or a log it writes the bar once, at the end.
func TestSubmitFileProgressOnceWhenNotATerminal(t *testing.T) {
	url := memAPI(t, queues.Options{}, nil)
	var lines strings.Builder
	for i := range 1200 {
		lines.WriteString(`{"task_type":"a","input":{"i":` + strconv.Itoa(i) + `}}` + "\n")
	}
	file := filepath.Join(t.TempDir(), "tasks.jsonl")
	if err := os.WriteFile(file, []byte(lines.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := cli(t, url, "submit", "--file", file)
	if code != 0 || strings.Contains(errOut, "\r") || strings.Count(errOut, "submitting [") != 1 || !strings.Contains(errOut, "1200/1200") {
		t.Errorf("submit --file to a buffer: exit %d, stderr %q", code, errOut)
	}
}

// A bad duration is worded once: `--ttl "1hour": not a duration (...)`,
// not the value twice.
func TestBadDurationIsWordedOnce(t *testing.T) {
	_, errOut, code := cli(t, "", "submit", "-t", "a", "--ttl", "1hour")
	if code != 2 || strings.Count(errOut, "1hour") != 1 || !strings.Contains(errOut, `--ttl "1hour": not a duration`) || !strings.Contains(errOut, "e.g. --ttl 1h") {
		t.Errorf("--ttl 1hour: exit %d, %s", code, errOut)
	}
}

// An empty list of an undeclared queue says the queue is not declared; an
// empty list of a declared one says nothing more.
func TestListOfAnUndeclaredQueueSaysSo(t *testing.T) {
	url := memAPI(t, queues.Options{}, nil)
	out, errOut, code := cli(t, url, "list", "-q", "emials")
	if code != 0 || !strings.Contains(out, "ID") || !strings.Contains(errOut, `queue "emials" is not declared`) {
		t.Errorf("list -q emials: exit %d, %q %q", code, out, errOut)
	}
	if _, _, code := cli(t, url, "queue", "create", "emails"); code != 0 {
		t.Fatalf("queue create: exit %d", code)
	}
	if _, errOut, code := cli(t, url, "list", "-q", "emails"); code != 0 || errOut != "" {
		t.Errorf("list -q emails (declared, empty): exit %d, %q", code, errOut)
	}
}
