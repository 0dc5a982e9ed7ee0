package queuetest

import (
	"testing"
	"time"

	"github.com/s3q/s3q/shared/internal/check"
	"github.com/s3q/s3q/shared/queue"
)

func runList(t *testing.T, f Factory) {
	t.Run("list_filters_by_status_queue_and_type_and_pages_with_a_cursor", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		var ids []string
		for i := 0; i < 5; i++ {
			ids = append(ids, e.submit(queue.SubmitRequest{TaskType: "a"}, t0.Add(time.Duration(i)*time.Millisecond)).ID)
		}
		e.submit(queue.SubmitRequest{TaskType: "b", Queue: "other"}, t0)
		e.submit(queue.SubmitRequest{TaskType: "a", TTL: check.Dur("0s")}, t0)

		got := e.listIDs(queue.ListRequest{Status: queue.StatusPending, Queue: "default", TaskType: "a", Limit: 2})
		if len(got) != len(ids) {
			t.Fatalf("listed %v, want %v", got, ids)
		}
		for i := range ids {
			if got[i] != ids[i] {
				t.Fatalf("listed %v, want oldest first %v", got, ids)
			}
		}
		res, err := e.q.List(ctx, queue.ListRequest{Status: queue.StatusExpired})
		if err != nil || len(res.Tasks) != 1 {
			t.Fatalf("expired listing: %d tasks, %v", len(res.Tasks), err)
		}
		_, err = e.q.List(ctx, queue.ListRequest{Status: "nope"})
		check.Field(t, err, "status")
		_, err = e.q.List(ctx, queue.ListRequest{Cursor: "../x"})
		check.Field(t, err, "cursor")
	})

	t.Run("history_returns_every_version_of_the_record_oldest_first", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		task := e.submit(queue.SubmitRequest{TTL: check.Dur("1h")}, t0)
		c := e.claimOne(t0.Add(time.Second))
		if _, err := e.q.Complete(ctx, queue.CompleteRequest{ID: task.Ref(), LeaseToken: c.Lease.Token, Output: []byte(`"ok"`)}, t0.Add(2*time.Second)); err != nil {
			t.Fatal(err)
		}
		h, err := e.q.History(ctx, task.Ref())
		if err != nil {
			t.Fatal(err)
		}
		want := []queue.Status{queue.StatusPending, queue.StatusRunning, queue.StatusCompleted}
		if len(h) != len(want) {
			t.Fatalf("history has %d versions, want %d", len(h), len(want))
		}
		for i, st := range want {
			if h[i].Task.Status != st || h[i].VersionID == "" {
				t.Fatalf("version %d: status %s id %q, want %s", i, h[i].Task.Status, h[i].VersionID, st)
			}
			wantTime(t, "expires_at in history", h[i].Task.ExpiresAt, t0.Add(time.Hour))
		}
		_, err = e.q.History(ctx, queue.NewID(t0))
		check.Err(t, err, queue.ErrNotFound)
	})
}
