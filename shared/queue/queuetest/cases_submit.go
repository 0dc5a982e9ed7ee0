package queuetest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/internal/check"
	"github.com/s3q/s3q/shared/queue"
)

func runSubmit(t *testing.T, f Factory) {
	t.Run("submit_applies_defaults_and_writes_one_marker", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		task := e.submit(queue.SubmitRequest{Input: jsonOf(map[string]string{"to": "a@b.c"})}, t0)
		wantStatus(t, task, queue.StatusPending)
		if task.Queue != "default" || task.MaxAttempts != 3 || task.Timeout.Std() != 5*time.Minute || task.Attempt != 0 {
			t.Fatalf("defaults: queue=%s max_attempts=%d timeout=%s attempt=%d", task.Queue, task.MaxAttempts, task.Timeout, task.Attempt)
		}
		if task.ExpiresAt != nil {
			t.Fatalf("expires_at = %v, want none", task.ExpiresAt)
		}
		if !task.CreatedAt.Equal(t0) || !task.AvailableAt.Equal(t0) {
			t.Fatalf("created_at %s available_at %s, want %s", task.CreatedAt, task.AvailableAt, t0)
		}
		if err := queue.ValidateID(task.ID); err != nil {
			t.Fatalf("id %q: %v", task.ID, err)
		}
		got := e.get(task.Ref())
		if string(got.Input) != `{"to":"a@b.c"}` {
			t.Fatalf("input = %s", got.Input)
		}
		if m := e.markers(); len(m) != 1 || !strings.HasPrefix(m[0], "q/default/index/ready/0/") || m[0] != got.IndexKey {
			t.Fatalf("markers = %v, index_key = %s", m, got.IndexKey)
		}
	})

	t.Run("ttl_sets_expires_at_from_submission_and_uses_the_deadline_index", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		task := e.submit(queue.SubmitRequest{TTL: check.Dur("1h")}, t0)
		wantTime(t, "expires_at", task.ExpiresAt, t0.Add(time.Hour))
		if m := e.markers(); len(m) != 1 || !strings.HasPrefix(m[0], "q/default/index/deadline/0/") {
			t.Fatalf("markers = %v", m)
		}
		secs := int64(90)
		task = e.submit(queue.SubmitRequest{TTLSeconds: &secs}, t0)
		wantTime(t, "expires_at", task.ExpiresAt, t0.Add(90*time.Second))
		task = e.submit(queue.SubmitRequest{TTL: check.Dur("7d")}, t0)
		wantTime(t, "expires_at", task.ExpiresAt, t0.Add(7*24*time.Hour))
		abs := t0.Add(3 * time.Hour)
		task = e.submit(queue.SubmitRequest{ExpiresAt: &abs}, t0)
		wantTime(t, "expires_at", task.ExpiresAt, abs)
	})

	t.Run("ttl_zero_is_expired_on_arrival_and_never_claimed", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		task := e.submit(queue.SubmitRequest{TTL: check.Dur("0s")}, t0)
		wantStatus(t, task, queue.StatusExpired)
		wantTime(t, "expired_at", task.ExpiredAt, t0)
		wantTime(t, "expires_at", task.ExpiresAt, t0)
		if task.ExpiryReason != queue.ReasonTTL {
			t.Fatalf("expiry_reason = %q", task.ExpiryReason)
		}
		wantStatus(t, e.get(task.Ref()), queue.StatusExpired)
		if m := e.markers(); len(m) != 0 {
			t.Fatalf("markers = %v, want none", m)
		}
		e.claimNone(t0)
	})

	t.Run("schedule_at_and_delay_set_available_at", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		when := t0.Add(48 * time.Hour)
		task := e.submit(queue.SubmitRequest{ScheduleAt: &when}, t0)
		if !task.AvailableAt.Equal(when) {
			t.Fatalf("available_at = %s, want %s", task.AvailableAt, when)
		}
		task = e.submit(queue.SubmitRequest{Delay: check.Dur("10m")}, t0)
		if !task.AvailableAt.Equal(t0.Add(10 * time.Minute)) {
			t.Fatalf("available_at = %s", task.AvailableAt)
		}
		past := t0.Add(-time.Hour)
		task = e.submit(queue.SubmitRequest{ScheduleAt: &past}, t0)
		if !task.AvailableAt.Equal(t0) {
			t.Fatalf("a past schedule_at gives available_at %s, want now", task.AvailableAt)
		}
	})

	t.Run("expires_at_before_schedule_at_is_accepted_and_expires_without_running", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		when, exp := t0.Add(2*time.Hour), t0.Add(time.Hour)
		task := e.submit(queue.SubmitRequest{ScheduleAt: &when, ExpiresAt: &exp}, t0)
		wantStatus(t, task, queue.StatusPending)
		e.claimNone(t0.Add(30 * time.Minute))
		e.claimNone(exp)
		wantStatus(t, e.get(task.Ref()), queue.StatusExpired)
		e.claimNone(when)
	})

	t.Run("ttl_from_first_attempt_starts_the_clock_at_the_first_claim", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		task := e.submit(queue.SubmitRequest{TTL: check.Dur("10m"), TTLFrom: queue.TTLFromFirstAttempt}, t0)
		if task.ExpiresAt != nil {
			t.Fatalf("expires_at = %v before the first claim, want none", task.ExpiresAt)
		}
		// Waiting in the queue for an hour does not count against it.
		claimAt := t0.Add(time.Hour)
		c := e.claimOne(claimAt)
		wantTime(t, "expires_at", c.Task.ExpiresAt, claimAt.Add(10*time.Minute))
		// A retry keeps that deadline.
		failed, err := e.q.Fail(ctx, queue.FailRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token, Error: "boom"}, claimAt.Add(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		wantTime(t, "expires_at", failed.ExpiresAt, claimAt.Add(10*time.Minute))
		c2 := e.claimOne(claimAt.Add(2 * time.Minute))
		wantTime(t, "expires_at", c2.Task.ExpiresAt, claimAt.Add(10*time.Minute))
	})

	t.Run("a_child_inherits_its_parents_deadline_and_may_override_it", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		parent := e.submit(queue.SubmitRequest{TTL: check.Dur("1h")}, t0)
		child := e.submit(queue.SubmitRequest{ParentID: parent.ID}, t0.Add(20*time.Minute))
		wantTime(t, "child expires_at", child.ExpiresAt, t0.Add(time.Hour))
		if child.ParentID != parent.ID {
			t.Fatalf("parent_id = %q", child.ParentID)
		}
		own := e.submit(queue.SubmitRequest{ParentID: parent.ID, TTL: check.Dur("2h")}, t0.Add(20*time.Minute))
		wantTime(t, "overriding child expires_at", own.ExpiresAt, t0.Add(20*time.Minute+2*time.Hour))
		free := e.submit(queue.SubmitRequest{}, t0)
		kid := e.submit(queue.SubmitRequest{ParentID: free.ID}, t0)
		if kid.ExpiresAt != nil {
			t.Fatalf("child of a parent without deadline has expires_at %v", kid.ExpiresAt)
		}
	})

	t.Run("defaults_apply_most_specific_first", func(t *testing.T) {
		t.Parallel()
		ttl := 30 * time.Minute
		src := staticDefaults{"report.build": {TTL: &ttl, MaxAttempts: 5}}
		e := newEnv(t, f, func(o *queue.Options) { o.DefaultTTL = 2 * time.Hour; o.TypeDefaults = src })
		typed := e.submit(queue.SubmitRequest{TaskType: "report.build"}, t0)
		wantTime(t, "type default expires_at", typed.ExpiresAt, t0.Add(30*time.Minute))
		if typed.MaxAttempts != 5 {
			t.Fatalf("max_attempts = %d, want the type default 5", typed.MaxAttempts)
		}
		global := e.submit(queue.SubmitRequest{TaskType: "other"}, t0)
		wantTime(t, "global default expires_at", global.ExpiresAt, t0.Add(2*time.Hour))
		req := e.submit(queue.SubmitRequest{TaskType: "report.build", TTL: check.Dur("5m")}, t0)
		wantTime(t, "request expires_at", req.ExpiresAt, t0.Add(5*time.Minute))
	})

	t.Run("dedup_key_returns_the_existing_task_while_it_is_live", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		first, err := e.q.Submit(ctx, queue.SubmitRequest{TaskType: "x", DedupKey: "order-42"}, t0)
		if err != nil || first.Deduplicated {
			t.Fatalf("first submit: %+v %v", first, err)
		}
		again, err := e.q.Submit(ctx, queue.SubmitRequest{TaskType: "x", DedupKey: "order-42"}, t0.Add(time.Second))
		if err != nil || !again.Deduplicated || again.Task.ID != first.Task.ID {
			t.Fatalf("second submit: dedup=%v id=%s want %s, err %v", again.Deduplicated, again.Task.ID, first.Task.ID, err)
		}
		other, err := e.q.Submit(ctx, queue.SubmitRequest{TaskType: "x", DedupKey: "order-42", Queue: "other"}, t0)
		if err != nil || other.Deduplicated {
			t.Fatalf("same key in another queue must not dedup: %+v %v", other, err)
		}
		// Still live while running.
		c := e.claimOne(t0.Add(2 * time.Second))
		running, _ := e.q.Submit(ctx, queue.SubmitRequest{TaskType: "x", DedupKey: "order-42"}, t0.Add(3*time.Second))
		if !running.Deduplicated || running.Task.ID != first.Task.ID {
			t.Fatalf("dedup while running: %+v", running)
		}
		if _, err := e.q.Complete(ctx, queue.CompleteRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token}, t0.Add(4*time.Second)); err != nil {
			t.Fatal(err)
		}
		after, err := e.q.Submit(ctx, queue.SubmitRequest{TaskType: "x", DedupKey: "order-42"}, t0.Add(5*time.Second))
		if err != nil || after.Deduplicated || after.Task.ID == first.Task.ID {
			t.Fatalf("after completion a new task is made: %+v %v", after, err)
		}
	})

	t.Run("batch_submit_returns_one_result_per_item_and_a_bad_item_stops_no_other", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		reqs := []queue.SubmitRequest{{TaskType: "a"}, {TaskType: "bad/type"}, {TaskType: "c", TTL: check.Dur("1h")}}
		res, err := e.q.SubmitBatch(ctx, reqs, t0)
		if err != nil {
			t.Fatal(err)
		}
		if len(res) != 3 || res[0].Err != nil || res[2].Err != nil || res[1].Err == nil {
			t.Fatalf("results: %+v", res)
		}
		check.Field(t, res[1].Err, "task_type")
		if res[0].Result.Task.TaskType != "a" || res[2].Result.Task.TaskType != "c" {
			t.Fatalf("results out of order: %+v", res)
		}
		if n := len(e.inQueues("/tasks/")); n != 2 {
			t.Fatalf("%d task records, want 2", n)
		}
	})

	t.Run("bad_input_names_the_field_and_writes_nothing", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		neg := int64(-5)
		secs := int64(60)
		tm := t0.Add(time.Hour)
		tooFar := time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
		big := make([]byte, queue.MaxInputBytes+10)
		big[0] = '"'
		for i := 1; i < len(big)-1; i++ {
			big[i] = 'a'
		}
		big[len(big)-1] = '"'
		cases := []struct {
			name  string
			req   queue.SubmitRequest
			field string
			large bool
		}{
			{"missing task_type", queue.SubmitRequest{}, "task_type", false},
			{"task_type with slash", queue.SubmitRequest{TaskType: "a/b"}, "task_type", false},
			{"task_type with dot-dot", queue.SubmitRequest{TaskType: "a..b"}, "task_type", false},
			{"task_type with control char", queue.SubmitRequest{TaskType: "a\nb"}, "task_type", false},
			{"task_type too long", queue.SubmitRequest{TaskType: strings.Repeat("a", 129)}, "task_type", false},
			{"queue with slash", queue.SubmitRequest{TaskType: "a", Queue: "../etc"}, "queue", false},
			{"queue too long", queue.SubmitRequest{TaskType: "a", Queue: strings.Repeat("q", 65)}, "queue", false},
			{"negative ttl", queue.SubmitRequest{TaskType: "a", TTL: check.Dur("-1s")}, "ttl", false},
			{"negative ttl_seconds", queue.SubmitRequest{TaskType: "a", TTLSeconds: &neg}, "ttl_seconds", false},
			{"ttl and expires_at", queue.SubmitRequest{TaskType: "a", TTL: check.Dur("1h"), ExpiresAt: &tm}, "expires_at", false},
			{"ttl and ttl_seconds", queue.SubmitRequest{TaskType: "a", TTL: check.Dur("1h"), TTLSeconds: &secs}, "ttl_seconds", false},
			{"expires_at out of range", queue.SubmitRequest{TaskType: "a", ExpiresAt: &tooFar}, "expires_at", false},
			{"schedule_at and delay", queue.SubmitRequest{TaskType: "a", ScheduleAt: &tm, Delay: check.Dur("1m")}, "delay", false},
			{"negative delay", queue.SubmitRequest{TaskType: "a", Delay: check.Dur("-1m")}, "delay", false},
			{"unknown ttl_from", queue.SubmitRequest{TaskType: "a", TTL: check.Dur("1h"), TTLFrom: "later"}, "ttl_from", false},
			{"first_attempt with expires_at", queue.SubmitRequest{TaskType: "a", ExpiresAt: &tm, TTLFrom: queue.TTLFromFirstAttempt}, "ttl_from", false},
			{"negative max_attempts", queue.SubmitRequest{TaskType: "a", MaxAttempts: -1}, "max_attempts", false},
			{"zero timeout", queue.SubmitRequest{TaskType: "a", Timeout: check.Dur("0s")}, "timeout", false},
			{"malformed parent_id", queue.SubmitRequest{TaskType: "a", ParentID: "../../x"}, "parent_id", false},
			{"unknown parent_id", queue.SubmitRequest{TaskType: "a", ParentID: queue.NewID(t0)}, "parent_id", false},
			{"on_parent_expired without parent", queue.SubmitRequest{TaskType: "a", OnParentExpired: "cancel"}, "on_parent_expired", false},
			{"invalid JSON input", queue.SubmitRequest{TaskType: "a", Input: []byte("{nope")}, "input", false},
			{"input over 256 KiB", queue.SubmitRequest{TaskType: "a", Input: big}, "input", true},
			{"dedup_key with control char", queue.SubmitRequest{TaskType: "a", DedupKey: "k\x00"}, "dedup_key", false},
		}
		for _, c := range cases {
			_, err := e.q.Submit(ctx, c.req, t0)
			if err == nil {
				t.Fatalf("%s: no error", c.name)
			}
			check.Field(t, err, c.field)
			if c.large != errors.Is(err, queue.ErrTooLarge) {
				t.Fatalf("%s: ErrTooLarge = %v, want %v", c.name, errors.Is(err, queue.ErrTooLarge), c.large)
			}
			if !c.large && !errors.Is(err, queue.ErrInvalidInput) {
				t.Fatalf("%s: %v is not ErrInvalidInput", c.name, err)
			}
		}
		if keys := e.allKeys(); len(keys) != 0 {
			t.Fatalf("bad input wrote %v", keys)
		}
	})
}

