package dispatch_test

import (
	"context"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/store"
)

// A paused push queue is delivered nothing; resumed, its task is
// delivered by the next run.
func TestAPausedPushQueueIsDeliveredNothingUntilResumed(t *testing.T) {
	forEachStore(t, func(t *testing.T, st store.Store) {
		e := newEnv(st, httpQueue("", 0))
		tg := newTarget(t, e.clk, nil)
		e.pq = httpQueue(tg.srv.URL, 10*time.Second)
		e.declare()
		if _, err := e.decls.Pause(context.Background(), e.pq.Name, e.clk.Now()); err != nil {
			t.Fatal(err)
		}
		task := e.submit(t, queue.SubmitRequest{})
		if rep := run(t, e.dispatcher(st, nil), ""); rep.Delivered != 0 || len(tg.deliveries()) != 0 {
			t.Fatalf("a paused queue: report %+v, deliveries %d; want none", rep, len(tg.deliveries()))
		}
		if got := e.get(t, task.ID); got.Status != queue.StatusPending {
			t.Fatalf("task of a paused queue is %s, want pending", got.Status)
		}
		if _, err := e.decls.Resume(context.Background(), e.pq.Name, e.clk.Now()); err != nil {
			t.Fatal(err)
		}
		if rep := run(t, e.dispatcher(st, nil), ""); rep.Delivered != 1 || rep.Completed != 1 {
			t.Fatalf("after the resume: report %+v, want the task delivered", rep)
		}
	})
}
