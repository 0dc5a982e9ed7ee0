package dispatch_test

import (
	"bytes"
	"context"
	"net/http"
	"sync"
	"testing"

	"github.com/s3q/s3q/shared/dispatch"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/store"
)

// The W3C trace context a task was submitted in travels to its push
// target as the traceparent and tracestate headers of the delivery.
func TestAPushDeliveryCarriesTheTasksTraceContext(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	forEachStore(t, func(t *testing.T, st store.Store) {
		var mu sync.Mutex
		var got []http.Header
		e, _ := newHTTPEnv(t, st, func(_ dispatch.Payload, w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			got = append(got, r.Header.Clone())
			mu.Unlock()
			w.WriteHeader(http.StatusOK)
		})
		e.submit(t, queue.SubmitRequest{Traceparent: tp, Tracestate: "vendor=abc"})
		e.submit(t, queue.SubmitRequest{})
		if rep := run(t, e.dispatcher(st, nil), ""); rep.Completed != 2 {
			t.Fatalf("report %+v", rep)
		}
		mu.Lock()
		defer mu.Unlock()
		with := 0
		for _, h := range got {
			switch h.Get("traceparent") {
			case tp:
				with++
				if h.Get("tracestate") != "vendor=abc" {
					t.Fatalf("tracestate %q", h.Get("tracestate"))
				}
			case "":
				if h.Get("tracestate") != "" {
					t.Fatal("a task without a trace context was delivered with a tracestate")
				}
			default:
				t.Fatalf("traceparent %q, want %q", h.Get("traceparent"), tp)
			}
		}
		if with != 1 {
			t.Fatalf("%d deliveries carried the trace context, want 1", with)
		}
	})
}

// A record kept before submits checked a later version's fields may hold
// a traceparent no header may carry (a CR/LF): the delivery goes without
// the trace context rather than failing on it.
func TestAPushDeliveryLeavesOutATraceContextNoHeaderMayCarry(t *testing.T) {
	forEachStore(t, func(t *testing.T, st store.Store) {
		var mu sync.Mutex
		var got []http.Header
		e, _ := newHTTPEnv(t, st, func(_ dispatch.Payload, w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			got = append(got, r.Header.Clone())
			mu.Unlock()
			w.WriteHeader(http.StatusOK)
		})
		task := e.submit(t, queue.SubmitRequest{Traceparent: "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-ok"})
		key := queue.TaskKey(task.Queue, task.ID)
		obj, err := st.Get(context.Background(), key)
		if err != nil {
			t.Fatal(err)
		}
		body := bytes.Replace(obj.Body, []byte(`-01-ok"`), []byte(`-01-\r\nX-Injected: yes"`), 1)
		if _, err := st.PutIfMatch(context.Background(), key, body, obj.ETag); err != nil {
			t.Fatal(err)
		}
		if rep := run(t, e.dispatcher(st, nil), ""); rep.Completed != 1 {
			t.Fatalf("report %+v, want the task delivered and completed", rep)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(got) != 1 || got[0].Get("traceparent") != "" || got[0].Get("X-Injected") != "" {
			t.Fatalf("deliveries %v, want one without a trace context", got)
		}
	})
}
