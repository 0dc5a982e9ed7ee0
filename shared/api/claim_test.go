package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/api"
	"github.com/s3q/s3q/shared/s3local/s3localtest"
	"github.com/s3q/s3q/shared/store"
	"github.com/s3q/s3q/shared/store/memstore"
)

// gofakes3Store returns a store on the gofakes3 server, for tests that
// need a real server but not both.
func gofakes3Store(t *testing.T) store.Store { return s3localtest.NewStore(t, servers.GoFakeS3) }

func TestClaimLongPoll(t *testing.T) {
	t.Run("a_long_poll_answers_a_task_submitted_while_it_waits", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, gofakes3Store(t), api.Options{Now: time.Now})
		go func() {
			time.Sleep(300 * time.Millisecond)
			e.submit(`{"task_type":"t"}`)
		}()
		start := time.Now()
		r := e.do("POST", "/queues/default/claim/wait", `{"wait":"25s","lease_for":"1m"}`)
		if r.status != http.StatusOK || str(r.body, "tasks.0.task.status") != "running" {
			t.Fatalf("want 200 with the task: %d %s", r.status, r.raw)
		}
		// Answered when the task came, not at the end of the wait: the
		// margin is wide enough for a loaded machine.
		if took := time.Since(start); took > 20*time.Second {
			t.Errorf("the claim took %s for a task submitted after 300ms (wait 25s)", took)
		}
	})
	t.Run("an_idle_long_poll_answers_204_after_the_wait_with_few_lists", func(t *testing.T) {
		t.Parallel()
		counting := store.NewCounting(memstore.New())
		e := newEnv(t, counting, api.Options{Now: time.Now})
		start := time.Now()
		r := e.do("POST", "/queues/default/claim/wait", `{"wait":"2s"}`)
		took := time.Since(start)
		if r.status != http.StatusNoContent || len(r.raw) != 0 {
			t.Fatalf("want 204 and no body: %d %s", r.status, r.raw)
		}
		if took < 2*time.Second || took > 30*time.Second {
			t.Errorf("the long-poll took %s, want 2s (a loaded machine may add to it)", took)
		}
		// Claims at 0, 0.5s and 1.5s (then 2s ends it), each listing the
		// queue's deadline/ and ready/ prefixes (no listing cache here).
		if n := counting.Counts().List; n > 8 {
			t.Errorf("an idle 2s long-poll made %d LISTs, want at most 8", n)
		}
	})
}
