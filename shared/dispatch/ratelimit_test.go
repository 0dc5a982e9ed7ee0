package dispatch_test

import (
	"context"
	"log/slog"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/dispatch"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/store"
)

// Three dispatchers (three Lambda containers of one wake) deliver a push
// queue with max_per_second: together they start no more than the limit
// allows, each waiting out the limit's Retry-After, and deliver every
// task once. (Real time: a slow machine starts fewer, never more.)
func TestPushDeliveriesKeepTheQueuesRateLimitAcrossDispatchers(t *testing.T) {
	forEachStore(t, func(t *testing.T, st store.Store) {
		e := newEnv(st, dispatch.PushQueue{Name: "push"})
		tg := newTarget(t, e.clk, nil)
		e.pq = httpQueue(tg.srv.URL, 10*time.Second)
		const rate, burst, tasks = 20.0, 2, 12 // about half a second
		r, b := rate, burst
		if _, _, err := e.decls.Declare(context.Background(), queues.Declaration{
			Name: e.pq.Name, Target: &e.pq.Target, MaxPerSecond: &r, Burst: &b, Timeout: &e.pq.Timeout,
		}, e.clk.Now()); err != nil {
			t.Fatal(err)
		}
		e.declared = e.pq
		ids := make([]string, tasks)
		for i := range ids {
			ids[i] = e.submit(t, queue.SubmitRequest{}).ID
		}
		began := e.clk.Now()
		var wg sync.WaitGroup
		for range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				q, decls := queues.New(st, queues.Options{Core: queue.Options{ListCacheFor: -1}})
				d := dispatch.New(q, dispatch.NewDeclared(decls, 0), dispatch.Options{
					Now: e.clk.Now, Soon: -1, Logger: slog.New(slog.DiscardHandler),
					HTTP: dispatch.NewHTTP(dispatch.StaticSecrets{"s3q/secret": secret}, true),
				})
				if _, err := d.Run(context.Background(), "push", time.Time{}); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if got := len(tg.deliveries()); got != tasks {
			t.Fatalf("%d deliveries, want %d", got, tasks)
		}
		var starts []time.Time
		for _, id := range ids {
			task := e.get(t, id)
			if task.Status != queue.StatusCompleted || task.Attempt != 1 || task.StartedAt == nil {
				t.Fatalf("task %s: %s attempt %d", id, task.Status, task.Attempt)
			}
			starts = append(starts, *task.StartedAt)
		}
		sort.Slice(starts, func(i, j int) bool { return starts[i].Before(starts[j]) })
		for i := range starts {
			for j := i; j < len(starts); j++ {
				if n, allowed := float64(j-i+1), float64(burst)+starts[j].Sub(starts[i]).Seconds()*rate; n > allowed+1e-9 {
					t.Fatalf("%v starts from %s to %s: more than %.2f", n, starts[i], starts[j], allowed)
				}
			}
		}
		t.Logf("%d tasks delivered over %s of the dispatchers' clock (the limit needs %s at least)",
			tasks, starts[len(starts)-1].Sub(began).Round(time.Millisecond), time.Duration(float64(tasks-burst)/rate*float64(time.Second)))
	})
}
