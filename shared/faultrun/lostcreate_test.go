package faultrun_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/s3local"
	"github.com/s3q/s3q/shared/s3local/faultproxy"
	"github.com/s3q/s3q/shared/store"
)

// getHook is a store that runs before once, ahead of the first Get of key
// after armed returns true: a request stalled between a lost answer and
// its re-read while another process acts.
type getHook struct {
	store.Store
	key    string
	armed  func() bool
	before func()
	once   sync.Once
}

func (h *getHook) Get(ctx context.Context, key string) (store.Object, error) {
	if key == h.key && h.armed() {
		h.once.Do(h.before)
	}
	return h.Store.Get(ctx, key)
}

// TestLostCreateClaimedBeforeItsReread is issue 16's 500 after a lost
// answer: through the fault proxy, the create of a TTL task lands and its
// answer is lost; before the submit reads the record back, a worker
// claims the task, so the record is no longer the bytes the submit wrote.
// The submit must still know the task for its own: 201 (not "replayed",
// not a 500), one task, running.
func TestLostCreateClaimedBeforeItsReread(t *testing.T) {
	type tc struct {
		name   string
		withID bool
	}
	cases := []tc{{"with_an_id", true}, {"without_an_id", false}}
	onEachServer(t, cases, func(c tc) string { return c.name }, func(t *testing.T, srv *s3local.Server, c tc) {
		ctx := t.Context()
		e := newLenv(t, srv)
		now := t0
		id := queue.NewID(now)
		req := queue.SubmitRequest{TaskType: "t", TTL: ptr(queue.Duration(time.Hour))}
		if c.withID {
			req.ID = id
		}
		shot, err := e.p.Inject(faultproxy.LostAnswer, fmt.Sprintf("PUT %s create", queue.TaskKey(queue.DefaultQueue, id)), 1)
		if err != nil {
			t.Fatal(err)
		}
		worker := queues.NewQueue(e.st, queues.Options{})
		var claimed []queue.Claimed
		hook := &getHook{Store: e.st, key: queue.TaskKey(queue.DefaultQueue, id), armed: shot.Fired, before: func() {
			var err error
			if claimed, err = worker.Claim(ctx, queue.ClaimRequest{}, now.Add(time.Second)); err != nil {
				t.Errorf("the worker's claim: %v", err)
			}
		}}
		opts := queue.Options{}
		if !c.withID {
			// The core makes the id: this one, so the shot can name its key.
			opts.NewID = func(time.Time) string { return id }
		}
		res, err := queues.NewQueue(hook, queues.Options{Core: opts}).Submit(ctx, req, now)
		if !shot.Fired() {
			t.Fatal("the create's answer was not lost")
		}
		if len(claimed) != 1 || claimed[0].Task.ID != id {
			t.Fatalf("the worker claimed %d tasks before the re-read, want the new one", len(claimed))
		}
		if err != nil || res.Replayed || res.Task.ID != id {
			t.Fatalf("submit: replayed=%v id=%s err=%v; want the created task", res.Replayed, res.Task.ID, err)
		}
		n := 0
		for it, err := range store.All(ctx, e.st, "") {
			if err != nil {
				t.Fatal(err)
			}
			var rec queue.Task
			if obj, gerr := e.st.Get(ctx, it.Key); gerr == nil && jsonTask(obj.Body, &rec) {
				n++
				if rec.Status != queue.StatusRunning {
					t.Errorf("task %s is %s, want running", rec.ID, rec.Status)
				}
			}
		}
		if n != 1 {
			t.Fatalf("%d task records, want 1", n)
		}
	})
}

// jsonTask decodes a task record; false for any other object.
func jsonTask(b []byte, t *queue.Task) bool {
	return json.Unmarshal(b, t) == nil && t.ID != "" && t.TaskType != ""
}
