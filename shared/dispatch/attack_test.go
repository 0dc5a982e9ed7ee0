package dispatch_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/s3q/s3q/shared/dispatch"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/store/memstore"
)

// A synchronous Invoke whose connection breaks after the function was
// invoked (or whose answer is a 5xx) must not be sent again by the SDK's
// retryer: that would run the same attempt twice.
func TestALambdaInvokeThatBreaksAfterReachingTheFunctionIsNotSentAgain(t *testing.T) {
	for _, name := range []string{"reset", "502"} {
		t.Run(name, func(t *testing.T) {
			var mu sync.Mutex
			calls := 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				calls++
				mu.Unlock()
				if name == "502" {
					w.WriteHeader(http.StatusBadGateway)
					return
				}
				conn, _, err := w.(http.Hijacker).Hijack()
				if err == nil {
					_ = conn.Close()
				}
			}))
			defer srv.Close()
			e := newEnv(memstore.New(), dispatch.PushQueue{Name: "fn", Target: dispatch.Target{Lambda: "target"}})
			task := e.submit(t, queue.SubmitRequest{MaxAttempts: 5})
			run(t, e.dispatcher(e.st, &dispatch.Lambda{Client: lambdaClient(srv.URL)}), "")
			mu.Lock()
			n := calls
			mu.Unlock()
			if n != 1 {
				t.Fatalf("attempt 1 was invoked %d times", n)
			}
			if got := e.get(t, task.ID); got.Status != queue.StatusPending || got.Attempt != 1 {
				t.Fatalf("task %s attempt %d", got.Status, got.Attempt)
			}
		})
	}
}

var _ = context.Background
