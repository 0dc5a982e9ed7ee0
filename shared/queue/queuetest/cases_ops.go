package queuetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/internal/check"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/store"
	"github.com/s3q/s3q/shared/store/storefault"
)

// The queue operations: pause and resume, purge, bulk retry, cancel and
// expire, stats.

func runOps(t *testing.T, f Factory) {
	t.Run("a_paused_queue_takes_submits_gives_no_claims_and_still_expires", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		e.submit(queue.SubmitRequest{}, t0)
		d, err := e.decls.Pause(ctx, queue.DefaultQueue, t0)
		if err != nil || !d.Paused || d.PausedAt == nil || !d.PausedAt.Equal(t0) {
			t.Fatalf("pause: %+v, %v", d, err)
		}
		late := e.submit(queue.SubmitRequest{TTL: check.Dur("1m")}, t0.Add(time.Second))
		e.claimNone(t0.Add(2 * time.Second))
		// Another process, past its declaration cache, sees the pause too.
		if cs, err := e.reopen().Claim(ctx, queue.ClaimRequest{MaxTasks: 5}, t0.Add(time.Minute)); err != nil || len(cs) != 0 {
			t.Fatalf("another process claimed %d tasks of a paused queue (%v)", len(cs), err)
		}
		// Changing its settings keeps it paused.
		if d, _, err := e.decls.Declare(ctx, queues.Declaration{Name: queue.DefaultQueue, MaxAttempts: 5}, t0.Add(time.Minute)); err != nil || !d.Paused {
			t.Fatalf("declare over a paused queue: paused=%v, %v", d.Paused, err)
		}
		e.sweep(t0.Add(3*time.Minute), nil)
		wantStatus(t, e.get(late.ID), queue.StatusExpired)
		if again, err := e.decls.Pause(ctx, queue.DefaultQueue, t0.Add(4*time.Minute)); err != nil || !again.PausedAt.Equal(t0) {
			t.Fatalf("pausing a paused queue: %+v, %v; want it unchanged", again, err)
		}
		d, err = e.decls.Resume(ctx, queue.DefaultQueue, t0.Add(5*time.Minute))
		if err != nil || d.Paused || d.PausedAt != nil {
			t.Fatalf("resume: %+v, %v", d, err)
		}
		got := e.claimOne(t0.Add(5 * time.Minute))
		wantStatus(t, got.Task, queue.StatusRunning)
		_, err = e.decls.Pause(ctx, "nope", t0)
		check.Err(t, err, queue.ErrQueueNotFound)
	})

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

	t.Run("stats_count_by_status_and_find_the_oldest_pending_task", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		first := e.submit(queue.SubmitRequest{}, t0)
		e.submit(queue.SubmitRequest{}, t0.Add(time.Minute))
		e.submit(queue.SubmitRequest{Delay: check.Dur("1h")}, t0.Add(time.Minute))
		cancelled := e.submit(queue.SubmitRequest{}, t0.Add(time.Minute))
		if _, err := e.q.Cancel(ctx, cancelled.Ref(), t0.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		e.submit(queue.SubmitRequest{TTL: check.Dur("0s")}, t0.Add(time.Minute))
		now := t0.Add(10 * time.Minute)
		st, err := e.stats(queue.DefaultQueue, now)
		if err != nil {
			t.Fatal(err)
		}
		c := st.Counts
		if c.Live != 3 || c.Delayed != 1 || c.Cancelled != 1 || c.Expired != 1 || c.Failed != 0 {
			t.Fatalf("counts %+v, want live 3, delayed 1, cancelled 1, expired 1", c)
		}
		if st.OldestPendingAt == nil || !st.OldestPendingAt.Equal(first.AvailableAt) || *st.OldestPendingAgeSeconds != 600 {
			t.Fatalf("oldest pending %v (%v s), want %s, 600 s", st.OldestPendingAt, st.OldestPendingAgeSeconds, first.AvailableAt)
		}
		if st.Recent.WindowSeconds != 3600 || st.Recent.Cancelled+st.Recent.Expired != 2 {
			t.Fatalf("recent %+v, want the cancel and the expiry of the last hour", st.Recent)
		}
		// Claimed, the oldest is running: the next one is the oldest pending.
		e.claimOne(now)
		st, err = e.stats(queue.DefaultQueue, now)
		if err != nil || st.OldestPendingAt == nil || !st.OldestPendingAt.Equal(t0.Add(time.Minute)) {
			t.Fatalf("oldest pending after a claim: %v, %v; want %s", st.OldestPendingAt, err, t0.Add(time.Minute))
		}
		_, err = e.stats("nope", now)
		check.Err(t, err, queue.ErrQueueNotFound)
	})

	runPurgeCrash(t, f)
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

// purgeCrashCases are the tasks a crashed purge starts from: pending
// with a dedup key and a deadline, and failed (its event sent) with a
// status entry.
var purgeCrashCases = []struct {
	name   string
	status queue.Status
	setup  func(e *env) string
}{
	{"pending_with_dedup_key_and_deadline", queue.StatusPending, func(e *env) string {
		return e.submit(queue.SubmitRequest{DedupKey: "k", TTL: check.Dur("1h")}, t0).ID
	}},
	{"dead_lettered_with_dedup_key", queue.StatusFailed, func(e *env) string {
		id := e.submit(queue.SubmitRequest{DedupKey: "k", MaxAttempts: 1}, t0).Ref()
		c := e.claim(queue.ClaimRequest{}, t0)[0]
		if _, err := e.q.Fail(ctx, queue.FailRequest{ID: id, LeaseToken: c.Lease.Token, Error: "x"}, t0); err != nil {
			e.t.Fatal(err)
		}
		e.sweep(t0, nil)
		return id
	}},
}

