package queuetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/internal/check"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/store"
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

	t.Run("a_listing_is_newest_first_and_the_latest_completed_tasks_are_its_first_page", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		// 60 tasks completed, one every 37s, then 5 pending, newer.
		var done, all []string
		at := t0
		for i := 0; i < 60; i++ {
			at = t0.Add(time.Duration(i) * 37 * time.Second)
			task := e.submit(queue.SubmitRequest{TaskType: "a"}, at)
			c := e.claimOne(at)
			if _, err := e.q.Complete(ctx, queue.CompleteRequest{ID: task.Ref(), LeaseToken: c.Lease.Token}, at); err != nil {
				t.Fatal(err)
			}
			done = append([]string{task.ID}, done...)
		}
		all = done
		for i := 1; i <= 5; i++ {
			all = append([]string{e.submit(queue.SubmitRequest{TaskType: "a"}, at.Add(time.Duration(i)*time.Hour)).ID}, all...)
		}
		now := at.Add(6 * time.Hour)
		// On the store's pages, and on pages of 3 keys, where each of the
		// 16 record ranges is read back from now, window by window.
		for _, s := range []store.Store{e.s, smallPages{e.s, 3}} {
			q := e.open(s)
			res, err := q.List(ctx, queue.ListRequest{Queue: "default", Status: queue.StatusCompleted, Limit: 20, At: now})
			if err != nil || len(res.Tasks) != 20 || res.NextCursor == "" {
				t.Fatalf("latest completed: %d tasks, cursor %q, %v", len(res.Tasks), res.NextCursor, err)
			}
			for i, task := range res.Tasks {
				if task.ID != done[i] {
					t.Fatalf("latest completed: task %d is %s, want %s (newest first)", i, task.ID, done[i])
				}
			}
			var got []string
			for cursor := ""; ; {
				res, err := q.List(ctx, queue.ListRequest{Queue: "default", Limit: 7, Cursor: cursor, At: now})
				if err != nil {
					t.Fatal(err)
				}
				for _, task := range res.Tasks {
					got = append(got, task.ID)
				}
				if cursor = res.NextCursor; cursor == "" {
					break
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(all) {
				t.Fatalf("every task, in pages of 7: %d tasks\n got %v\nwant %v", len(got), got, all)
			}
		}
		// Its cost on the store's pages: a LIST of each record range, and a
		// GET of the 5 pending tasks and the 20 completed ones (a few more
		// read at once).
		c := store.NewCounting(e.s)
		res, err := e.open(c).List(ctx, queue.ListRequest{Queue: "default", Status: queue.StatusCompleted, Limit: 20, At: now})
		n := c.Counts()
		if err != nil || len(res.Tasks) != 20 || n.List != queue.RecordShards || n.Get < 25 || n.Get > 25+16 || n.Put+n.Delete != 0 {
			t.Fatalf("latest 20 completed cost %v (%d tasks, %v), want %d LISTs and 25 to 41 GETs", n, len(res.Tasks), err, queue.RecordShards)
		}
		t.Logf("the latest 20 completed tasks of a queue: %v", n)
	})

	t.Run("a_cursor_of_another_queue_is_refused_naming_cursor", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		for i := 0; i < 3; i++ {
			for _, name := range []string{"a", "b"} {
				task := e.submit(queue.SubmitRequest{Queue: name}, t0)
				if _, err := e.q.Cancel(ctx, task.Ref(), t0); err != nil {
					t.Fatal(err)
				}
				e.submit(queue.SubmitRequest{Queue: name}, t0)
			}
		}
		for _, st := range []queue.Status{"", queue.StatusPending, queue.StatusCancelled} {
			res, err := e.q.List(ctx, queue.ListRequest{Queue: "a", Status: st, Limit: 1})
			if err != nil || res.NextCursor == "" {
				t.Fatalf("queue a, status %q: %+v %v", st, res, err)
			}
			_, err = e.q.List(ctx, queue.ListRequest{Queue: "b", Status: st, Limit: 1, Cursor: res.NextCursor})
			check.Field(t, err, "cursor")
			if st != "" {
				_, err = e.q.Bulk(ctx, queue.OpPurge, queue.BulkRequest{Queue: "b", Status: st, Cursor: res.NextCursor}, t0)
				check.Field(t, err, "cursor")
			}
			if _, err := e.q.List(ctx, queue.ListRequest{Queue: "a", Status: st, Limit: 1, Cursor: res.NextCursor}); err != nil {
				t.Fatalf("queue a's own cursor: %v", err)
			}
		}
	})

	t.Run("history_returns_every_version_of_the_record_oldest_first", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		task := e.submit(queue.SubmitRequest{TTL: check.Dur("1h")}, t0)
		c := e.claimOne(t0.Add(time.Second))
		if _, err := e.q.Complete(ctx, queue.CompleteRequest{ID: task.Ref(), LeaseToken: c.Lease.Token, Output: []byte(`"ok"`)}, t0.Add(2*time.Second)); err != nil {
			t.Fatal(err)
		}
		h, err := allHistory(e.q, task.Ref())
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
		_, err = allHistory(e.q, queue.NewID(t0))
		check.Err(t, err, queue.ErrNotFound)
	})
}
