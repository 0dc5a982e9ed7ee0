package worker_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/client"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/wire"
	"github.com/s3q/s3q/shared/worker"
)

// heldReader holds the worker's first cancel read until the handler has
// returned, and has the operator's cancel land meanwhile.
type heldReader struct {
	*client.Client
	once     sync.Once
	started  chan struct{}
	returned chan struct{}
}

func (h *heldReader) Get(ctx context.Context, id string) (client.Task, error) {
	first := false
	h.once.Do(func() { first = true })
	if first {
		close(h.started)
		<-h.returned
		if _, err := h.Client.Cancel(ctx, id); err != nil {
			return client.Task{}, err
		}
	}
	return h.Client.Get(ctx, id)
}

// A cancel first seen by a read in flight when the handler returned does
// not drop the handler's output: the task completes with it (a complete of
// a task asked to cancel completes it), as the handler never saw a cancel.
func TestACancelSeenAfterTheHandlerReturnedKeepsItsOutput(t *testing.T) {
	c, _ := setup(t)
	id := submit(t, c, wire.SubmitRequest{TaskType: "job"})
	api := &heldReader{Client: c, started: make(chan struct{}), returned: make(chan struct{})}
	opts := fastOpts()
	opts.LeaseFor = time.Hour
	opts.CancelPoll = 20 * time.Millisecond
	w := worker.New(api, opts)
	var sawCancel bool
	w.Handle("job", func(ctx context.Context, _ *worker.Task) (json.RawMessage, error) {
		<-api.started
		sawCancel = ctx.Err() != nil
		close(api.returned)
		return json.RawMessage(`{"done":true}`), nil
	})
	runUntil(t, w, status(t, c, id))
	got, _ := c.Get(bg, id)
	if sawCancel || got.Status != queue.StatusCompleted || string(got.Output) != `{"done":true}` {
		t.Fatalf("handler saw a cancel %v; task %s output %s", sawCancel, got.Status, got.Output)
	}
}
