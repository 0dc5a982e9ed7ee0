package queue_test

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/store"
	"github.com/s3q/s3q/shared/store/memstore"
)

// beforeWrite runs hook once, just before the first compare-and-swap
// whose body holds mark (default: a purge's tombstone): what another
// process does between a bulk operation's listing and its write.
type beforeWrite struct {
	store.Store
	mark string
	once sync.Once
	hook func()
}

func (s *beforeWrite) PutIfMatch(ctx context.Context, key string, body []byte, etag string, opts ...store.PutOption) (string, error) {
	if s.mark == "" {
		s.mark = `"purged_at"`
	}
	if bytes.Contains(body, []byte(s.mark)) {
		s.once.Do(s.hook)
	}
	return s.Store.PutIfMatch(ctx, key, body, etag, opts...)
}

// onePending submits one pending task to the default queue at t0 and
// returns the queue that submitted it (the "other process") and its id.
func onePending(t *testing.T, mem store.Store) (*queue.Queue, string) {
	t.Helper()
	other := queues.NewQueue(mem, queue.Options{ListCacheFor: -1}, queues.Options{})
	res, err := other.Submit(context.Background(), queue.SubmitRequest{TaskType: "t"}, t0Bulk)
	if err != nil {
		t.Fatal(err)
	}
	return other, res.Task.ID
}

var t0Bulk = time.Date(2026, 1, 28, 9, 0, 0, 0, time.UTC)

// A purge deletes only tasks that still match its filter when it writes:
// a pending task claimed and completed between the listing and the
// tombstone is skipped, its output kept, not purged as "not running".
func TestPurgeSkipsATaskThatLeftItsStatusMeanwhile(t *testing.T) {
	ctx, t0, mem := context.Background(), t0Bulk, memstore.New()
	other, id := onePending(t, mem)
	hooked := &beforeWrite{Store: mem, hook: func() {
		cs, err := other.Claim(ctx, queue.ClaimRequest{WorkerID: "w", LeaseFor: time.Minute}, t0.Add(time.Second))
		if err != nil || len(cs) != 1 {
			t.Errorf("claim meanwhile: %d, %v", len(cs), err)
			return
		}
		if _, err := other.Complete(ctx, id, cs[0].Lease.Token, []byte(`{"done":true}`), t0.Add(time.Second)); err != nil {
			t.Errorf("complete meanwhile: %v", err)
		}
	}}
	purger := queues.NewQueue(hooked, queue.Options{ListCacheFor: -1}, queues.Options{})
	out, err := purger.Purge(ctx, queue.BulkRequest{Queue: queue.DefaultQueue, Status: queue.StatusPending}, t0.Add(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if out.Changed != 0 || len(out.Skipped) != 1 || out.Skipped[0].ID != id {
		t.Errorf("purge of pending tasks: %+v, want the completed task skipped", out)
	}
	got, err := other.Get(ctx, id)
	if err != nil || got.Status != queue.StatusCompleted || string(got.Output) != `{"done":true}` {
		t.Fatalf("the task completed meanwhile: %+v, %v; want it completed with its output", got, err)
	}
}

// A bulk cancel of pending tasks cancels only tasks still pending when it
// writes: one claimed since the listing is running, and its worker is not
// asked to stop by an operation that chose pending tasks.
func TestBulkCancelOfPendingSkipsATaskClaimedMeanwhile(t *testing.T) {
	ctx, t0, mem := context.Background(), t0Bulk, memstore.New()
	other, id := onePending(t, mem)
	hooked := &beforeWrite{Store: mem, mark: `"status":"cancelled"`, hook: func() {
		if cs, err := other.Claim(ctx, queue.ClaimRequest{WorkerID: "w", LeaseFor: time.Hour}, t0.Add(time.Second)); err != nil || len(cs) != 1 {
			t.Errorf("claim meanwhile: %d, %v", len(cs), err)
		}
	}}
	out, err := queues.NewQueue(hooked, queue.Options{ListCacheFor: -1}, queues.Options{}).Bulk(ctx, queue.OpCancel,
		queue.BulkRequest{Queue: queue.DefaultQueue, Status: queue.StatusPending}, t0.Add(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if out.Changed != 0 || len(out.Skipped) != 1 || out.Skipped[0].ID != id {
		t.Errorf("bulk cancel of pending tasks: %+v, want the claimed task skipped", out)
	}
	got, err := other.Get(ctx, id)
	if err != nil || got.Status != queue.StatusRunning || got.CancelRequested {
		t.Fatalf("the task claimed meanwhile: %s cancel_requested=%v, %v; want it running, not asked to cancel", got.Status, got.CancelRequested, err)
	}
}
