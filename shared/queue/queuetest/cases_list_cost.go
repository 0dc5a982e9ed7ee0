package queuetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/internal/check"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/store"
)

// runListCost: listings read an index or a bounded number of records per
// call, and history comes in pages.
func runListCost(t *testing.T, f Factory) {
	// rare sets up a backlog larger than one scan and a task in each rare
	// status: it returns the failed, cancelled and expired tasks and the
	// one completed task, submitted last.
	rare := func(e *env) (failed, cancelled, expired, done queue.Task) {
		keys := make([]string, 0, queue.MaxExamined+50)
		for i := 0; i < queue.MaxExamined+50; i++ {
			keys = append(keys, e.submit(queue.SubmitRequest{TaskType: "bulk", Queue: "bulk"}, t0).ID)
		}
		failed = e.submit(queue.SubmitRequest{TaskType: "a", MaxAttempts: 1}, t0)
		c := e.claimOne(t0)
		no := false
		if _, err := e.q.Fail(ctx, queue.FailRequest{ID: failed.Ref(), LeaseToken: c.Lease.Token, Error: "boom", Retryable: &no}, t0); err != nil {
			e.t.Fatal(err)
		}
		cancelled = e.submit(queue.SubmitRequest{TaskType: "a", Queue: "other"}, t0)
		if _, err := e.q.Cancel(ctx, cancelled.Ref(), t0); err != nil {
			e.t.Fatal(err)
		}
		expired = e.submit(queue.SubmitRequest{TaskType: "a", TTL: check.Dur("0s")}, t0)
		t1 := t0.Add(time.Second) // an id after every other
		done = e.submit(queue.SubmitRequest{TaskType: "a"}, t1)
		c = e.claimOne(t1)
		if _, err := e.q.Complete(ctx, queue.CompleteRequest{ID: done.Ref(), LeaseToken: c.Lease.Token}, t1); err != nil {
			e.t.Fatal(err)
		}
		return failed, cancelled, expired, done
	}

	t.Run("listing_failed_expired_or_cancelled_tasks_costs_one_list_and_a_get_per_task", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		failed, cancelled, expired, _ := rare(e)
		for _, c := range []struct {
			req  queue.ListRequest
			want string
		}{
			{queue.ListRequest{Status: queue.StatusFailed, Queue: "default", Limit: 1}, failed.ID},
			{queue.ListRequest{Status: queue.StatusCancelled, Queue: "other", Limit: 1}, cancelled.ID},
			{queue.ListRequest{Status: queue.StatusCancelled, Queue: "other", Limit: 1}, cancelled.ID},
			{queue.ListRequest{Status: queue.StatusExpired, Queue: "default", Limit: 5}, expired.ID},
		} {
			q, n := e.counted()
			res, err := q.List(ctx, c.req)
			if err != nil || len(res.Tasks) != 1 || res.Tasks[0].ID != c.want || res.NextCursor != "" {
				t.Fatalf("%+v: %+v %v", c.req, res, err)
			}
			if got := n.Counts(); got != (store.Counts{List: 1, Get: 1}) {
				t.Fatalf("%+v cost %v, want one LIST and one GET", c.req, got)
			}
		}
		// A retry leaves the index (once the sweep has sent its event).
		e.sweep(t0.Add(time.Minute), nil)
		if _, err := e.q.Retry(ctx, failed.Ref(), t0.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		if res, err := e.q.List(ctx, queue.ListRequest{Status: queue.StatusFailed}); err != nil || len(res.Tasks) != 0 {
			t.Fatalf("failed after the retry: %+v %v", res, err)
		}
		wantKeys(t, "status markers", e.inQueues("/status/"),
			"q/other/status/cancelled/"+cancelled.ID, "q/default/status/expired/"+expired.ID)
	})

	t.Run("the_status_index_pages_across_queues_with_a_cursor", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		var want []string
		for _, name := range []string{"b", "a", "c"} {
			task := e.submit(queue.SubmitRequest{Queue: name}, t0)
			if _, err := e.q.Cancel(ctx, task.Ref(), t0); err != nil {
				t.Fatal(err)
			}
			want = append(want, task.ID)
		}
		want = []string{want[1], want[0], want[2]} // queue a, b, c
		got := e.listIDs(queue.ListRequest{Status: queue.StatusCancelled, Limit: 2})
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("listed %v, want %v", got, want)
		}
		_, err := e.q.List(ctx, queue.ListRequest{Status: queue.StatusCancelled, Cursor: want[0]})
		check.Field(t, err, "cursor") // across queues a cursor is queue/id
		// The cursor says where the walk is: the next queue, or a place in one.
		res, err := e.q.List(ctx, queue.ListRequest{Status: queue.StatusCancelled, Limit: 1})
		if err != nil || len(res.Tasks) != 1 || res.Tasks[0].Queue != "a" || res.NextCursor != "b/" {
			t.Fatalf("first page: %+v %v", res, err)
		}
		// A view of one queue lists only it, with cursors of its own.
		if got := e.listIDs(queue.ListRequest{Status: queue.StatusCancelled, Queue: "c", Limit: 1}); fmt.Sprint(got) != fmt.Sprint(want[2:]) {
			t.Fatalf("queue c: %v", got)
		}
	})

	t.Run("a_scan_examines_at_most_a_set_number_of_records_and_returns_a_cursor", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		_, _, _, done := rare(e)
		q, n := e.counted()
		res, err := q.List(ctx, queue.ListRequest{Status: queue.StatusCompleted, Queue: "bulk", Limit: 1})
		if err != nil || len(res.Tasks) != 0 || res.NextCursor == "" {
			t.Fatalf("first page: %+v %v", res, err)
		}
		if got := n.Counts(); got != (store.Counts{List: queue.RecordShards, Get: queue.MaxExamined}) {
			t.Fatalf("first page cost %v, want a LIST of each record range and %d GETs", got, queue.MaxExamined)
		}
		if res, err = q.List(ctx, queue.ListRequest{Status: queue.StatusCompleted, Queue: "bulk", Limit: 1, Cursor: res.NextCursor}); err != nil || len(res.Tasks) != 0 {
			t.Fatalf("bulk's second page: %+v %v", res, err)
		}
		res, err = q.List(ctx, queue.ListRequest{Status: queue.StatusCompleted, Queue: "default", Limit: 1})
		if err != nil || len(res.Tasks) != 1 || res.Tasks[0].ID != done.ID {
			t.Fatalf("second page: %+v %v", res, err)
		}
		// A match found early stops the reading.
		q, n = e.counted()
		if res, err := q.List(ctx, queue.ListRequest{Queue: "default", TaskType: "a", Limit: 1}); err != nil || len(res.Tasks) != 1 {
			t.Fatalf("pending: %+v %v", res, err)
		}
		// Records list newest first, by id, and ids made within one
		// millisecond are in no set order, so the first pending one may
		// come after a few others; the reading still stops well before
		// MaxExamined.
		if got := n.Counts(); got.List != queue.RecordShards || got.Get < 1 || got.Get >= queue.MaxExamined || got.Total() != got.List+got.Get {
			t.Fatalf("pending limit=1 cost %v", got)
		}
		// Pending in one queue reads its claim indexes: one LIST of their
		// folder (index/: deadline/ then ready/), and a GET per task.
		q, n = e.counted()
		if res, err := q.List(ctx, queue.ListRequest{Status: queue.StatusPending, Queue: "bulk", Limit: 1}); err != nil || len(res.Tasks) != 1 || res.NextCursor == "" {
			t.Fatalf("pending in bulk: %+v %v", res, err)
		}
		if got := n.Counts(); got != (store.Counts{List: 1, Get: 1}) {
			t.Fatalf("pending in bulk, limit=1, cost %v", got)
		}
	})

	t.Run("pending_tasks_of_a_queue_list_in_claim_order_without_the_running_ones", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		a := e.submit(queue.SubmitRequest{Queue: "p"}, t0)
		b := e.submit(queue.SubmitRequest{Queue: "p"}, t0.Add(time.Second))
		d := e.submit(queue.SubmitRequest{Queue: "p", TTL: check.Dur("1h")}, t0.Add(2*time.Second))
		c := e.claim(queue.ClaimRequest{Queue: "p"}, t0.Add(3*time.Second))[0] // the deadline first
		if c.Task.ID != d.ID {
			t.Fatalf("claimed %s, want the task with a deadline", c.Task.ID)
		}
		e.submit(queue.SubmitRequest{Queue: "q"}, t0)
		got := e.listIDs(queue.ListRequest{Status: queue.StatusPending, Queue: "p", Limit: 1})
		if fmt.Sprint(got) != fmt.Sprint([]string{a.ID, b.ID}) {
			t.Fatalf("listed %v, want %v", got, []string{a.ID, b.ID})
		}
		_, err := e.q.List(ctx, queue.ListRequest{Status: queue.StatusPending, Queue: "p", Cursor: "q/q/index/ready/0/" + keyTime(t0) + "_" + a.ID})
		check.Field(t, err, "cursor") // another queue's marker
	})

	t.Run("stale_status_markers_are_skipped_and_deleted_once_past_the_grace", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		live := e.submit(queue.SubmitRequest{}, t0)
		ghost := queue.NewID(t0)
		e.put("q/default/status/failed/" + ghost)
		e.put("q/default/status/failed/" + live.ID) // as a lost race leaves it
		wall := time.Now().UTC()                    // the store stamps keys with its own clock
		res, err := e.q.List(ctx, queue.ListRequest{Status: queue.StatusFailed, Now: wall})
		if err != nil || len(res.Tasks) != 0 || len(e.inQueues("/status/")) != 2 {
			t.Fatalf("young: %+v %v, keys %v", res, err, e.inQueues("/status/"))
		}
		res, err = e.q.List(ctx, queue.ListRequest{Status: queue.StatusFailed, Now: wall.Add(10 * time.Minute)})
		if err != nil || len(res.Tasks) != 0 {
			t.Fatalf("old: %+v %v", res, err)
		}
		wantKeys(t, "status markers", e.inQueues("/status/"))
		wantStatus(t, e.get(live.Ref()), queue.StatusPending)
	})

	t.Run("history_comes_in_pages_of_limit_versions_each_costing_one_list_and_a_get_per_version", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		task := e.submit(queue.SubmitRequest{}, t0)
		c := e.claimOne(t0)
		for i := 1; i <= 5; i++ {
			if _, err := e.q.Heartbeat(ctx, queue.HeartbeatRequest{ID: task.Ref(), LeaseToken: c.Lease.Token, LeaseFor: time.Minute}, t0.Add(time.Duration(i)*time.Second)); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := e.q.Complete(ctx, queue.CompleteRequest{ID: task.Ref(), LeaseToken: c.Lease.Token}, t0.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		all, err := allHistory(e.q, task.Ref())
		if err != nil || len(all) != 8 {
			t.Fatalf("history: %d versions, %v", len(all), err)
		}
		var got []string
		req := queue.HistoryRequest{ID: task.Ref(), Limit: 3}
		for pages := 1; ; pages++ {
			q, n := e.counted()
			res, err := q.History(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			// One LIST of versions and a GET per version, whatever is
			// stored; a continued page also checks its cursor (one GET).
			cursorGet := int64(0)
			if req.Cursor != "" {
				cursorGet = 1
			}
			if want := min(3, 8-len(got)); len(res.Versions) != want || n.Counts() != (store.Counts{List: 1, Get: int64(want) + cursorGet}) {
				t.Fatalf("page %d: %d versions for %v", pages, len(res.Versions), n.Counts())
			}
			for _, v := range res.Versions {
				got = append(got, v.VersionID)
			}
			if req.Cursor = res.NextCursor; req.Cursor == "" {
				break
			}
		}
		for i := range all { // pages are newest first, History oldest first
			if got[len(got)-1-i] != all[i].VersionID {
				t.Fatalf("paged %v, want %v reversed", got, all)
			}
		}
		if all[0].Task.Status != queue.StatusPending || all[7].Task.Status != queue.StatusCompleted {
			t.Fatalf("not oldest first: %s .. %s", all[0].Task.Status, all[7].Task.Status)
		}
		_, err = e.q.History(ctx, queue.HistoryRequest{ID: task.Ref(), Cursor: "no-such-version"})
		check.Field(t, err, "cursor")
		_, err = e.q.History(ctx, queue.HistoryRequest{ID: task.Ref(), Limit: 1001})
		check.Field(t, err, "limit")
	})
}
