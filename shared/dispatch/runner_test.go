package dispatch_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/dispatch"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/store"
)

// stayingDispatcher is a dispatcher (a new process) that stays with a
// queue whose next task is due within soon.
func (e *env) stayingDispatcher(st store.Store, soon time.Duration, w dispatch.Waker) *dispatch.Dispatcher {
	e.declare()
	q, decls := queues.New(st, queues.Options{Core: queue.Options{ListCacheFor: 50 * time.Millisecond}})
	return dispatch.New(q, dispatch.NewDeclared(decls, 0), dispatch.Options{
		Now: e.clk.Now, Logger: slog.New(slog.DiscardHandler),
		HTTP: dispatch.NewHTTP(dispatch.StaticSecrets{"s3q/secret": secret}, true),
		Soon: soon, MaxNap: 100 * time.Millisecond, Waker: w,
	})
}

// A run that finds the queue's next task due soon stays with the queue,
// holding its runner lease, and delivers the task at its time; a run
// woken meanwhile delivers what is due now but leaves the waiting to the
// holder and returns at once. So however many wakes come, one run per
// queue waits for future tasks.
func TestOneRunPerQueueWaitsForItsFutureTasks(t *testing.T) {
	forEachStore(t, func(t *testing.T, st store.Store) {
		e := newEnv(st, dispatch.PushQueue{Name: "soon"})
		tg := newTarget(t, e.clk, nil)
		e.pq = httpQueue(tg.srv.URL, 10*time.Second)
		e.pq.Name = "soon"
		due := e.clk.Now().Add(10 * time.Second)
		later := e.submit(t, queue.SubmitRequest{ScheduleAt: &due})
		var (
			wg    sync.WaitGroup
			first dispatch.Report
		)
		wg.Add(1)
		go func() {
			defer wg.Done()
			first = run(t, e.stayingDispatcher(st, 30*time.Second, nil), "soon")
		}()
		// The first run takes the lease: wait until it holds it.
		waitFor(t, func() bool { return runnerHeld(st, "soon", e.clk.Now()) })
		now := e.submit(t, queue.SubmitRequest{})
		second := run(t, e.stayingDispatcher(st, 30*time.Second, nil), "soon")
		if second.Stayed != 0 || second.Completed != 1 {
			t.Errorf("the woken run: %+v; want it to deliver the task due now and leave", second)
		}
		e.clk.Advance(10 * time.Second) // the later task falls due
		wg.Wait()
		if first.Stayed != 1 || first.Completed != 1 {
			t.Errorf("the staying run: %+v, want it to stay and deliver the later task", first)
		}
		for _, id := range []string{now.ID, later.ID} {
			if got := e.get(t, id); got.Status != queue.StatusCompleted {
				t.Errorf("task %s: %s", id, got.Status)
			}
		}
		if got := e.get(t, later.ID); got.StartedAt == nil || got.StartedAt.Before(due) {
			t.Errorf("the later task started at %v, before its time %s", got.StartedAt, due)
		}
		if runnerHeld(st, "soon", e.clk.Now()) {
			t.Errorf("the runner lease is still held after the run")
		}
	})
}

// A run whose time ends while the queue's next task is due soon frees the
// runner lease and hands the queue on with a wake; a run that died holding
// the lease leaves it to lapse, and the next run takes it over.
func TestARunHandsTheQueueOnAndALapsedRunnerLeaseIsTakenOver(t *testing.T) {
	forEachStore(t, func(t *testing.T, st store.Store) {
		e := newEnv(st, dispatch.PushQueue{Name: "handoff"})
		tg := newTarget(t, e.clk, nil)
		e.pq = httpQueue(tg.srv.URL, time.Second)
		e.pq.Name = "handoff"
		due := e.clk.Now().Add(30 * time.Second)
		task := e.submit(t, queue.SubmitRequest{ScheduleAt: &due})
		rec := &recorder{}
		d := e.stayingDispatcher(st, time.Minute, rec)
		var (
			rep dispatch.Report
			err error
			wg  sync.WaitGroup
		)
		wg.Add(1)
		go func() {
			defer wg.Done()
			rep, err = d.Run(context.Background(), "handoff", e.clk.Now().Add(5*time.Second))
		}()
		waitFor(t, func() bool { return runnerHeld(st, "handoff", e.clk.Now()) })
		e.clk.Advance(5 * time.Second) // the run's time ends
		wg.Wait()
		if err != nil {
			t.Fatal(err)
		}
		if rep.Stayed != 1 || rep.HandedOn != 1 || len(rec.got) != 1 || rec.got[0].Queue != "handoff" {
			t.Fatalf("report %+v, wakes %+v: want the queue handed on", rep, rec.got)
		}
		// A run that dies holding the lease: the next run finds it held
		// and leaves; once it lapses, a run takes it over and delivers.
		if _, err := st.Put(context.Background(), queue.DispatchRunnerKey("handoff"),
			[]byte(`{"holder":"dead","until":"`+e.clk.Now().Add(dispatch.DefaultRunnerLease).Format(time.RFC3339Nano)+`"}`)); err != nil {
			t.Fatal(err)
		}
		if rep := run(t, e.stayingDispatcher(st, time.Minute, nil), "handoff"); rep.Stayed != 0 || rep.Completed != 0 {
			t.Fatalf("under a live lease: %+v", rep)
		}
		e.clk.Advance(30 * time.Second) // the lease lapsed; the task is due
		if rep := run(t, e.stayingDispatcher(st, time.Minute, nil), "handoff"); rep.Completed != 1 {
			t.Fatalf("after the lease lapsed: %+v", rep)
		}
		if got := e.get(t, task.ID); got.Status != queue.StatusCompleted {
			t.Fatalf("task %s", got.Status)
		}
	})
}

// runnerHeld reports whether the queue's runner lease is held at now.
func runnerHeld(st store.Store, name string, now time.Time) bool {
	obj, err := st.Get(context.Background(), queue.DispatchRunnerKey(name))
	if err != nil {
		return false
	}
	var s struct{ Until time.Time }
	return json.Unmarshal(obj.Body, &s) == nil && s.Until.After(now)
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 30s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A run does not stay with a paused queue, whatever is due: it would wait
// for nothing (the claims of a paused queue start no task).
func TestARunDoesNotStayWithAPausedQueue(t *testing.T) {
	forEachStore(t, func(t *testing.T, st store.Store) {
		e := newEnv(st, dispatch.PushQueue{Name: "paused"})
		tg := newTarget(t, e.clk, nil)
		e.pq = httpQueue(tg.srv.URL, 10*time.Second)
		e.pq.Name = "paused"
		e.submit(t, queue.SubmitRequest{})
		if _, err := e.decls.Pause(context.Background(), "paused", e.clk.Now()); err != nil {
			t.Fatal(err)
		}
		rep := run(t, e.stayingDispatcher(st, time.Minute, nil), "paused")
		if rep.Stayed != 0 || rep.Delivered != 0 || runnerHeld(st, "paused", e.clk.Now()) {
			t.Fatalf("a paused queue: %+v", rep)
		}
	})
}
