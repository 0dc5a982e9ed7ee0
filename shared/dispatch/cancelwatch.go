package dispatch

import (
	"context"
	"sync"
	"time"

	"github.com/s3q/s3q/shared/queue"
)

// DefaultCancelPoll is how often a task is read for a cancel request
// while its delivery is in flight (Options.CancelPoll).
const DefaultCancelPoll = 2 * time.Second

// cancelledError is the error a delivery ended for a cancel request records
// (the task ends cancelled: queue.Fail of a task asked to cancel).
const cancelledError = "cancel requested while the delivery was in flight: the request was ended"

// watchCancel reads the task every Options.CancelPoll while its delivery
// is in flight and, when a read sees a cancel requested under this lease,
// ends the delivery (end: the delivery's context's cancel). For a URL
// target the request is aborted and its connection closed, so the
// target sees its request end (a Go handler's r.Context() is done); a
// Lambda target's invocation runs on, its answer unread. stop ends the
// watch and reports whether it ended the delivery. Its cost is one read
// of the task per poll and delivery in flight.
func (d *Dispatcher) watchCancel(ctx context.Context, t queue.Task, l queue.Lease, end context.CancelFunc) (stop func() bool) {
	if d.opts.CancelPoll < 0 {
		return func() bool { return false }
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	var seen bool
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-d.opts.After(d.opts.CancelPoll):
			}
			cur, err := d.q.Get(ctx, t.Ref())
			if err == nil && cur.Status == queue.StatusRunning && cur.CancelRequested &&
				cur.LeaseToken == l.Token {
				seen = true
				end()
				return
			}
		}
	}()
	return func() bool {
		close(done)
		wg.Wait()
		return seen
	}
}
