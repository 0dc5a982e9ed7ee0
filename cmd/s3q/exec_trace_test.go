package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/queue"
)

// s3q worker --exec hands the command the trace context of the task it
// runs in TRACEPARENT and TRACESTATE, and none to a task without one.
func TestExecHandsTheCommandTheTasksTraceContext(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	url := apiURL(t)
	submit := func(args ...string) string {
		out, errOut, code := cli(t, url, append([]string{"submit", "-t", "traced", "-o", "id"}, args...)...)
		if code != 0 {
			t.Fatalf("submit (%d): %s", code, errOut)
		}
		return strings.TrimSpace(out)
	}
	traced := submit("--traceparent", tp, "--tracestate", "vendor=abc")
	plain := submit()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wout, werr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"worker", "--url", url, "--type", "traced", "--exec", `printf '{"tp":"%s","ts":"%s","set":"%s"}' "$TRACEPARENT" "$TRACESTATE" "${TRACEPARENT+yes}"`}, strings.NewReader(""), &wout, &werr)
	}()
	output := func(id string) map[string]string {
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
			got, _, _ := cli(t, url, "status", id, "-o", "json")
			var res struct{ Task queue.Task }
			if err := json.Unmarshal([]byte(got), &res); err == nil && res.Task.Status == queue.StatusCompleted {
				var m map[string]string
				if err := json.Unmarshal(res.Task.Output, &m); err != nil {
					t.Fatalf("output %s: %v", res.Task.Output, err)
				}
				return m
			}
			if time.Now().After(deadline) {
				t.Fatalf("task %s not completed within a minute:\n%s\nworker log:\n%s", id, got, werr.String())
			}
		}
	}
	if got := output(traced); got["tp"] != tp || got["ts"] != "vendor=abc" {
		t.Fatalf("the traced task's command saw %v", got)
	}
	if got := output(plain); got["set"] != "" {
		t.Fatalf("the plain task's command saw %v, want no TRACEPARENT", got)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("worker exit %d: %s", code, werr.String())
	}
}