// runPurgeCrash crashes a purge before and after each of its writes: the
// task is then whole (as it was) or gone, never half; a re-run finishes
// it; and once the scans have passed, nothing of it is left and its
// dedup key is free.
func runPurgeCrash(t *testing.T, f Factory) {
	for _, pc := range purgeCrashCases {
		e := newEnv(t, f)
		pc.setup(e)
		counting := store.NewCounting(e.s)
		if _, err := e.open(counting).Purge(ctx, queue.BulkRequest{Queue: queue.DefaultQueue, Status: pc.status}, t0.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		c := counting.Counts()
		writes := int(c.Put + c.Delete)
		for _, mode := range []storefault.FaultMode{storefault.FailBefore, storefault.FailAfter} {
			modeName := map[storefault.FaultMode]string{storefault.FailBefore: "before", storefault.FailAfter: "after"}[mode]
			for n := 1; n <= writes; n++ {
				t.Run(fmt.Sprintf("a_crash_%s_write_%d_of_%d_of_a_purge_of_%s_leaves_it_whole_or_gone", modeName, n, writes, pc.name), func(t *testing.T) {
					t.Parallel()
					purgeCrashOnce(t, f, pc.status, pc.setup, n, mode)
				})
			}
		}
	}
}

func purgeCrashOnce(t *testing.T, f Factory, status queue.Status, setup func(*env) string, n int, mode storefault.FaultMode) {
	e := newEnv(t, f)
	id := setup(e)
	before := e.get(id)
	faulty := storefault.New(e.s)
	faulty.Fail(n, mode)
	req := queue.BulkRequest{Queue: queue.DefaultQueue, Status: status}
	_, err := e.open(faulty).Purge(ctx, req, t0.Add(time.Second))
	if !faulty.Fired() {
		t.Fatalf("write %d never happened (err %v)", n, err)
	}
	faulty.Disarm()

	got, gerr := e.q.Get(ctx, id)
	switch {
	case gerr == nil:
		if got.Status != before.Status || got.UpdatedAt != before.UpdatedAt {
			t.Fatalf("after the crash the task is %s (updated %s), want it whole: %s (updated %s)", got.Status, got.UpdatedAt, before.Status, before.UpdatedAt)
		}
		// Whole: a re-run purges it.
		res, err := e.reopen().Purge(ctx, req, t0.Add(2*time.Second))
		if err != nil || res.Changed != 1 {
			t.Fatalf("re-run after the crash: %+v, %v", res, err)
		}
	case errors.Is(gerr, queue.ErrNotFound):
		if res, err := e.reopen().Purge(ctx, req, t0.Add(2*time.Second)); err != nil || res.Matched != 0 {
			t.Fatalf("re-run over a purged task: %+v, %v; want nothing matched", res, err)
		}
	default:
		t.Fatal(gerr)
	}
	_, gerr = e.q.Get(ctx, id)
	check.Err(t, gerr, queue.ErrNotFound)

	// The key is free at once, whatever the crash left.
	res, err := e.reopen().Submit(ctx, queue.SubmitRequest{TaskType: "x", DedupKey: "k"}, t0.Add(3*time.Second))
	if err != nil || res.Deduplicated {
		t.Fatalf("submit with the purged task's dedup key: %+v, %v; want a new task", res, err)
	}
	// The scans that meet what is left delete it, past the grace.
	later := t0.Add(time.Hour + time.Minute)
	q := e.reopen()
	if _, err := q.Purge(ctx, queue.BulkRequest{Queue: queue.DefaultQueue, Status: queue.StatusPending}, later); err != nil {
		t.Fatal(err)
	}
	for _, s := range []queue.Status{queue.StatusFailed, queue.StatusExpired, queue.StatusCancelled} {
		// A listing repairs a status entry by the time the store stamped
		// on it, its own clock: an hour past it.
		if _, err := q.List(ctx, queue.ListRequest{Queue: queue.DefaultQueue, Status: s, Now: time.Now().Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := q.Claim(ctx, queue.ClaimRequest{}, later); err != nil {
		t.Fatal(err)
	}
	e.sweep(later, nil)
	e.wantNothingOf(id)
}

// wantNothingOf fails unless no key and no stored body names task id,
// the purged task (a dedup pointer naming it counts), but for the
// tombstone a crash after a purge's commit may leave: read as gone,
// without the task's data, tagged for the lifecycle rule.
func (e *env) wantNothingOf(id string) {
	e.t.Helper()
	for _, k := range e.allKeys() {
		obj, err := e.s.Get(ctx, k)
		if err != nil {
			e.t.Fatal(err)
		}
		if !strings.Contains(k, id) && !strings.Contains(string(obj.Body), id) {
			continue
		}
		if k == e.recordKey(id) {
			var tomb map[string]any
			if err := json.Unmarshal(obj.Body, &tomb); err == nil && tomb["purged_at"] != nil && tomb["input"] == nil {
				continue
			}
		}
		e.t.Errorf("%s of the purged task %s is left: %s", k, id, obj.Body)
	}
}
