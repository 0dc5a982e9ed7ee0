package queuetest

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/internal/check"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/store/storefault"
)

// runLostSubmitSubmitCases are the submit cases of runLostSubmit (groups.go).
func runLostSubmitSubmitCases(t *testing.T, f Factory) {
	for _, c := range []struct {
		name, op, prefix string
	}{
		{"a_submit_whose_record_create_answer_was_lost_returns_its_one_task", storefault.OpPutIfAbsent, "q/default/tasks/"},
		{"a_submit_whose_index_marker_answer_was_lost_returns_its_one_task", storefault.OpPut, "q/default/index/ready/"},
		{"a_submit_whose_wake_up_answer_was_lost_returns_its_one_task", storefault.OpPut, "sweep/wake/"},
	} {
		for _, withID := range []bool{false, true} {
			name := c.name
			if withID {
				name += "_with_an_id"
			}
			t.Run(name, func(t *testing.T) {
				e, fs := newLossEnv(t, f)
				req := queue.SubmitRequest{TaskType: "email.send", Input: json.RawMessage(`{"to":"a"}`)}
				if strings.HasPrefix(c.prefix, "sweep/") { // a wake-up is written for a task with a deadline
					ttl := queue.Duration(time.Hour)
					req.TTL = &ttl
				}
				if withID {
					req.ID = queue.NewID(t0)
				}
				lose(fs, c.op, c.prefix)
				res, err := e.q.Submit(ctx, req, t0)
				if err != nil || res.Replayed || res.Deduplicated {
					t.Fatalf("submit: %+v, %v", res, err)
				}
				wantHits(t, fs, 1)
				if withID && res.Task.ID != req.ID {
					t.Fatalf("task id %s, want %s", res.Task.ID, req.ID)
				}
				wantTasks(t, e, 1)
				e.consistent()
				if got := e.claimOne(t0); got.Task.ID != res.Task.ID {
					t.Fatalf("claimed %s, want %s", got.Task.ID, res.Task.ID)
				}
			})
		}
	}
}

// runReplaySubmitCases are the submit cases of runReplay (groups.go).
func runReplaySubmitCases(t *testing.T, f Factory) {

	t.Run("input_with_a_key_twice_or_invalid_utf8_is_refused_naming_input", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		for _, in := range []string{`{"a":1,"a":2}`, `{"x":{"k":1,"k":1}}`, "{\"s\":\"\xff\"}"} {
			_, err := e.q.Submit(ctx, queue.SubmitRequest{TaskType: "x", Input: json.RawMessage(in)}, t0)
			var ve *queue.ValidationError
			if !errors.As(err, &ve) || ve.Field != "input" {
				t.Fatalf("input %q: %v, want a validation error on input", in, err)
			}
		}
		wantTasks(t, e, 0)
		task := e.submit(queue.SubmitRequest{}, t0)
		c := e.claimOne(t0)
		_, err := e.q.Complete(ctx, queue.CompleteRequest{ID: task.Ref(), LeaseToken: c.Lease.Token, Output: []byte(`{"a":1,"a":1}`)}, t0)
		var ve *queue.ValidationError
		if !errors.As(err, &ve) || ve.Field != "output" {
			t.Fatalf("output with a key twice: %v", err)
		}
	})
}

// runSubmitSubmitCases are the submit cases of runSubmit (groups.go).
func runSubmitSubmitCases(t *testing.T, f Factory) {
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
