package dispatch_test

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/dispatch"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/store"
)

// slowList answers the first LIST of one prefix after it is armed with
// the store as it was when the LIST came, but only once released: the
// answer of a LIST sent before a write and received after it.
type slowList struct {
	store.Store
	prefix  string
	armed   atomic.Bool
	started chan struct{} // closed when the held LIST has been served
	release chan struct{} // closed by the test to let its answer through
}

func (s *slowList) List(ctx context.Context, prefix, startAfter string, limit int) (store.Page, error) {
	page, err := s.Store.List(ctx, prefix, startAfter, limit)
	if prefix == s.prefix && s.armed.CompareAndSwap(true, false) {
		close(s.started)
		<-s.release
	}
	return page, err
}

// A task submitted while a run of its queue is listing the queue's index
// (the LIST sent before the task's write, its answer received after) is
// seen by the run's next look, when submits and dispatch share one Queue
// as in s3q dev: the run stays with the queue and delivers the task at
// its time. The wake of that submit only pokes the run in progress (and
// runs it once more), so a run that went on trusting the old listing left
// the task to the minute rule.
func TestATaskSubmittedWhileARunListsItsQueueIsDeliveredAtItsTime(t *testing.T) {
	forEachStore(t, func(t *testing.T, st store.Store) {
		e := newEnv(st, dispatch.PushQueue{Name: "racing"})
		tg := newTarget(t, e.clk, nil)
		e.pq = httpQueue(tg.srv.URL, 10*time.Second)
		e.pq.Name = "racing"
		slow := &slowList{Store: st, prefix: queue.QueuePrefix("racing") + "index/",
			started: make(chan struct{}), release: make(chan struct{})}
		// One Queue for submits and dispatch; its listings serve for a
		// minute, so that only this Queue's own writes can be seen sooner.
		e.q, e.decls = queues.New(slow, queues.Options{Core: queue.Options{ListCacheFor: time.Minute}, AllowInsecureTargets: true})
		d := dispatch.New(e.q, dispatch.NewDeclared(e.decls, 0), dispatch.Options{
			Now: e.clk.Now, Logger: slog.New(slog.DiscardHandler),
			HTTP:   dispatch.NewHTTP(dispatch.StaticSecrets{"s3q/secret": secret}, true),
			MaxNap: 100 * time.Millisecond,
		})
		now := e.submit(t, queue.SubmitRequest{})
		slow.armed.Store(true)
		type result struct {
			rep dispatch.Report
			err error
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan result, 1)
		go func() {
			rep, err := d.Run(ctx, "racing", time.Time{})
			done <- result{rep, err}
		}()
		<-slow.started // the run's claim has listed the queue: the task due now only
		due := e.clk.Now().Add(time.Second)
		later := e.submit(t, queue.SubmitRequest{ScheduleAt: &due})
		close(slow.release)
		// The run delivers the task due now, then stays for the later one
		// (or, missing it, returns).
		waitFor(t, func() bool { return runnerHeld(st, "racing", e.clk.Now()) || len(done) > 0 })
		e.clk.Advance(time.Second)
		// Both delivered, the run ends (it would stay a while for the
		// completed task's marker, which its listing keeps).
		waitFor(t, func() bool { return len(tg.deliveries()) == 2 || len(done) > 0 })
		cancel()
		r := <-done
		if r.err != nil {
			t.Fatal(r.err)
		}
		if r.rep.Completed != 2 || r.rep.Stayed != 1 {
			t.Errorf("report %+v: want the run to stay for the task submitted during its listing and deliver both", r.rep)
		}
		for _, id := range []string{now.ID, later.ID} {
			if got := e.get(t, id); got.Status != queue.StatusCompleted {
				t.Errorf("task %s: %s", id, got.Status)
			}
		}
	})
}
