package dispatch_test

import (
	"context"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/dispatch"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/store"
	"github.com/s3q/s3q/shared/store/memstore"
)

// A cancel requested while a delivery is in flight ends the request: the
// target sees its request's context done (the dispatcher closed the
// connection), and the task ends cancelled, not completed nor retried.
func TestACancelWhileADeliveryIsInFlightEndsTheRequestAndCancelsTheTask(t *testing.T) {
	forEachStore(t, func(t *testing.T, st store.Store) {
		started := make(chan string, 1)
		ended := make(chan struct{})
		e, _ := newHTTPEnv(t, st, func(p dispatch.Payload, w http.ResponseWriter, r *http.Request) {
			started <- p.Task.ID
			select {
			case <-r.Context().Done():
				close(ended) // what a target sees of a cancel
			case <-time.After(time.Minute): // never, unless the cancel is lost
				w.Write([]byte(`{}`))
			}
		})
		e.pq.Timeout = queue.Duration(2 * time.Minute)
		task := e.submit(t, queue.SubmitRequest{})
		e.declare()
		q, decls := queues.New(st, queues.Options{Core: queue.Options{ListCacheFor: -1}})
		d := dispatch.New(q, dispatch.NewDeclared(decls, 0), dispatch.Options{
			Now: e.clk.Now, Soon: -1, Logger: slog.New(slog.DiscardHandler),
			HTTP:       dispatch.NewHTTP(dispatch.StaticSecrets{"s3q/secret": secret}, true),
			CancelPoll: 20 * time.Millisecond,
		})
		reps := make(chan dispatch.Report, 1)
		go func() {
			rep, err := d.Run(context.Background(), "", time.Time{})
			if err != nil {
				t.Error(err)
			}
			reps <- rep
		}()
		if id := <-started; id != task.ID {
			t.Fatalf("delivered %s, want %s", id, task.ID)
		}
		if got, err := e.q.In(e.pq.Name).Cancel(context.Background(), task.ID, e.clk.Now()); err != nil || !got.CancelRequested {
			t.Fatalf("cancel: %+v %v", got, err)
		}
		rep := <-reps
		select {
		case <-ended: // the server notices the closed connection a moment after the client
		case <-time.After(30 * time.Second):
			t.Fatal("the target's request was not ended by the cancel")
		}
		if rep.Cancelled != 1 || rep.Completed != 0 || rep.Retried != 0 {
			t.Errorf("report %+v", rep)
		}
		if got := e.get(t, task.ID); got.Status != queue.StatusCancelled {
			t.Errorf("task %s, want cancelled", got.Status)
		}
	})
}

// With CancelPoll negative, a cancel waits for the target's answer,
// which stands.
func TestWithoutCancelPollsADeliveryRunsToItsAnswer(t *testing.T) {
	st := memstore.New()
	started := make(chan struct{}, 1)
	release := make(chan struct{})
	e, _ := newHTTPEnv(t, st, func(p dispatch.Payload, w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		<-release
		w.Write([]byte(`{"ok":true}`))
	})
	task := e.submit(t, queue.SubmitRequest{})
	e.declare()
	q, decls := queues.New(st, queues.Options{Core: queue.Options{ListCacheFor: -1}})
	d := dispatch.New(q, dispatch.NewDeclared(decls, 0), dispatch.Options{
		Now: e.clk.Now, Soon: -1, Logger: slog.New(slog.DiscardHandler),
		HTTP:       dispatch.NewHTTP(dispatch.StaticSecrets{"s3q/secret": secret}, true),
		CancelPoll: -1,
	})
	reps := make(chan dispatch.Report, 1)
	go func() {
		rep, _ := d.Run(context.Background(), "", time.Time{})
		reps <- rep
	}()
	<-started
	if _, err := e.q.In(e.pq.Name).Cancel(context.Background(), task.ID, e.clk.Now()); err != nil {
		t.Fatal(err)
	}
	close(release)
	if rep := <-reps; rep.Cancelled != 0 || rep.Completed != 1 {
		t.Errorf("report %+v", rep)
	}
	if got := e.get(t, task.ID); got.Status != queue.StatusCompleted {
		t.Errorf("task %s, want completed (the answer stands)", got.Status)
	}
}
