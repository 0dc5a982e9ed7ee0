package devserver_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/devserver"
	"github.com/s3q/s3q/shared/dispatch"
	"github.com/s3q/s3q/shared/worker"
)

// A task submitted to a push queue of s3q dev is delivered at once, and a
// delayed one at its time, with no worker running.
func TestDevServerPushesTasksToTheirTarget(t *testing.T) {
	var hits atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := worker.VerifySignature("sekrit", r.Header, body, time.Now(), time.Minute); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		hits.Add(1)
		fmt.Fprint(w, `{"pushed":true}`)
	}))
	defer target.Close()
	d := start(t, devserver.Options{
		TickInterval: time.Hour,
		PushQueues:   dispatch.Static{"orders": {Name: "orders", Target: dispatch.Target{URL: target.URL, Secret: "dev"}}},
		PushSecrets:  map[string]string{"dev": "sekrit"},
	})
	// A declared queue with a target is a push queue too.
	if code, m := call(t, "PUT", d.url+"/queues/declared", `{"target":{"url":"`+target.URL+`","secret":"dev"}}`); code/100 != 2 {
		t.Fatalf("declare: %d %v", code, m)
	}
	_, now := call(t, "POST", d.url+"/queues/orders/tasks", `{"task_type":"a"}`)
	_, later := call(t, "POST", d.url+"/queues/orders/tasks", `{"task_type":"a","delay":"1s"}`)
	_, declared := call(t, "POST", d.url+"/queues/declared/tasks", `{"task_type":"a"}`)
	for _, m := range []map[string]any{now, later, declared} {
		id, q := field(m, "task", "id"), field(m, "task", "queue")
		deadline := time.Now().Add(5 * time.Second)
		for {
			_, got := call(t, "GET", fmt.Sprintf("%s/queues/%v/tasks/%v", d.url, q, id), "")
			if field(got, "task", "status") == "completed" {
				if field(got, "task", "output", "pushed") != true {
					t.Errorf("output %v", field(got, "task", "output"))
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("task %v is %v after 5s", id, field(got, "task", "status"))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if hits.Load() != 3 {
		t.Errorf("%d deliveries", hits.Load())
	}
}
