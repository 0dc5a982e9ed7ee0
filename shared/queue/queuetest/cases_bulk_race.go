package queuetest

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/store"
)

// runBulkRace: a bulk operation (purge, bulk cancel) lists the tasks that
// match its filter, then writes each by compare-and-swap. Another process
// may change a task in between; the write must then re-check the filter
// against what is stored and skip the task, never act on the listing's
// stale view. The other process runs on the test's clock, just before the
// bulk operation's first write, on every store.
func runBulkRace(t *testing.T, f Factory) {
	// onePending is a fresh store holding one pending task submitted at
	// t0 by e.q (the other process), and the bulk operation's Queue over
	// the same store, which runs hook just before its first
	// compare-and-swap whose body holds mark.
	onePending := func(t *testing.T, mark string, hook func(e *env, id string)) (e *env, bulk *queue.Queue, id string) {
		e = newEnv(t, f, func(o *queue.Options) { o.ListCacheFor = -1 })
		id = e.submit(queue.SubmitRequest{TaskType: "t"}, t0).ID
		hooked := &beforeCAS{Store: e.s, mark: []byte(mark), hook: func() { hook(e, id) }}
		return e, e.open(hooked), id
	}

	t.Run("a_purge_skips_a_task_completed_between_its_listing_and_its_write", func(t *testing.T) {
		t.Parallel()
		e, purger, id := onePending(t, `"purged_at"`, func(e *env, id string) {
			c := e.claimOne(t0.Add(time.Second))
			if _, err := e.q.Complete(ctx, queue.CompleteRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token, Output: []byte(`{"done":true}`)}, t0.Add(time.Second)); err != nil {
				t.Errorf("complete meanwhile: %v", err)
			}
		})
		out, err := purger.Purge(ctx, queue.BulkRequest{Queue: queue.DefaultQueue, Status: queue.StatusPending}, t0.Add(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if out.Changed != 0 || len(out.Skipped) != 1 || out.Skipped[0].ID != id {
			t.Errorf("purge of pending tasks: %+v, want the completed task skipped", out)
		}
		got := e.get(id)
		if got.Status != queue.StatusCompleted || string(got.Output) != `{"done":true}` {
			t.Fatalf("the task completed meanwhile: %s %s; want it completed with its output", got.Status, got.Output)
		}
	})

	t.Run("a_bulk_cancel_of_pending_tasks_skips_a_task_claimed_between_its_listing_and_its_write", func(t *testing.T) {
		t.Parallel()
		e, canceller, id := onePending(t, `"status":"cancelled"`, func(e *env, id string) {
			e.claimOne(t0.Add(time.Second))
		})
		out, err := canceller.Bulk(ctx, queue.OpCancel, queue.BulkRequest{Queue: queue.DefaultQueue, Status: queue.StatusPending}, t0.Add(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if out.Changed != 0 || len(out.Skipped) != 1 || out.Skipped[0].ID != id {
			t.Errorf("bulk cancel of pending tasks: %+v, want the claimed task skipped", out)
		}
		// Running, and its worker not asked to stop by an operation that
		// chose pending tasks.
		if got := e.get(id); got.Status != queue.StatusRunning || got.CancelRequested {
			t.Fatalf("the task claimed meanwhile: %s cancel_requested=%v; want it running, not asked to cancel", got.Status, got.CancelRequested)
		}
	})
}

// beforeCAS runs hook once, just before the first compare-and-swap whose
// body holds mark: what another process does between a bulk operation's
// listing and its write.
type beforeCAS struct {
	store.Store
	mark []byte
	once sync.Once
	hook func()
}

func (s *beforeCAS) PutIfMatch(c context.Context, key string, body []byte, etag string, opts ...store.PutOption) (string, error) {
	if bytes.Contains(body, s.mark) {
		s.once.Do(s.hook)
	}
	return s.Store.PutIfMatch(c, key, body, etag, opts...)
}
