package api_test

import (
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/api"
	"github.com/s3q/s3q/shared/store"
	"github.com/s3q/s3q/shared/store/memstore"
)

// jumpClock answers t0 to the first call (the submit) and t0+jump after,
// so a wait sees the task's deadline passed without sleeping.
func jumpClock(jump time.Duration) func() time.Time {
	var calls atomic.Int64
	return func() time.Time {
		if calls.Add(1) == 1 {
			return t0
		}
		return t0.Add(jump)
	}
}

func TestSyncWait(t *testing.T) {
	t.Run("wait_answers_200_with_the_task_once_a_worker_completes_it", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, gofakes3Store(t), api.Options{Now: time.Now})
		done := make(chan struct{})
		go func() {
			defer close(done)
			for stop := time.Now().Add(9 * time.Second); time.Now().Before(stop); {
				r := e.do("POST", "/queues/default/claim", `{"lease_for":"1m"}`)
				if r.status == http.StatusOK {
					id, tok := str(r.body, "tasks.0.task.id"), str(r.body, "tasks.0.lease.token")
					e.do("POST", "/queues/default/tasks/"+id+"/complete", `{"lease_token":"`+tok+`","output":{"n":42}}`)
					return
				}
				time.Sleep(20 * time.Millisecond)
			}
		}()
		r := e.do("POST", "/queues/default/tasks/wait", `{"task_type":"t","wait":"10s"}`)
		<-done
		if r.status != http.StatusOK || str(r.body, "task.status") != "completed" || get(r.body, "task.output.n") != float64(42) {
			t.Fatalf("want 200 completed with the output: %d %s", r.status, r.raw)
		}
	})
	t.Run("wait_answers_202_with_the_pending_task_when_the_wait_runs_out", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, memstore.New(), api.Options{Now: time.Now})
		start := time.Now()
		r := e.do("POST", "/queues/default/tasks/wait", `{"task_type":"t","ttl":"1h","wait":0.3}`)
		if r.status != http.StatusAccepted || str(r.body, "task.status") != "pending" {
			t.Fatalf("want 202 pending: %d %s", r.status, r.raw)
		}
		if took := time.Since(start); took < 300*time.Millisecond || took > 3*time.Second {
			t.Errorf("the wait took %s, want about 0.3s", took)
		}
	})
	t.Run("wait_answers_504_and_expires_a_pending_task_whose_deadline_passes", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, memstore.New(), api.Options{Now: jumpClock(2 * time.Hour)})
		r := e.do("POST", "/queues/default/tasks/wait", `{"task_type":"t","ttl":"1h","wait":"20s"}`)
		if r.status != http.StatusGatewayTimeout || str(r.body, "error.code") != "deadline_exceeded" {
			t.Fatalf("want 504 deadline_exceeded: %d %s", r.status, r.raw)
		}
		if str(r.body, "task.status") != "expired" || str(r.body, "task.expiry_reason") != "ttl" {
			t.Errorf("want the task expired (ttl) in the answer: %s", r.raw)
		}
		if g := e.do("GET", "/queues/default/tasks/"+str(r.body, "task.id"), ""); str(g.body, "task.status") != "expired" {
			t.Errorf("the stored task is not expired: %s", g.raw)
		}
	})
	t.Run("wait_answers_504_and_asks_a_running_task_to_cancel_when_its_deadline_passes", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, memstore.New(), api.Options{})
		id := e.submit(`{"task_type":"t","ttl":"1h","dedup_key":"job-1"}`)
		if r := e.do("POST", "/queues/default/claim", `{"lease_for":"3h"}`); r.status != http.StatusOK {
			t.Fatalf("claim: %d %s", r.status, r.raw)
		}
		e.clock.Advance(2 * time.Hour) // the deadline has passed; the task runs on under its lease
		// The same dedup key with a wait waits on the running task.
		r := e.do("POST", "/queues/default/tasks/wait", `{"task_type":"t","dedup_key":"job-1","wait":"20s"}`)
		if r.status != http.StatusGatewayTimeout || str(r.body, "error.code") != "deadline_exceeded" {
			t.Fatalf("want 504 deadline_exceeded: %d %s", r.status, r.raw)
		}
		if str(r.body, "task.id") != id || str(r.body, "task.status") != "running" || get(r.body, "task.cancel_requested") != true {
			t.Errorf("want the running task with cancel_requested: %s", r.raw)
		}
	})
	t.Run("wait_on_a_task_submitted_with_ttl_0_answers_504_at_once", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, memstore.New(), api.Options{})
		r := e.do("POST", "/queues/default/tasks/wait", `{"task_type":"t","ttl":"0s","wait":"20s"}`)
		if r.status != http.StatusGatewayTimeout || str(r.body, "task.status") != "expired" {
			t.Fatalf("want 504 with the expired task: %d %s", r.status, r.raw)
		}
	})
	t.Run("wait_answers_504_when_the_deadline_passes_during_the_wait", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, memstore.New(), api.Options{Now: time.Now})
		start := time.Now()
		r := e.do("POST", "/queues/default/tasks/wait", `{"task_type":"t","ttl":"300ms","wait":"10s"}`)
		if r.status != http.StatusGatewayTimeout || str(r.body, "task.status") != "expired" {
			t.Fatalf("want 504 with the expired task: %d %s", r.status, r.raw)
		}
		if took := time.Since(start); took > 3*time.Second {
			t.Errorf("the 504 came after %s; the deadline was 300ms away", took)
		}
	})
	t.Run("without_a_wait_a_task_submitted_with_ttl_0_is_201_expired", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, memstore.New(), api.Options{})
		r := e.do("POST", "/queues/default/tasks", `{"task_type":"t","ttl":0}`)
		if r.status != http.StatusCreated || str(r.body, "task.status") != "expired" {
			t.Fatalf("want 201 expired: %d %s", r.status, r.raw)
		}
	})
}

