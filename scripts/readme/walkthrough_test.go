package readme

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/api/openapitest"
	"github.com/s3q/s3q/shared/client"
	"github.com/s3q/s3q/shared/queue"
)

// The README's walk-through runs as written: its "sh runnable" blocks, in
// order, as one bash script with -e (any failed command fails the test),
// in a fresh copy of the repository, against a fresh s3q dev on a free port
// (S3Q_URL, as the README says), with a push target on another
// (PUSH_ADDR), every answer of s3q dev checked against the OpenAPI
// document on the way (openapitest.Proxy). Then the API must hold what the README promises: the first
// task completed, a schedule that fired, and a push delivery completed.
func TestReadmeWalkThroughRunsAsWritten(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Fatal("the walk-through needs bash: ", err)
	}
	var script strings.Builder
	script.WriteString("set -euo pipefail\nset -x\n")
	n := 0
	for _, b := range Blocks(readme(t)) {
		if b.Runnable() {
			fmt.Fprintf(&script, "# README.md:%d\n%s", b.Line, b.Text)
			n++
		}
	}
	if n < 5 {
		t.Fatalf("README.md has %d runnable blocks; the walk-through has at least 5", n)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	dir := copyRepo(t)
	tmp := t.TempDir()

	// The dev server, built from the copy (the README's own go build then
	// finds it in the build cache).
	dev := filepath.Join(tmp, "s3q-dev")
	build := exec.CommandContext(ctx, "go", "build", "-o", dev, "./cmd/s3q")
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/s3q: %v\n%s", err, out)
	}
	devAddr, pushAddr := freeAddr(t), freeAddr(t)
	url := "http://" + devAddr
	var devLog bytes.Buffer
	srv := exec.Command(dev, "dev", "--addr", devAddr)
	srv.Dir, srv.Stdout, srv.Stderr = tmp, &devLog, &devLog
	srv.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { killGroup(srv); _ = srv.Wait() })
	waitListening(t, devAddr, devLog.String)
	// Everything the walk-through is answered goes through a proxy that
	// validates it against the OpenAPI document.
	url = openapitest.Proxy(t, url)

	sh := exec.CommandContext(ctx, "bash", "-c", script.String())
	sh.Dir = dir
	sh.Env = append(cleanEnv(), "S3Q_URL="+url, "PUSH_ADDR="+pushAddr)
	sh.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // the background worker and target die with it
	sh.Cancel = func() error { killGroup(sh); return nil }
	var out bytes.Buffer
	sh.Stdout, sh.Stderr = &out, &out
	err := sh.Run()
	killGroup(sh)
	if err != nil {
		t.Fatalf("the walk-through failed (%v); its output:\n%s\ns3q dev's log (tail):\n%s", err, out.String(), tail(devLog.String(), 40))
	}

	c, err := client.New(ctx, url, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	first := firstTaskID(t, out.String())
	if task, err := c.In("emails").Get(ctx, first); err != nil || task.Status != queue.StatusCompleted || !strings.Contains(string(task.Output), "a@example.com") {
		t.Errorf("the first task %s: %+v, %v; want completed with its output", first, task.Status, err)
	}
	fires, err := c.In("emails").ScheduleHistory(ctx, "digest", client.ScheduleHistoryRequest{})
	if err != nil || len(fires.Fires) == 0 || fires.Fires[0].TaskID == "" {
		t.Errorf("schedule digest fired: %+v, %v; want a fire with its task", fires, err)
	}
	pushed, err := c.In("hooks").List(ctx, client.ListRequest{Queue: "hooks", Status: queue.StatusCompleted})
	if err != nil || len(pushed.Tasks) != 1 || !strings.Contains(string(pushed.Tasks[0].Output), "push-target") {
		t.Errorf("push queue hooks: %+v, %v; want one task completed by the push target", pushed.Tasks, err)
	}
	if t.Failed() {
		t.Logf("the walk-through's output:\n%s", out.String())
	}
}

// firstTaskID is the id the walk-through's first status command shows.
func firstTaskID(t *testing.T, out string) string {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if id, ok := strings.CutPrefix(sc.Text(), "+ ./s3q status -q emails "); ok {
			return strings.TrimSpace(id)
		}
	}
	t.Fatalf("no '+ ./s3q status -q emails ID' in the walk-through's output:\n%s", out)
	return ""
}

// copyRepo copies the repository's files (not .git, build outputs or
// node_modules) into a fresh temporary directory, as a clone would have
// them.
func copyRepo(t *testing.T) string {
	t.Helper()
	dst := t.TempDir()
	src, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	skip := map[string]bool{".git": true, ".bin": true, "dist": true, "cdk.out": true, "node_modules": true, ".s3q": true}
	err = filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() {
			if skip[d.Name()] && rel != "." {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if !d.Type().IsRegular() || rel == "s3q" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, info.Mode().Perm())
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// cleanEnv is the environment without s3q's variables, as a new user's
// shell has it.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "S3Q_") && !strings.HasPrefix(kv, "PUSH_ADDR=") {
			env = append(env, kv)
		}
	}
	return env
}

// freeAddr is a loopback address with a port nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// waitListening waits until addr accepts connections (a minute at most:
// the server is built already, this is its start).
func waitListening(t *testing.T, addr string, log func() string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("s3q dev does not listen on %s: %v\n%s", addr, err, log())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// killGroup kills the process group a command leads.
func killGroup(c *exec.Cmd) {
	if c.Process != nil {
		_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
