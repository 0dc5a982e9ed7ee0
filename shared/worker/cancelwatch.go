package worker

import (
	"context"
	"time"

	"github.com/s3q/s3q/shared/queue"
)

// cancelWatcher reads a running task every Options.CancelPoll between its
// heartbeats, so that a cancel request reaches the handler within about
// that long, however long the lease (a heartbeat comes only every third
// of it). Its cost is one read of the task per poll, independent of the
// heartbeat interval.
type cancelWatcher struct {
	reader    TaskReader // nil: no watching, heartbeats only
	poll      time.Duration
	id        string
	requested bool // a read saw cancel_requested
}

func (w *Worker) cancelWatch(t *Task) *cancelWatcher {
	c := &cancelWatcher{poll: w.opts.CancelPoll, id: t.ID}
	if r, ok := w.api.(TaskReader); ok && c.poll > 0 {
		c.reader = r
	}
	return c
}

// until waits for the next heartbeat at, reading the task every poll
// meanwhile. It returns true when the heartbeat is due, false when stop
// closed or a read saw a cancel request (requested). A read that fails
// is skipped: the next one, or the heartbeat, tells.
func (c *cancelWatcher) until(ctx context.Context, at time.Time, stop <-chan struct{}) bool {
	for {
		wait := time.Until(at)
		reading := c.reader != nil && c.poll < wait
		if reading {
			wait = c.poll
		}
		timer := time.NewTimer(max(wait, 0))
		select {
		case <-stop:
			timer.Stop()
			return false
		case <-timer.C:
		}
		if !reading {
			return true
		}
		t, err := c.reader.Get(ctx, c.id)
		if err == nil && t.Status == queue.StatusRunning && t.CancelRequested {
			c.requested = true
			return false
		}
	}
}
