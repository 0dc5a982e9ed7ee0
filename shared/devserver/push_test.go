package devserver_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/deploy"
	"github.com/s3q/s3q/shared/devserver"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/worker"
)

// A task submitted to a push queue of s3q dev is delivered at once, and a
// delayed one at its time, with no worker running. The timers fire hourly
// here, so only the wakes of the submits deliver them; the later submits
// come while the first one's run is going (its listing of the queue may
// be in flight: see TestATaskSubmittedWhileARunListsItsQueueIsDeliveredAtItsTime
// in package dispatch).
func TestDevServerPushesTasksToTheirTarget(t *testing.T) {
	var hits atomic.Int32
	var targetURL string
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		q := r.Header.Get("S3q-Queue") // this target serves both queues
		if _, err := worker.VerifySignature(worker.PushTarget{Secret: "sekrit", URL: targetURL, Queue: q}, r, body, time.Now()); err != nil || (q != "orders" && q != "declared") {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		hits.Add(1)
		fmt.Fprint(w, `{"pushed":true}`)
	}))
	defer target.Close()
	targetURL = target.URL
	d := start(t, devserver.Options{
		TickInterval: time.Hour,
		PushQueues:   []queues.Declaration{{Name: "orders", Target: &queues.Target{URL: target.URL, Secret: "dev"}}},
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
		// Delivered within milliseconds of its time; a minute is for a
		// loaded machine. A missed wake waits for the timers: an hour.
		deadline := time.Now().Add(time.Minute)
		for {
			_, got := call(t, "GET", fmt.Sprintf("%s/queues/%v/tasks/%v", d.url, q, id), "")
			if field(got, "task", "status") == "completed" {
				if field(got, "task", "output", "pushed") != true {
					t.Errorf("output %v", field(got, "task", "output"))
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("task %v is %v after a minute: no wake delivered it", id, field(got, "task", "status"))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if hits.Load() != 3 {
		t.Errorf("%d deliveries", hits.Load())
	}
}

// In s3q dev a URL target's secret is checked when the queue is declared:
// a secret s3q dev does not have is a 400 naming target.secret, not a
// queue whose every delivery fails. With push bindings (S3Q_PUSH_BINDINGS)
// a target not bound to the queue is a 400 naming target.
func TestDevServerRefusesAnUnknownSecretAndAnUnboundTarget(t *testing.T) {
	d := start(t, devserver.Options{
		TickInterval: time.Hour,
		PushSecrets:  map[string]string{"dev": "sekrit", "other": "x"},
		PushBindings: deploy.Bindings{"bound": {Secrets: []string{"dev"}}},
	})
	for _, c := range []struct{ queue, body, field string }{
		{"bound", `{"target":{"url":"http://127.0.0.1:1/","secret":"missing"}}`, "target"},
		{"bound", `{"target":{"url":"http://127.0.0.1:1/","secret":"other"}}`, "target"},
		{"bound", `{"target":{"lambda":"some-fn"}}`, "target"},
		{"unbound", `{"target":{"url":"http://127.0.0.1:1/","secret":"dev"}}`, "target"},
	} {
		code, m := call(t, "PUT", d.url+"/queues/"+c.queue, c.body)
		if code != 400 || field(m, "error", "field") != c.field {
			t.Errorf("%s %s: %d %v, want 400 naming %s", c.queue, c.body, code, m, c.field)
		}
	}
	if code, m := call(t, "PUT", d.url+"/queues/bound", `{"target":{"url":"http://127.0.0.1:1/","secret":"dev"}}`); code/100 != 2 {
		t.Fatalf("a bound target: %d %v", code, m)
	}
	// Without bindings every target goes, but the secret must exist.
	open := start(t, devserver.Options{TickInterval: time.Hour, PushSecrets: map[string]string{"dev": "sekrit"}})
	code, m := call(t, "PUT", open.url+"/queues/any", `{"target":{"url":"http://127.0.0.1:1/","secret":"nope"}}`)
	if code != 400 || field(m, "error", "field") != "target.secret" {
		t.Errorf("an unknown secret: %d %v, want 400 naming target.secret", code, m)
	}
}
