package queuetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/internal/check"
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

// runOpsBulkCases are the bulk cases of runOps (groups.go).
func runOpsBulkCases(t *testing.T, f Factory) {

	t.Run("purge_deletes_pending_tasks_with_their_side_records_and_frees_their_dedup_keys", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		a := e.submit(queue.SubmitRequest{}, t0)
		e.claimOne(t0)
		b := e.submit(queue.SubmitRequest{TTL: check.Dur("1h")}, t0)
		run := e.submit(queue.SubmitRequest{DedupKey: "k"}, t0)
		c := e.submit(queue.SubmitRequest{TaskType: "other"}, t0)
		res, err := e.q.Purge(ctx, queue.BulkRequest{Queue: queue.DefaultQueue, Status: queue.StatusPending}, t0.Add(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if res.Changed != 3 || len(res.Skipped) != 0 || res.NextCursor != "" {
			t.Fatalf("purge: %+v, want 3 changed", res)
		}
		for _, id := range []string{b.ID, run.ID, c.ID} {
			if !slices.Contains(res.TaskIDs, id) {
				t.Fatalf("purged %v, want %s among them", res.TaskIDs, id)
			}
			_, err := e.q.Get(ctx, id)
			check.Err(t, err, queue.ErrNotFound)
			if _, err := e.s.Get(ctx, e.recordKey(id)); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("record of purged %s: %v, want it deleted", id, err)
			}
			e.wantNothingOf(id) // its markers, and its dedup pointer released
		}
		wantStatus(t, e.get(a.ID), queue.StatusRunning) // running: never purged
		if m := e.markers(); len(m) != 1 || !strings.HasSuffix(m[0], a.ID) {
			t.Fatalf("markers after purge: %v, want only the running task's", m)
		}
		// The purged task's dedup key is free at once.
		res2, err := e.q.Submit(ctx, queue.SubmitRequest{TaskType: "x", DedupKey: "k"}, t0.Add(2*time.Second))
		if err != nil || res2.Deduplicated || res2.Task.ID == run.ID {
			t.Fatalf("submit with a purged task's dedup key: %+v, %v; want a new task", res2, err)
		}
	})

	t.Run("a_task_submitted_with_a_purged_tasks_id_has_a_history_of_its_own", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		id := queue.NewID(t0)
		old := e.submit(queue.SubmitRequest{ID: id, Input: []byte(`{"secret":"purged"}`)}, t0)
		c := e.claimOne(t0)
		if _, err := e.q.Complete(ctx, queue.CompleteRequest{ID: old.Ref(), LeaseToken: c.Lease.Token, Output: []byte(`"old"`)}, t0); err != nil {
			t.Fatal(err)
		}
		if res, err := e.q.Purge(ctx, queue.BulkRequest{Queue: queue.DefaultQueue, Status: queue.StatusCompleted}, t0.Add(time.Second)); err != nil || res.Changed != 1 {
			t.Fatalf("purge: %+v %v", res, err)
		}
		// A purged task's own history ends with its tombstone.
		purged, err := e.q.History(ctx, queue.HistoryRequest{ID: old.Ref()})
		if err != nil || len(purged.Versions) < 2 || purged.Versions[0].Task.PurgedAt == nil {
			t.Fatalf("history of the purged task: %+v %v, want its versions, the tombstone first", purged, err)
		}
		sub, err := e.q.Submit(ctx, queue.SubmitRequest{ID: id, TaskType: "email.send", Input: []byte(`{"fresh":true}`)}, t0.Add(time.Minute))
		if errors.Is(err, queue.ErrConflict) {
			// A server that refuses a create over the purged record's
			// delete marker (versitygw) keeps the id taken: there is no
			// new task to show the purged one's versions under.
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		again := sub.Task
		res, err := e.q.History(ctx, queue.HistoryRequest{ID: again.Ref()})
		if err != nil || len(res.Versions) != 1 || res.NextCursor != "" {
			t.Fatalf("history of the new task: %+v %v, want its one version", res, err)
		}
		for _, v := range res.Versions {
			if string(v.Task.Input) != `{"fresh":true}` || !v.Task.CreatedAt.Equal(again.CreatedAt) {
				t.Fatalf("the new task's history shows another task's version: %+v", v.Task)
			}
		}
	})

	t.Run("purge_of_finished_tasks_by_type_and_age_skips_owed_events", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		done := func(req queue.SubmitRequest, at time.Time) queue.Task {
			task := e.submit(req, at)
			c := e.claim(queue.ClaimRequest{}, at)[0]
			if _, err := e.q.Complete(ctx, queue.CompleteRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token}, at); err != nil {
				t.Fatal(err)
			}
			return task
		}
		old := done(queue.SubmitRequest{TaskType: "a"}, t0)
		done(queue.SubmitRequest{TaskType: "b"}, t0)
		young := done(queue.SubmitRequest{TaskType: "a"}, t0.Add(time.Hour))
		res, err := e.q.Purge(ctx, queue.BulkRequest{Queue: queue.DefaultQueue, Status: queue.StatusCompleted, TaskType: "a",
			OlderThan: check.Dur("30m")}, t0.Add(time.Hour+time.Minute))
		if err != nil || res.Changed != 1 || res.TaskIDs[0] != old.ID {
			t.Fatalf("purge completed type a older than 30m: %+v, %v; want %s alone", res, err, old.ID)
		}
		wantStatus(t, e.get(young.ID), queue.StatusCompleted)

		// A dead-lettered task is purged only once its event is sent.
		dead := e.submit(queue.SubmitRequest{MaxAttempts: 1}, t0)
		c := e.claim(queue.ClaimRequest{}, t0.Add(2*time.Hour))[0]
		if _, err := e.q.Fail(ctx, queue.FailRequest{ID: dead.Ref(), LeaseToken: c.Lease.Token, Error: "x"}, t0.Add(2*time.Hour)); err != nil {
			t.Fatal(err)
		}
		req := queue.BulkRequest{Queue: queue.DefaultQueue, Status: queue.StatusFailed}
		res, err = e.q.Purge(ctx, req, t0.Add(2*time.Hour))
		if err != nil || res.Changed != 0 || len(res.Skipped) != 1 || !strings.Contains(res.Skipped[0].Reason, "Dead-Lettered") {
			t.Fatalf("purge of a failed task owing its event: %+v, %v; want it skipped", res, err)
		}
		e.sweep(t0.Add(2*time.Hour+time.Minute), nil)
		res, err = e.q.Purge(ctx, req, t0.Add(2*time.Hour+2*time.Minute))
		if err != nil || res.Changed != 1 {
			t.Fatalf("purge of a failed task once its event is sent: %+v, %v", res, err)
		}
		e.wantNothingOf(dead.ID)
		_, err = e.q.Purge(ctx, queue.BulkRequest{Queue: queue.DefaultQueue}, t0)
		check.Field(t, err, "status")
		_, err = e.q.Purge(ctx, queue.BulkRequest{Queue: queue.DefaultQueue, Status: queue.StatusRunning}, t0)
		check.Field(t, err, "status")
		_, err = e.q.Purge(ctx, queue.BulkRequest{Queue: queue.DefaultQueue, Status: queue.StatusPending, Limit: 101}, t0)
		check.Field(t, err, "limit")
	})

	t.Run("a_bulk_operation_pages_by_cursor_and_a_rerun_changes_nothing", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		var ids []string
		for i := 0; i < 7; i++ {
			ids = append(ids, e.submit(queue.SubmitRequest{}, t0).ID)
		}
		req := queue.BulkRequest{Queue: queue.DefaultQueue, Limit: 3}
		var cancelled []string
		for calls := 0; ; calls++ {
			if calls > 4 {
				t.Fatal("the cursor never ends")
			}
			res, err := e.q.Bulk(ctx, queue.OpCancel, req, t0.Add(time.Second))
			if err != nil {
				t.Fatal(err)
			}
			if res.Changed > 3 {
				t.Fatalf("one call changed %d tasks, limit 3", res.Changed)
			}
			cancelled = append(cancelled, res.TaskIDs...)
			if req.Cursor = res.NextCursor; req.Cursor == "" {
				break
			}
		}
		slices.Sort(cancelled)
		slices.Sort(ids)
		if !slices.Equal(cancelled, ids) {
			t.Fatalf("cancelled %v, want %v", cancelled, ids)
		}
		res, err := e.q.Bulk(ctx, queue.OpCancel, queue.BulkRequest{Queue: queue.DefaultQueue}, t0.Add(2*time.Second))
		if err != nil || res.Changed != 0 || res.Matched != 0 {
			t.Fatalf("re-run: %+v, %v; want nothing", res, err)
		}
		for _, id := range ids {
			wantStatus(t, e.get(id), queue.StatusCancelled)
		}
	})

	t.Run("a_dry_run_writes_nothing_and_names_what_it_would_change", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		a := e.submit(queue.SubmitRequest{}, t0)
		e.submit(queue.SubmitRequest{}, t0.Add(time.Hour))
		before := e.snapshot()
		for _, op := range []queue.BulkOp{queue.OpPurge, queue.OpCancel, queue.OpExpire} {
			res, err := e.q.Bulk(ctx, op, queue.BulkRequest{Queue: queue.DefaultQueue, Status: queue.StatusPending,
				OlderThan: check.Dur("30m"), DryRun: true}, t0.Add(time.Hour))
			if err != nil || !res.DryRun || res.Changed != 1 || res.TaskIDs[0] != a.ID {
				t.Fatalf("dry %s: %+v, %v; want %s alone", op, res, err, a.ID)
			}
		}
		if after := e.snapshot(); after != before {
			t.Fatalf("a dry run wrote:\nbefore %s\nafter  %s", before, after)
		}
	})

	t.Run("bulk_retry_and_expire_act_as_on_each_task", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		var failed []string
		for i := 0; i < 3; i++ {
			task := e.submit(queue.SubmitRequest{MaxAttempts: 1}, t0)
			c := e.claim(queue.ClaimRequest{}, t0)[0]
			if _, err := e.q.Fail(ctx, queue.FailRequest{ID: task.Ref(), LeaseToken: c.Lease.Token, Error: "x"}, t0); err != nil {
				t.Fatal(err)
			}
			failed = append(failed, task.ID)
		}
		res, err := e.q.Bulk(ctx, queue.OpRetry, queue.BulkRequest{Queue: queue.DefaultQueue}, t0.Add(time.Second))
		if err != nil || res.Changed != 0 || len(res.Skipped) != 3 {
			t.Fatalf("retry before the sweep published: %+v, %v; want all skipped", res, err)
		}
		e.sweep(t0.Add(time.Minute), nil)
		res, err = e.q.Bulk(ctx, queue.OpRetry, queue.BulkRequest{Queue: queue.DefaultQueue}, t0.Add(2*time.Minute))
		if err != nil || res.Changed != 3 || res.Status != queue.StatusFailed {
			t.Fatalf("retry: %+v, %v", res, err)
		}
		for _, id := range failed {
			got := e.get(id)
			wantStatus(t, got, queue.StatusPending)
			if got.Attempt != 0 {
				t.Fatalf("retried task has attempt %d, want 0", got.Attempt)
			}
		}
		res, err = e.q.Bulk(ctx, queue.OpExpire, queue.BulkRequest{Queue: queue.DefaultQueue, Limit: 2}, t0.Add(3*time.Minute))
		if err != nil || res.Changed != 2 {
			t.Fatalf("expire 2: %+v, %v", res, err)
		}
		for _, id := range res.TaskIDs {
			got := e.get(id)
			wantStatus(t, got, queue.StatusExpired)
			if got.ExpiryReason != queue.ReasonManual {
				t.Fatalf("expiry reason %q, want manual", got.ExpiryReason)
			}
		}
		_, err = e.q.Bulk(ctx, queue.OpExpire, queue.BulkRequest{Queue: queue.DefaultQueue, Status: queue.StatusFailed}, t0)
		check.Field(t, err, "status")
		_, err = e.q.In("a").Bulk(ctx, queue.OpExpire, queue.BulkRequest{Queue: "b"}, t0)
		check.Field(t, err, "queue")
	})
}

// snapshot describes every key and body under the env's store.
func (e *env) snapshot() string {
	e.t.Helper()
	var b strings.Builder
	for _, k := range e.allKeys() {
		obj, err := e.s.Get(ctx, k)
		if err != nil {
			e.t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s=%s;", k, obj.Body)
	}
	return b.String()
}
