package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/queue"
)

// A cancel of a task that s3q worker --exec runs kills the command and
// every process it started, between heartbeats: the default lease is 5
// minutes (a heartbeat every 100s), and the worker reads the task every
// 2s (worker.Options.CancelPoll), so the cancel is acknowledged and the
// child gone long before the command would end.
func TestACancelKillsTheExecCommandsProcessGroupBetweenHeartbeats(t *testing.T) {
	url := apiURL(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	out, _, _ := cli(t, url, "submit", "-t", "long", "-o", "json")
	var res struct {
		Task queue.Task `json:"task"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("submit: %v\n%s", err, out)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wout, werr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"worker", "--url", url, "--type", "long", "--exec", "sleep 300 & echo $! > " + pidFile + "; wait"}, strings.NewReader(""), &wout, &werr)
	}()
	var pid int
	for deadline := time.Now().Add(time.Minute); pid == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the command never started")
		}
		if b, _ := os.ReadFile(pidFile); strings.TrimSpace(string(b)) != "" {
			pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
	}
	if _, errOut, code := cli(t, url, "cancel", res.Task.ID); code != 0 {
		t.Fatalf("cancel (%d): %s", code, errOut)
	}
	var got string
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		got, _, _ = cli(t, url, "status", res.Task.ID, "-o", "json")
		if strings.Contains(got, `"status": "cancelled"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not cancelled within a minute:\n%s\nworker log:\n%s", got, werr.String())
		}
	}
	for i := 0; alive(pid) && i < 100; i++ {
		time.Sleep(100 * time.Millisecond)
	}
	if alive(pid) {
		t.Errorf("the command's child %d still runs after the cancel", pid)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("worker exit %d: %s", code, werr.String())
	}
}