// staticDefaults is a queue.DefaultsSource from a map.
type staticDefaults map[string]queue.TypeDefaults

func (s staticDefaults) TaskTypeDefaults(_ context.Context, taskType string, _ time.Time) (queue.TypeDefaults, bool, error) {
	d, ok := s[taskType]
	return d, ok, nil
}

func runSubmitWithID(t *testing.T, f Factory) {
	t.Run("a_given_id_makes_at_most_one_task_even_after_the_first_finished", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		id := queue.DerivedID(t0, "schedule-a")
		first, err := e.q.Submit(ctx, queue.SubmitRequest{ID: id, TaskType: "tick"}, t0)
		if err != nil || first.Task.ID != id || first.Deduplicated || first.Replayed {
			t.Fatalf("first: %+v %v", first, err)
		}
		c := e.claimOne(t0)
		if _, err := e.q.Complete(ctx, queue.CompleteRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token}, t0); err != nil {
			t.Fatal(err)
		}
		again, err := e.q.Submit(ctx, queue.SubmitRequest{ID: id, TaskType: "tick"}, t0.Add(time.Minute))
		if err != nil || !again.Replayed || again.Deduplicated || again.Task.Status != queue.StatusCompleted {
			t.Fatalf("again: replayed=%v dedup=%v status=%s err=%v", again.Replayed, again.Deduplicated, again.Task.Status, err)
		}
		if n := len(e.inQueues("/tasks/")); n != 1 {
			t.Fatalf("%d tasks", n)
		}
		_, err = e.q.Submit(ctx, queue.SubmitRequest{ID: "not-an-id", TaskType: "tick"}, t0)
		check.Field(t, err, "id")
	})

	t.Run("a_client_id_equal_to_a_schedule_fires_id_is_a_conflict_and_shows_nothing_of_that_task", func(t *testing.T) {
		e := newEnv(t, f)
		// A fire's id is computable by anyone (DerivedID of schedule and
		// time); its task carries no request of a client.
		id := queue.DerivedID(t0, "schedule/nightly")
		if _, err := e.q.SubmitFire(ctx, queue.SubmitRequest{ID: id, TaskType: "report", Input: jsonOf(map[string]string{"secret": "s"})}, t0); err != nil {
			t.Fatal(err)
		}
		for _, req := range []queue.SubmitRequest{{ID: id, TaskType: "report"}, {ID: id, TaskType: "report", Input: jsonOf(map[string]string{"secret": "s"})}} {
			res, err := e.q.In(queue.DefaultQueue).Submit(ctx, req, t0.Add(time.Minute))
			var ce *queue.ConflictError
			if !errors.As(err, &ce) || ce.Field != "id" || res.Task.ID != "" {
				t.Fatalf("%+v: %+v %v", req, res, err)
			}
		}
		wantTasks(t, e, 1)
	})

	t.Run("a_retry_that_names_the_queue_its_first_attempt_left_to_the_path_replays_the_task", func(t *testing.T) {
		e := newEnv(t, f)
		a := e.q.In("a")
		id := queue.NewID(t0)
		first, err := a.Submit(ctx, queue.SubmitRequest{ID: id, TaskType: "x"}, t0)
		if err != nil || first.Task.Queue != "a" {
			t.Fatalf("first: %+v %v", first, err)
		}
		again, err := a.Submit(ctx, queue.SubmitRequest{ID: id, TaskType: "x", Queue: "a"}, t0.Add(time.Second))
		if err != nil || !again.Replayed {
			t.Fatalf("the same request, spelled with its queue: %+v %v", again, err)
		}
		// Ids are per queue: the same id in the default queue is another
		// task, and neither queue learns of the other's.
		other, err := e.q.Submit(ctx, queue.SubmitRequest{ID: id, TaskType: "x", Queue: queue.DefaultQueue}, t0.Add(time.Second))
		if err != nil || other.Replayed || other.Task.Queue != queue.DefaultQueue {
			t.Fatalf("the same id in the default queue: %+v %v", other, err)
		}
		wantTasks(t, e, 2)
	})
}