// heldWaits counts the wait holds of queue q that are taken (a body
// longer than the free "{}").
func heldWaits(t *testing.T, s store.Store, q string) int {
	t.Helper()
	n := 0
	for it, err := range store.All(t.Context(), s, "q/"+q+"/waits/") {
		if err != nil {
			t.Fatal(err)
		}
		if it.Size > 2 {
			n++
		}
	}
	return n
}

// submitTo submits a task to queue q and returns its id.
func submitTo(e *env, q string) string {
	e.t.Helper()
	r := e.do("POST", "/queues/"+q+"/tasks", `{"task_type":"t"}`)
	if r.status != http.StatusCreated {
		e.t.Fatalf("submit to %s: %d %s", q, r.status, r.raw)
	}
	return str(r.body, "task.id")
}

func TestAQueueFloodingItsWaitsLeavesAnotherQueuesWaitsUnaffected(t *testing.T) {
	e := newEnv(t, gofakes3Store(t), api.Options{Now: time.Now, WaitsPerQueue: 2})
	// Queue a's callers hold its two waits (long-polls of an empty queue).
	answers := make(chan response, 2)
	for range 2 {
		go func() { answers <- e.do("POST", "/queues/a/claim/wait", `{"wait":"20s"}`) }()
	}
	for heldWaits(t, e.store, "a") < 2 {
		time.Sleep(10 * time.Millisecond) // until both hold theirs
	}
	// More of queue a's waits are refused at once, holding nothing...
	for path, body := range map[string]string{"/queues/a/claim/wait": `{"wait":"20s"}`, "/queues/a/tasks/wait": `{"task_type":"t","wait":"20s"}`} {
		r := e.do("POST", path, body)
		if r.status != http.StatusTooManyRequests || str(r.body, "error.code") != "too_many_waits" || r.header.Get("Retry-After") == "" {
			t.Fatalf("%s past the bound: %d %s", path, r.status, r.raw)
		}
	}
	// ...while queue b's waits hold and answer as ever.
	bClaim := make(chan response, 1)
	go func() { bClaim <- e.do("POST", "/queues/b/claim/wait", `{"wait":"20s","lease_for":"1m"}`) }()
	for heldWaits(t, e.store, "b") < 1 {
		time.Sleep(10 * time.Millisecond)
	}
	id := submitTo(e, "b")
	if r := <-bClaim; r.status != http.StatusOK || str(r.body, "tasks.0.task.id") != id {
		t.Fatalf("queue b's long-poll: %d %s", r.status, r.raw)
	}
	// Queue a's held waits end (tasks arrive); its next wait holds again.
	submitTo(e, "a")
	submitTo(e, "a")
	for range 2 {
		if r := <-answers; r.status != http.StatusOK {
			t.Fatalf("queue a's long-poll: %d %s", r.status, r.raw)
		}
	}
	if n := heldWaits(t, e.store, "a"); n != 0 {
		t.Fatalf("%d of queue a's waits still held after they answered", n)
	}
	if r := e.do("POST", "/queues/a/tasks/wait", `{"task_type":"t","wait":0.2}`); r.status != http.StatusAccepted {
		t.Fatalf("queue a's wait after its waits ended: %d %s", r.status, r.raw)
	}
}
