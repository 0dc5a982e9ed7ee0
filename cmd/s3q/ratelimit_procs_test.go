package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
	"time"
)

// TestRateLimitHeldAcrossOSProcesses: three s3q dev servers (three API
// processes, each with its own remembered rate state) over one versitygw
// bucket, and one s3q worker process on each (s3q worker reaches S3
// through an API only), drain a queue limited to 5 a second with a burst
// of 2: no window of the tasks' started_at holds more than burst + 5·w.
func TestRateLimitHeldAcrossOSProcesses(t *testing.T) {
	srv := servers.VersityGW
	if srv == nil {
		t.Fatal("versitygw did not start (S3Q_VERSITYGW or make versitygw)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	bin := filepath.Join(dir, "s3q")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	start := func(args ...string) {
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = append(os.Environ(), "AWS_ACCESS_KEY_ID="+srv.AccessKey, "AWS_SECRET_ACCESS_KEY="+srv.SecretKey, "AWS_REGION="+srv.Region)
		var logs bytes.Buffer
		cmd.Stdout, cmd.Stderr = &logs, &logs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			if t.Failed() {
				t.Logf("%v:\n%s", args, logs.String())
			}
		})
	}
	prefix := "procs-" + rand.Text() + "/"
	var urls []string
	for range 3 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		start("dev", "--endpoint", srv.Endpoint, "--bucket", srv.Bucket, "--prefix", prefix, "--addr", addr, "--tick", "1h")
		urls = append(urls, "http://"+addr)
	}
	call := func(method, url, body string) (int, []byte) {
		req, _ := http.NewRequestWithContext(ctx, method, url, bytes.NewReader([]byte(body)))
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, nil
		}
		defer res.Body.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(res.Body)
		return res.StatusCode, b.Bytes()
	}
	for _, u := range urls {
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			if code, _ := call("GET", u+"/queues", ""); code == http.StatusOK {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s never answered", u)
			}
		}
	}
	const rate, burst, tasks = 5.0, 2, 24
	if code, body := call("PUT", urls[0]+"/queues/paced", fmt.Sprintf(`{"max_per_second":%g,"burst":%d}`, rate, burst)); code != http.StatusCreated {
		t.Fatalf("declare: %d %s", code, body)
	}
	for i := range tasks {
		if code, body := call("POST", urls[i%3]+"/queues/paced/tasks", fmt.Sprintf(`{"task_type":"x","input":%d}`, i)); code/100 != 2 {
			t.Fatalf("submit: %d %s", code, body)
		}
	}
	for _, u := range urls {
		start("worker", "--url", u, "--queue", "paced", "--type", "x", "--exec", "cat", "--concurrency", "4", "--wait", "2s")
	}
	var done []struct {
		StartedAt time.Time `json:"started_at"`
	}
	for deadline := time.Now().Add(25 * time.Second); ; time.Sleep(300 * time.Millisecond) {
		code, body := call("GET", urls[0]+"/queues/paced/tasks?status=completed&limit=100", "")
		var page struct {
			Tasks []struct {
				StartedAt time.Time `json:"started_at"`
			} `json:"tasks"`
		}
		if code == http.StatusOK && json.Unmarshal(body, &page) == nil && len(page.Tasks) == tasks {
			done = page.Tasks
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d tasks done after 25s: %d %s", len(page.Tasks), tasks, code, body)
		}
	}
	starts := make([]time.Time, len(done))
	for i, d := range done {
		starts[i] = d.StartedAt
	}
	sort.Slice(starts, func(i, j int) bool { return starts[i].Before(starts[j]) })
	for i := range starts {
		for j := i; j < len(starts); j++ {
			if n, allowed := float64(j-i+1), float64(burst)+starts[j].Sub(starts[i]).Seconds()*rate; n > allowed+1e-9 {
				t.Fatalf("%d starts from %s to %s: more than %.2f", j-i+1, starts[i].Format(time.StampMilli), starts[j].Format(time.StampMilli), allowed)
			}
		}
	}
	t.Logf("%d tasks started over %s by 3 workers through 3 API processes", tasks, starts[len(starts)-1].Sub(starts[0]))
}
