// Command coldstart measures the cold start of each Lambda function binary:
// it builds functions/<name> for this machine (same flags as
// scripts/build-functions, host architecture instead of arm64), runs the
// binary against a fake Lambda runtime API on loopback with an in-process
// gofakes3 bucket behind S3Q_ENDPOINT, and reports
//
//   - ready: process start to its first GET /runtime/invocation/next, i.e.
//     init done and ready for the first event;
//   - first event: that event handed over to its response posted (the first
//     S3 requests of the process included).
//
// Each figure is the median of -n runs. Timings are of this machine, not of
// Lambda's arm64 hosts; they compare functions and catch regressions.
//
//	go run ./scripts/coldstart [-n 5] [name...]
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/s3q/s3q/shared/s3local"
)

func main() {
	n := flag.Int("n", 5, "runs per function")
	flag.StringVar(&functionsDir, "dir", "functions", "folder of the function folders")
	flag.Parse()
	names := flag.Args()
	if len(names) == 0 {
		mains, _ := filepath.Glob(filepath.Join(functionsDir, "*", "main.go"))
		for _, m := range mains {
			names = append(names, filepath.Base(filepath.Dir(m)))
		}
	}
	if len(names) == 0 {
		fmt.Printf("coldstart: no %s/*/main.go yet\n", functionsDir)
		return
	}
	if err := run(names, *n); err != nil {
		fmt.Fprintln(os.Stderr, "coldstart:", err)
		os.Exit(1)
	}
}

// functionsDir is the folder holding one folder per function.
var functionsDir string

