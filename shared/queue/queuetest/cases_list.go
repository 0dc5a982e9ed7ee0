package queuetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/internal/check"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/store"
	"github.com/s3q/s3q/shared/store/storefault"
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

// listIDs lists every page of req, following its cursors, and returns the
// ids in the order listed. A listing still going after 20 pages fails.
func (e *env) listIDs(req queue.ListRequest) []string {
	e.t.Helper()
	var ids []string
	for pages := 1; ; pages++ {
		if pages > 20 {
			e.t.Fatalf("still listing after 20 pages: %v", ids)
		}
		res, err := e.q.List(ctx, req)
		if err != nil {
			e.t.Fatalf("list: %v", err)
		}
		for _, task := range res.Tasks {
			ids = append(ids, task.ID)
		}
		if req.Cursor = res.NextCursor; req.Cursor == "" {
			return ids
		}
	}
}

// The status entry of a task in a rare status (side_status.go).
func runSideStatus(t *testing.T, f Factory) {
	entry := func(s queue.Status, id string) string { return "q/default/status/" + string(s) + "/" + id }

	t.Run("a_status_entry_exists_exactly_while_its_task_is_failed_expired_or_cancelled", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		a := e.submit(queue.SubmitRequest{MaxAttempts: 1}, t0)
		wantKeys(t, "status entries of a pending task", e.inQueues("/status/"))
		if _, err := e.q.Cancel(ctx, a.Ref(), t0); err != nil {
			t.Fatal(err)
		}
		wantKeys(t, "status entries after the cancel", e.inQueues("/status/"), entry(queue.StatusCancelled, a.ID))
		if _, err := e.q.Retry(ctx, a.Ref(), t0.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		wantKeys(t, "status entries after the retry", e.inQueues("/status/"))
		c := e.claimOne(t0.Add(time.Second))
		wantKeys(t, "status entries while it runs", e.inQueues("/status/"))
		if _, err := e.q.Fail(ctx, queue.FailRequest{ID: a.Ref(), LeaseToken: c.Lease.Token, Error: "x"}, t0.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		wantKeys(t, "status entries after the dead letter", e.inQueues("/status/"), entry(queue.StatusFailed, a.ID))
		b := e.submit(queue.SubmitRequest{}, t0)
		if _, err := e.q.Expire(ctx, b.Ref(), t0); err != nil {
			t.Fatal(err)
		}
		wantKeys(t, "status entries after an expire", e.inQueues("/status/"), entry(queue.StatusFailed, a.ID), entry(queue.StatusExpired, b.ID))
	})

	t.Run("a_cancel_whose_record_write_fails_leaves_the_task_pending_and_a_stale_status_entry_that_a_listing_deletes", func(t *testing.T) {
		t.Parallel()
		e, fs := newLossEnv(t, f)
		a := e.submit(queue.SubmitRequest{}, t0)
		recordWriteFails(t, e, fs, "default", a.Ref(), func() error {
			_, err := e.q.Cancel(ctx, a.Ref(), t0)
			return err
		})
		wantStatus(t, e.get(a.Ref()), queue.StatusPending)
		wantKeys(t, "status entries", e.inQueues("/status/"), entry(queue.StatusCancelled, a.ID))
		wall := time.Now().UTC() // the store stamps keys with its own clock
		if got := e.listIDs(queue.ListRequest{Status: queue.StatusCancelled, Now: wall.Add(10 * time.Minute)}); len(got) != 0 {
			t.Fatalf("listed %v as cancelled", got)
		}
		wantKeys(t, "status entries after the listing", e.inQueues("/status/"))
		if _, err := e.q.Cancel(ctx, a.Ref(), t0.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		if got := e.listIDs(queue.ListRequest{Status: queue.StatusCancelled}); len(got) != 1 || got[0] != a.ID {
			t.Fatalf("listed %v as cancelled, want %s", got, a.ID)
		}
	})

	t.Run("a_cancel_whose_status_entry_answer_was_lost_writes_one_entry_and_lists_the_task_once", func(t *testing.T) {
		t.Parallel()
		e, fs := newLossEnv(t, f)
		a := e.submit(queue.SubmitRequest{}, t0)
		lose(fs, storefault.OpPut, "q/default/status/")
		if _, err := e.q.Cancel(ctx, a.Ref(), t0); err != nil {
			t.Fatal(err)
		}
		wantHits(t, fs, 1)
		wantKeys(t, "status entries", e.inQueues("/status/"), entry(queue.StatusCancelled, a.ID))
		if got := e.listIDs(queue.ListRequest{Status: queue.StatusCancelled}); len(got) != 1 || got[0] != a.ID {
			t.Fatalf("listed %v as cancelled, want %s", got, a.ID)
		}
		e.consistent()
	})

	t.Run("a_cancel_and_an_expire_racing_from_one_version_leave_one_winner_listed_under_its_status", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		a := e.submit(queue.SubmitRequest{}, t0)
		p1, p2 := e.cached(a.Ref()), e.cached(a.Ref())
		now := t0.Add(time.Second)
		errs := race(
			func() error { _, err := p1.Cancel(ctx, a.Ref(), now); return err },
			func() error { _, err := p2.Expire(ctx, a.Ref(), now); return err },
		)
		statuses := []queue.Status{queue.StatusCancelled, queue.StatusExpired}
		win := oneWinner(t, errs)
		wantStatus(t, e.get(a.Ref()), statuses[win])
		if !slices.Contains(e.inQueues("/status/"), entry(statuses[win], a.ID)) {
			t.Fatalf("the winner's status entry is missing: %v", e.inQueues("/status/"))
		}
		wall := time.Now().UTC().Add(10 * time.Minute) // past the grace of the loser's entry
		if got := e.listIDs(queue.ListRequest{Status: statuses[win], Now: wall}); len(got) != 1 || got[0] != a.ID {
			t.Fatalf("listed %v as %s, want %s", got, statuses[win], a.ID)
		}
		if got := e.listIDs(queue.ListRequest{Status: statuses[1-win], Now: wall}); len(got) != 0 {
			t.Fatalf("listed %v as %s", got, statuses[1-win])
		}
		wantKeys(t, "status entries after the listings", e.inQueues("/status/"), entry(statuses[win], a.ID))
	})
}
