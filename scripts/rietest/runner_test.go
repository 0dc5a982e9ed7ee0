//go:build rie

package rietest

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/s3q/s3q/shared/lambdafn/eventtest"
)

// function is one function's bootstrap running under the emulator: the
// emulator process (aws-lambda-rie), which starts the bootstrap on the
// first invocation (the cold start) and keeps it for the next ones.
type function struct {
	name, arch string
	label      string // a variant (a setting changed): left out of the timings
	addr       string // the emulator's invoke address
	cmd        *exec.Cmd
	out        *logBuffer
	done       chan struct{}
	// invocations is every invocation made, in order, with its REPORT.
	mu          sync.Mutex
	invocations []invocation
}

// invocation is one answer of the emulator and its REPORT line.
type invocation struct {
	event     string
	requestID string
	status    int
	body      []byte
	header    http.Header
	report    report
}

// report is the emulator's REPORT line of an invocation: its time (on the
// first, the init's included) and whether it was the first (the line
// carries an "Init Duration").
type report struct {
	found    bool
	first    bool
	duration time.Duration
}

// unzip extracts the zip at path into a fresh directory (as Lambda unpacks
// a function's code into /var/task) and returns it.
func unzip(t *testing.T, path string) string {
	t.Helper()
	r, err := zip.OpenReader(path)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	defer r.Close()
	dir := t.TempDir()
	for _, f := range r.File {
		if strings.Contains(f.Name, "..") || strings.HasPrefix(f.Name, "/") {
			t.Fatalf("%s: entry %q leaves the folder", path, f.Name)
		}
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f.Name), b, f.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// startFunction runs the bootstrap in dir under the emulator with exactly
// env as its environment (the emulator hands its own environment to the
// function, as Lambda hands the function's configuration). On arm64 the
// bootstrap runs under qemu (setup.qemu) unless this host is arm64.
func startFunction(t *testing.T, name, arch, dir string, env []string) *function {
	t.Helper()
	var lastErr error
	for range 3 { // a port taken between picking and binding: try others
		f, err := tryStart(name, arch, dir, env)
		if err == nil {
			t.Cleanup(f.stop)
			return f
		}
		lastErr = err
	}
	t.Fatalf("%s (%s): the emulator did not start: %v", name, arch, lastErr)
	return nil
}

func tryStart(name, arch, dir string, env []string) (*function, error) {
	invokeAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	apiAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	args := []string{
		"--runtime-interface-emulator-address", invokeAddr,
		"--runtime-api-address", apiAddr,
		"--log-level", "info",
	}
	if arch == "arm64" && setup.qemu != "" {
		args = append(args, setup.qemu, "./bootstrap")
	} else {
		args = append(args, "./bootstrap")
	}
	cmd := exec.Command(setup.rie, args...)
	cmd.Dir = dir
	cmd.Env = env
	out := &logBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	f := &function{name: name, arch: arch, addr: invokeAddr, cmd: cmd, out: out, done: make(chan struct{})}
	go func() { cmd.Wait(); close(f.done) }()
	deadline := time.Now().Add(15 * time.Second)
	for {
		select {
		case <-f.done:
			return nil, fmt.Errorf("exited: %s", out.String())
		default:
		}
		if c, err := net.DialTimeout("tcp", invokeAddr, 200*time.Millisecond); err == nil {
			c.Close()
			return f, nil
		}
		if time.Now().After(deadline) {
			f.stop()
			return nil, fmt.Errorf("not listening on %s after 15s: %s", invokeAddr, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop ends the emulator and the bootstrap it started (one process group).
func (f *function) stop() {
	if f.cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-f.cmd.Process.Pid, syscall.SIGKILL)
	<-f.done
}

// invoke sends payload as the emulator's Invoke API receives it and
// returns the answer with the invocation's REPORT line.
func (f *function) invoke(t *testing.T, event string, payload []byte) invocation {
	t.Helper()
	id := newID()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+f.addr+"/2015-03-31/functions/function/invocations", bytes.NewReader(payload))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Amzn-RequestId", id)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s (%s) %s: %v\n%s", f.name, f.arch, event, err, f.out.String())
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	inv := invocation{event: event, requestID: id, status: resp.StatusCode, body: body, header: resp.Header}
	// Every answer of the API to an HTTP event is checked against the
	// OpenAPI document.
	var answer events.APIGatewayV2HTTPResponse
	if resp.StatusCode == http.StatusOK && json.Unmarshal(body, &answer) == nil && answer.StatusCode != 0 {
		eventtest.CheckAnswer(t, payload, answer)
	}
	// The emulator prints REPORT before it answers; its pipe may lag.
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if inv.report = parseReport(f.out.String(), id); inv.report.found {
			break
		}
	}
	f.mu.Lock()
	f.invocations = append(f.invocations, inv)
	f.mu.Unlock()
	return inv
}

var initReport = regexp.MustCompile(`INIT REPORT\(durationMs: ([0-9.]+)\)`)

// initDuration is the bootstrap's first init from the emulator's log
// ("INIT REPORT"): process start to its first GET /next. The REPORT line's
// "Init Duration" of this emulator measures only its own hand-over, and
// the first invocation's Duration includes the init.
func (f *function) initDuration() time.Duration {
	if m := initReport.FindStringSubmatch(f.out.String()); m != nil {
		return ms(m[1])
	}
	return 0
}

var reportLine = regexp.MustCompile(`REPORT RequestId: (\S+)\t(?:Init Duration: ([0-9.]+) ms\t)?Duration: ([0-9.]+) ms`)

// parseReport finds the REPORT line of request id in the emulator's log.
func parseReport(log, id string) report {
	for _, m := range reportLine.FindAllStringSubmatch(log, -1) {
		if m[1] != id {
			continue
		}
		return report{found: true, first: m[2] != "", duration: ms(m[3])}
	}
	return report{}
}

func ms(s string) time.Duration {
	v, _ := strconv.ParseFloat(s, 64)
	return time.Duration(v * float64(time.Millisecond))
}

// logLines returns the function's JSON log lines (its own output; the
// emulator's lines are not JSON) since the start.
func (f *function) logLines() []string {
	var out []string
	for _, l := range strings.Split(f.out.String(), "\n") {
		if strings.HasPrefix(l, "{") {
			out = append(out, l)
		}
	}
	return out
}

func newID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	h := hex.EncodeToString(b)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// freeAddr returns a loopback address whose port was free a moment ago.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// logBuffer collects a process's output; safe for concurrent use.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