func run(names []string, n int) error {
	dir, err := os.MkdirTemp("", "s3q-coldstart-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	s3, err := s3local.StartGoFakeS3(s3local.GoFakeS3Options{})
	if err != nil {
		return err
	}
	defer s3.Close()

	fmt.Printf("# median of %d runs, %s binaries, gofakes3 on loopback\n", n, goarch())
	fmt.Printf("%-16s %10s %12s %12s   %s\n", "function", "size", "ready", "first event", "last answer")
	for _, name := range names {
		bin := filepath.Join(dir, name)
		build := exec.Command("go", "build", "-tags", "lambda.norpc", "-trimpath", "-ldflags", "-s -w -buildid=", "-o", bin, "./"+filepath.Join(functionsDir, name))
		build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-buildvcs=false")
		if out, err := build.CombinedOutput(); err != nil {
			return fmt.Errorf("build %s: %v\n%s", name, err, out)
		}
		info, _ := os.Stat(bin)
		var ready, first []time.Duration
		var result string
		for i := 0; i < n; i++ {
			r, f, res, err := once(bin, name, s3)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			ready = append(ready, r)
			first = append(first, f)
			result = res
		}
		fmt.Printf("%-16s %10d %12s %12s   %.200s\n", name, info.Size(), median(ready).Round(10*time.Microsecond), median(first).Round(10*time.Microsecond), result)
	}
	return nil
}

// once starts the binary and returns the time to ready and the time of the
// first event.
func once(bin, name string, s3 *s3local.Server) (ready, first time.Duration, result string, err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, 0, "", err
	}
	rt := &runtimeAPI{event: eventFor(name), readyCh: make(chan time.Time, 1), doneCh: make(chan time.Time, 1)}
	srv := &http.Server{Handler: rt, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin)
	cmd.Env = []string{
		"AWS_LAMBDA_RUNTIME_API=" + ln.Addr().String(),
		"_HANDLER=bootstrap",
		"AWS_LAMBDA_FUNCTION_NAME=s3q-coldstart-" + name,
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE=256",
		"AWS_LAMBDA_FUNCTION_VERSION=$LATEST",
		"AWS_REGION=" + s3.Region,
		"AWS_ACCESS_KEY_ID=" + s3.AccessKey,
		"AWS_SECRET_ACCESS_KEY=" + s3.SecretKey,
		"S3Q_BUCKET=" + s3.Bucket,
		"S3Q_ENDPOINT=" + s3.Endpoint,
		"S3Q_PREFIX=coldstart/",
		"S3Q_LOG_LEVEL=warn",
		"S3Q_AUTO_DECLARE=true", // the first submit declares queue default
		"S3Q_EVENT_BUS=s3q-coldstart-events",
		"AWS_ENDPOINT_URL_EVENTBRIDGE=http://127.0.0.1:1",
	}
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, 0, "", err
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	select {
	case t := <-rt.readyCh:
		ready = t.Sub(start)
	case <-ctx.Done():
		return 0, 0, "", errors.New("never asked for an event")
	}
	select {
	case t := <-rt.doneCh:
		first = t.Sub(start) - ready
	case <-ctx.Done():
		return 0, 0, "", errors.New("never answered the first event")
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.errBody != "" {
		return ready, first, "error: " + rt.errBody, nil
	}
	return ready, first, rt.result, nil
}

// runtimeAPI is the part of the Lambda runtime API a Go function uses.
type runtimeAPI struct {
	event   []byte
	readyCh chan time.Time
	doneCh  chan time.Time

	mu      sync.Mutex
	served  bool
	errBody string
	result  string
}

func (rt *runtimeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	switch {
	case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/runtime/invocation/next"):
		rt.mu.Lock()
		served := rt.served
		rt.served = true
		rt.mu.Unlock()
		if served { // the second event never comes
			<-r.Context().Done()
			return
		}
		rt.readyCh <- now
		w.Header().Set("Lambda-Runtime-Aws-Request-Id", "coldstart-1")
		w.Header().Set("Lambda-Runtime-Deadline-Ms", fmt.Sprint(time.Now().Add(30*time.Second).UnixMilli()))
		w.Header().Set("Lambda-Runtime-Invoked-Function-Arn", "arn:aws:lambda:us-east-1:000000000000:function:s3q-coldstart")
		w.Header().Set("Lambda-Runtime-Trace-Id", "Root=1-00000000-000000000000000000000000")
		w.Write(rt.event)
	case r.Method == http.MethodPost && strings.Contains(r.URL.Path, "/runtime/invocation/"):
		body, _ := io.ReadAll(r.Body)
		rt.mu.Lock()
		if strings.HasSuffix(r.URL.Path, "/error") {
			rt.errBody = string(body)
		} else {
			var resp struct {
				StatusCode int `json:"statusCode"`
			}
			if json.Unmarshal(body, &resp) == nil && resp.StatusCode >= 500 {
				rt.errBody = fmt.Sprintf("HTTP %d: %s", resp.StatusCode, body)
			}
			if resp.StatusCode != 0 {
				rt.result = fmt.Sprintf("HTTP %d", resp.StatusCode)
			} else {
				rt.result = "ok"
			}
		}
		rt.mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
		rt.doneCh <- now
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/runtime/init/error"):
		body, _ := io.ReadAll(r.Body)
		rt.mu.Lock()
		rt.errBody = "init error: " + string(body)
		rt.mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
		rt.readyCh <- now
		rt.doneCh <- now
	default:
		http.NotFound(w, r)
	}
}

// eventFor returns a first event typical of the function: a scheduled
// EventBridge event for the timers, a cheap API Gateway v2 request otherwise.
func eventFor(name string) []byte {
	switch name {
	case "sweep-expired", "schedule-tick":
		return mustJSON(map[string]interface{}{
			"version": "0", "id": "coldstart", "detail-type": "Scheduled Event", "source": "aws.events",
			"account": "000000000000", "time": time.Now().UTC().Format(time.RFC3339), "region": "us-east-1",
			"resources": []string{"arn:aws:events:us-east-1:000000000000:rule/s3q-coldstart"}, "detail": map[string]interface{}{},
		})
	}
	method, route, body := "GET", "/tasks", ""
	switch name {
	case "submit":
		method, route, body = "POST", "/queues/{queue}/tasks", `{"task_type":"coldstart","input":{},"ttl":"1h"}`
	case "claim":
		method, route, body = "POST", "/queues/{queue}/claim", `{"lease_for":"30s"}`
	case "schedules":
		method, route = "GET", "/queues/{queue}/schedules"
	}
	path := strings.ReplaceAll(route, "{queue}", "default")
	return mustJSON(map[string]interface{}{
		"version": "2.0", "routeKey": method + " " + route, "rawPath": path, "rawQueryString": "",
		"headers": map[string]string{"content-type": "application/json"},
		"requestContext": map[string]interface{}{
			"accountId": "000000000000", "apiId": "coldstart", "domainName": "localhost", "requestId": "coldstart-1",
			"routeKey": method + " " + path, "stage": "$default", "time": time.Now().UTC().Format("02/Jan/2006:15:04:05 -0700"),
			"timeEpoch": time.Now().UnixMilli(),
			"http":      map[string]string{"method": method, "path": path, "protocol": "HTTP/1.1", "sourceIp": "127.0.0.1", "userAgent": "coldstart"},
		},
		"body": body, "isBase64Encoded": false,
	})
}

func mustJSON(v interface{}) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func goarch() string {
	out, err := exec.Command("go", "env", "GOOS", "GOARCH").Output()
	if err != nil {
		return "host"
	}
	return strings.Join(strings.Fields(string(out)), "/")
}
