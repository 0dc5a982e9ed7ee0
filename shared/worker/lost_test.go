package worker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/api"
	"github.com/s3q/s3q/shared/client"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/s3local/s3localtest"
	"github.com/s3q/s3q/shared/wire"
	"github.com/s3q/s3q/shared/worker"
)

// TestACompleteWhoseAnswerWasLostIsRetriedAndLandsOnce: the API applies
// the worker's first complete and its answer is lost (502); the client
// retries with the same token and gets 200, so the task is completed once
// and its handler ran once.
func TestACompleteWhoseAnswerWasLostIsRetriedAndLandsOnce(t *testing.T) {
	q, decls := queues.New(s3localtest.NewStore(t, servers.VersityGW), queues.Options{Core: queue.Options{ListCacheFor: -1}})
	h := api.New(q, decls, api.Options{Logger: slog.New(slog.DiscardHandler)})
	var lost, completes atomic.Int32
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/complete") {
			completes.Add(1)
			if lost.CompareAndSwap(0, 1) {
				h.ServeHTTP(httptest.NewRecorder(), r) // it lands
				http.Error(w, "bad gateway", http.StatusBadGateway)
				return
			}
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	c, err := client.New(bg, ts.URL, client.Options{RetryBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	id := submit(t, c, wire.SubmitRequest{TaskType: "echo", Input: []byte(`{"x":1}`)})
	var logs lockedBuffer
	opts := fastOpts()
	opts.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	w := worker.New(c, opts)
	var runs atomic.Int32
	w.Handle("echo", func(ctx context.Context, task *worker.Task) (json.RawMessage, error) {
		runs.Add(1)
		return task.Input, nil
	})
	runUntil(t, w, func() bool { return completes.Load() >= 2 && status(t, c, id)() })
	got, _ := c.Get(bg, id)
	if got.Status != queue.StatusCompleted || got.Attempt != 1 || runs.Load() != 1 || completes.Load() != 2 {
		t.Fatalf("task %s attempt %d, handler ran %d times, %d completes", got.Status, got.Attempt, runs.Load(), completes.Load())
	}
	if out := logs.String(); strings.Contains(out, "complete failed") || !strings.Contains(out, "task completed") {
		t.Fatalf("the worker did not see its complete succeed:\n%s", out)
	}
}

// lockedBuffer is a log sink shared by the worker's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
