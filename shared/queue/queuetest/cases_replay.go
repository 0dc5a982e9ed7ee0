package queuetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/store"
)

// Replays that match the request (issue 16, item 5): a lease operation
// retried with the same token replays only when it is the same operation
// with the same request; a submit's identity compares its input by value;
// a create whose answer was lost is recognised by its writer, not by the
// record's bytes.

// wantLeaseConflict fails unless err is a *queue.ConflictError naming
// lease_token that is queue.ErrLeaseEnded, and not queue.ErrConflict
// (which says retrying later is safe: with this token it never is).
func wantLeaseConflict(t testing.TB, what string, err error) {
	t.Helper()
	var ce *queue.ConflictError
	if !errors.As(err, &ce) || ce.Field != "lease_token" {
		t.Fatalf("%s: err = %v, want a conflict naming lease_token", what, err)
	}
	if !errors.Is(err, queue.ErrLeaseEnded) || errors.Is(err, queue.ErrConflict) {
		t.Fatalf("%s: err = %v, want queue.ErrLeaseEnded and not queue.ErrConflict", what, err)
	}
}

func runReplay(t *testing.T, f Factory) {
	t.Run("a_permanent_fail_after_a_retryable_fail_with_the_same_token_is_a_conflict_not_a_replay", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		task := e.submit(queue.SubmitRequest{}, t0)
		c := e.claimOne(t0)
		first, err := e.q.Fail(ctx, queue.FailRequest{ID: task.Ref(), LeaseToken: c.Lease.Token, Error: "try again"}, t0.Add(time.Second))
		if err != nil || first.Status != queue.StatusPending {
			t.Fatalf("retryable fail: %s %v", first.Status, err)
		}
		// The same fail again (its answer was lost) replays it.
		again, err := e.q.Fail(ctx, queue.FailRequest{ID: task.Ref(), LeaseToken: c.Lease.Token, Error: "try again", Retryable: ptrTo(true)}, t0.Add(2*time.Second))
		if err != nil || again.Status != queue.StatusPending || !again.UpdatedAt.Equal(first.UpdatedAt) {
			t.Fatalf("the same fail again: %s %v", again.Status, err)
		}
		before := e.raw(task.ID)
		_, err = e.q.Fail(ctx, queue.FailRequest{ID: task.Ref(), LeaseToken: c.Lease.Token, Error: "give up", Retryable: ptrTo(false)}, t0.Add(3*time.Second))
		wantLeaseConflict(t, "a permanent fail with the token of a retryable one", err)
		if string(e.raw(task.ID)) != string(before) {
			t.Fatal("the refused fail changed the record")
		}
		wantStatus(t, e.get(task.ID), queue.StatusPending)
	})

	t.Run("a_fail_with_retry_after_repeated_at_another_now_replays_it", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		task := e.submit(queue.SubmitRequest{}, t0)
		c := e.claimOne(t0)
		// A push target said "retry at t0+31s": the first call's
		// RetryAfter is 30s; its answer was lost, and the repeat, a
		// second later, says 29s for the same moment.
		first, err := e.q.Fail(ctx, queue.FailRequest{ID: task.Ref(), LeaseToken: c.Lease.Token, Error: "503", RetryAfter: 30 * time.Second}, t0.Add(time.Second))
		if err != nil || first.Status != queue.StatusPending {
			t.Fatalf("fail: %s %v", first.Status, err)
		}
		again, err := e.q.Fail(ctx, queue.FailRequest{ID: task.Ref(), LeaseToken: c.Lease.Token, Error: "503", RetryAfter: 29 * time.Second}, t0.Add(2*time.Second))
		if err != nil || !again.UpdatedAt.Equal(first.UpdatedAt) || !again.AvailableAt.Equal(t0.Add(31*time.Second)) {
			t.Fatalf("the repeat at another now: %+v %v, want the first fail replayed", again, err)
		}
	})

	t.Run("another_lease_operation_with_an_ended_token_is_a_conflict_naming_lease_token", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		task := e.submit(queue.SubmitRequest{}, t0)
		c := e.claimOne(t0)
		if _, err := e.q.Complete(ctx, queue.CompleteRequest{ID: task.Ref(), LeaseToken: c.Lease.Token, Output: []byte(`{"a":1,"b":[1,2]}`)}, t0.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		// The same output spelled otherwise is the same request.
		again, err := e.q.Complete(ctx, queue.CompleteRequest{ID: task.Ref(), LeaseToken: c.Lease.Token, Output: []byte(`{ "b": [1.0, 2], "a": 1e0 }`)}, t0.Add(2*time.Second))
		if err != nil || again.Status != queue.StatusCompleted {
			t.Fatalf("the same completion, spelled otherwise: %s %v", again.Status, err)
		}
		_, err = e.q.Complete(ctx, queue.CompleteRequest{ID: task.Ref(), LeaseToken: c.Lease.Token, Output: []byte(`{"a":2}`)}, t0.Add(2*time.Second))
		wantLeaseConflict(t, "a completion with another output", err)
		_, err = e.q.Fail(ctx, queue.FailRequest{ID: task.Ref(), LeaseToken: c.Lease.Token, Error: "x"}, t0.Add(2*time.Second))
		wantLeaseConflict(t, "a fail after the completion", err)
		_, err = e.q.Heartbeat(ctx, queue.HeartbeatRequest{ID: task.Ref(), LeaseToken: c.Lease.Token}, t0.Add(2*time.Second))
		wantLeaseConflict(t, "a heartbeat after the completion", err)
		_, err = e.q.AckCancel(ctx, queue.AckCancelRequest{ID: task.Ref(), LeaseToken: c.Lease.Token}, t0.Add(2*time.Second))
		wantLeaseConflict(t, "a cancel acknowledgement after the completion", err)
		_, err = e.q.Reschedule(ctx, queue.RescheduleRequest{ID: task.Ref(), LeaseToken: c.Lease.Token}, t0.Add(2*time.Second))
		wantLeaseConflict(t, "a reschedule after the completion", err)
		// A token that never held the lease is still a mismatch.
		_, err = e.q.Complete(ctx, queue.CompleteRequest{ID: task.Ref(), LeaseToken: "not-a-token"}, t0.Add(2*time.Second))
		if !errors.Is(err, queue.ErrNotRunning) {
			t.Fatalf("another token: %v", err)
		}
		got := e.get(task.ID)
		if got.Status != queue.StatusCompleted || string(got.Output) != `{"a":1,"b":[1,2]}` {
			t.Fatalf("record after the refused requests: %s %s", got.Status, got.Output)
		}
	})

	t.Run("a_reschedule_retried_with_other_arguments_is_a_conflict", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		task := e.submit(queue.SubmitRequest{}, t0)
		c := e.claimOne(t0)
		req := queue.RescheduleRequest{ID: task.Ref(), LeaseToken: c.Lease.Token, Delay: queue.Duration(time.Minute)}
		if _, err := e.q.Reschedule(ctx, req, t0.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		if _, err := e.q.Reschedule(ctx, req, t0.Add(2*time.Second)); err != nil {
			t.Fatalf("the same reschedule again: %v", err)
		}
		_, err := e.q.Reschedule(ctx, queue.RescheduleRequest{ID: task.Ref(), LeaseToken: c.Lease.Token, Delay: queue.Duration(time.Hour)}, t0.Add(2*time.Second))
		wantLeaseConflict(t, "a reschedule with another delay", err)
	})

	t.Run("an_old_token_after_a_reclaim_is_lease_mismatch_never_a_replay", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		task := e.submit(queue.SubmitRequest{MaxAttempts: 5}, t0)
		c1 := e.claimOne(t0)
		if _, err := e.q.Fail(ctx, queue.FailRequest{ID: task.Ref(), LeaseToken: c1.Lease.Token, Error: "flaky"}, t0.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		// Backoff is 10s: another worker claims the retry.
		c2 := e.claimOne(t0.Add(time.Minute))
		if c2.Lease.Token == c1.Lease.Token {
			t.Fatal("the reclaim kept the token")
		}
		for _, retry := range []func() error{
			func() error {
				_, err := e.q.Fail(ctx, queue.FailRequest{ID: task.Ref(), LeaseToken: c1.Lease.Token, Error: "flaky"}, t0.Add(time.Minute+time.Second))
				return err
			},
			func() error {
				_, err := e.q.Complete(ctx, queue.CompleteRequest{ID: task.Ref(), LeaseToken: c1.Lease.Token}, t0.Add(time.Minute+time.Second))
				return err
			},
		} {
			if err := retry(); !errors.Is(err, queue.ErrLeaseMismatch) {
				t.Fatalf("the first worker's retry after the reclaim: %v, want lease_mismatch", err)
			}
		}
		got := e.get(task.ID)
		if got.Status != queue.StatusRunning || got.LeaseToken != c2.Lease.Token {
			t.Fatalf("the second claim's lease was touched: %s %s", got.Status, got.LeaseToken)
		}
		if _, err := e.q.Complete(ctx, queue.CompleteRequest{ID: task.Ref(), LeaseToken: c2.Lease.Token}, t0.Add(time.Minute+2*time.Second)); err != nil {
			t.Fatalf("the second worker's completion: %v", err)
		}
	})

	t.Run("a_submit_retried_with_its_input_keys_reordered_and_numbers_respelled_replays", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		id := queue.NewID(t0)
		first, err := e.q.Submit(ctx, queue.SubmitRequest{ID: id, TaskType: "x", Input: json.RawMessage(`{"a":1,"b":{"c":2.50,"d":[1,2]}}`)}, t0)
		if err != nil {
			t.Fatal(err)
		}
		again, err := e.q.Submit(ctx, queue.SubmitRequest{ID: id, TaskType: "x", Input: json.RawMessage(`{"b":{"d":[1e0,2],"c":25e-1},"a":1.0}`)}, t0.Add(time.Second))
		if err != nil || !again.Replayed || again.Task.ID != first.Task.ID {
			t.Fatalf("the same input by value: %+v %v", again, err)
		}
		_, err = e.q.Submit(ctx, queue.SubmitRequest{ID: id, TaskType: "x", Input: json.RawMessage(`{"a":1,"b":{"c":2.51,"d":[1,2]}}`)}, t0.Add(time.Second))
		var ce *queue.ConflictError
		if !errors.As(err, &ce) || ce.Field != "id" {
			t.Fatalf("another input: %v, want a conflict on id", err)
		}
		wantTasks(t, e, 1)
	})

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

	t.Run("heartbeats_are_bounded_per_attempt_and_a_new_claim_starts_again", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		task := e.submit(queue.SubmitRequest{MaxAttempts: 2}, t0)
		c := e.claimOne(t0)
		if _, err := e.q.Heartbeat(ctx, queue.HeartbeatRequest{ID: task.Ref(), LeaseToken: c.Lease.Token}, t0.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		if got := e.get(task.ID); got.Heartbeats != 1 {
			t.Fatalf("heartbeats = %d after one", got.Heartbeats)
		}
		// Skip to the last heartbeat allowed: rewrite the count in place.
		obj, err := e.s.Get(ctx, queue.TaskKey(task.Queue, task.ID))
		if err != nil {
			t.Fatal(err)
		}
		var rec map[string]any
		if err := json.Unmarshal(obj.Body, &rec); err != nil {
			t.Fatal(err)
		}
		rec["heartbeats"] = queue.MaxHeartbeats - 1
		body, _ := json.Marshal(rec)
		if _, err := e.s.PutIfMatch(ctx, queue.TaskKey(task.Queue, task.ID), body, obj.ETag); err != nil {
			t.Fatal(err)
		}
		if _, err := e.q.Heartbeat(ctx, queue.HeartbeatRequest{ID: task.Ref(), LeaseToken: c.Lease.Token}, t0.Add(2*time.Second)); err != nil {
			t.Fatalf("the last heartbeat allowed: %v", err)
		}
		before := e.raw(task.ID)
		_, err = e.q.Heartbeat(ctx, queue.HeartbeatRequest{ID: task.Ref(), LeaseToken: c.Lease.Token}, t0.Add(3*time.Second))
		var se *queue.StateError
		if !errors.As(err, &se) {
			t.Fatalf("heartbeat past the bound: %v, want a state error", err)
		}
		if string(e.raw(task.ID)) != string(before) {
			t.Fatal("the refused heartbeat wrote the record")
		}
		// The worker can still finish the attempt, and the next claim
		// counts from zero.
		if _, err := e.q.Fail(ctx, queue.FailRequest{ID: task.Ref(), LeaseToken: c.Lease.Token, Error: "x"}, t0.Add(4*time.Second)); err != nil {
			t.Fatal(err)
		}
		c2 := e.claimOne(t0.Add(time.Hour))
		if c2.Task.Heartbeats != 0 {
			t.Fatalf("a new claim has %d heartbeats", c2.Task.Heartbeats)
		}
		if _, err := e.q.Heartbeat(ctx, queue.HeartbeatRequest{ID: task.Ref(), LeaseToken: c2.Lease.Token}, t0.Add(time.Hour+time.Second)); err != nil {
			t.Fatalf("a heartbeat of the next attempt: %v", err)
		}
	})

	t.Run("a_task_has_at_most_max_artifacts_names", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		task := e.submit(queue.SubmitRequest{}, t0)
		if _, _, err := e.q.ReserveArtifact(ctx, queue.ArtifactRequest{ID: task.Ref(), Name: "a.txt", TTL: time.Hour}, t0); err != nil {
			t.Fatal(err)
		}
		// Fill the names up to one short of the bound, in place.
		obj, err := e.s.Get(ctx, queue.TaskKey(task.Queue, task.ID))
		if err != nil {
			t.Fatal(err)
		}
		var rec map[string]any
		if err := json.Unmarshal(obj.Body, &rec); err != nil {
			t.Fatal(err)
		}
		names := []any{"a.txt"}
		for i := 1; i < queue.MaxArtifacts-1; i++ {
			names = append(names, fmt.Sprintf("n%d", i))
		}
		rec["artifact_names"] = names
		body, _ := json.Marshal(rec)
		if _, err := e.s.PutIfMatch(ctx, queue.TaskKey(task.Queue, task.ID), body, obj.ETag); err != nil {
			t.Fatal(err)
		}
		if _, _, err := e.q.ReserveArtifact(ctx, queue.ArtifactRequest{ID: task.Ref(), Name: "last.txt", TTL: time.Hour}, t0.Add(time.Second)); err != nil {
			t.Fatalf("the last name allowed: %v", err)
		}
		before := e.raw(task.ID)
		_, _, err = e.q.ReserveArtifact(ctx, queue.ArtifactRequest{ID: task.Ref(), Name: "one-more.txt", TTL: time.Hour}, t0.Add(2*time.Second))
		var ve *queue.ValidationError
		if !errors.As(err, &ve) || ve.Field != "name" || !errors.Is(err, queue.ErrTooLarge) {
			t.Fatalf("a name past the bound: %v", err)
		}
		if string(e.raw(task.ID)) != string(before) {
			t.Fatal("the refused name wrote the record")
		}
		// A name the task has is still fine.
		if _, _, err := e.q.ReserveArtifact(ctx, queue.ArtifactRequest{ID: task.Ref(), Name: "a.txt", TTL: time.Hour}, t0.Add(3*time.Second)); err != nil {
			t.Fatalf("a name the task has: %v", err)
		}
		if got := e.get(task.ID); len(got.ArtifactNames) != queue.MaxArtifacts {
			t.Fatalf("%d names recorded", len(got.ArtifactNames))
		}
	})

	t.Run("a_refused_submit_does_not_auto_declare_its_queue", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f) // auto_declare: RequireDeclared is off
		id := queue.NewID(t0)
		if _, err := e.q.In("a").Submit(ctx, queue.SubmitRequest{ID: id, TaskType: "x"}, t0); err != nil {
			t.Fatal(err)
		}
		// (An id another request made in queue a is no refusal in queue
		// fresh: ids are per queue.)
		if res, err := e.q.In("a").Submit(ctx, queue.SubmitRequest{ID: id, TaskType: "y"}, t0); err == nil {
			t.Fatalf("another request with a taken id was accepted: %+v", res)
		}
		refused := []queue.SubmitRequest{
			{TaskType: "x", Queue: "fresh", Input: json.RawMessage(`{`)}, // a bad field
			{TaskType: "x", Queue: "fresh", ParentID: queue.NewID(t0)},   // no such parent
		}
		for _, req := range refused {
			if _, err := e.q.Submit(ctx, req, t0.Add(time.Second)); err == nil {
				t.Fatalf("%+v was accepted", req)
			}
		}
		if _, err := e.decls.Get(ctx, "fresh", t0.Add(time.Second)); !errors.Is(err, queue.ErrQueueNotFound) {
			t.Fatalf("queue fresh after refused submits: %v, want not declared", err)
		}
		if _, err := e.q.Submit(ctx, queue.SubmitRequest{TaskType: "x", Queue: "fresh"}, t0.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		if _, err := e.decls.Get(ctx, "fresh", t0.Add(time.Second)); err != nil {
			t.Fatalf("queue fresh after an accepted submit: %v", err)
		}
	})

	for _, withID := range []bool{true, false} {
		name := "a_lost_create_whose_task_was_claimed_before_the_reread_is_recognised_as_its_own"
		if !withID {
			name += "_without_an_id"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, f)
			worker := e.reopen()
			var claimed []queue.Claimed
			// The create lands, its answer is lost, and before the submit
			// reads the record back a worker claims the task.
			hs := &claimAfterCreate{Store: e.s, then: func() {
				var err error
				if claimed, err = worker.Claim(ctx, queue.ClaimRequest{}, t0.Add(time.Second)); err != nil {
					t.Errorf("claim: %v", err)
				}
			}}
			req := queue.SubmitRequest{TaskType: "x", TTL: ptrTo(queue.Duration(time.Hour))}
			if withID {
				req.ID = queue.NewID(t0)
			}
			res, err := e.open(hs).Submit(ctx, req, t0)
			if !hs.fired {
				t.Fatal("the create was not intercepted")
			}
			if err != nil || res.Replayed || res.Task.ID == "" {
				t.Fatalf("submit: %+v %v, want the new task (not replayed)", res, err)
			}
			if len(claimed) != 1 || claimed[0].Task.ID != res.Task.ID {
				t.Fatalf("the worker claimed %d tasks", len(claimed))
			}
			wantTasks(t, e, 1)
			wantStatus(t, e.get(res.Task.ID), queue.StatusRunning)
		})
	}
}

// claimAfterCreate is a store whose first create of a task record lands,
// then runs then (a worker's claim), then answers as a lost answer does:
// a retryable error.
type claimAfterCreate struct {
	store.Store
	then  func()
	fired bool
}

func (s *claimAfterCreate) PutIfAbsent(ctx context.Context, key string, body []byte, opts ...store.PutOption) (string, error) {
	etag, err := s.Store.PutIfAbsent(ctx, key, body, opts...)
	var rec queue.Task // a task record, whatever the layout calls its key
	if err != nil || s.fired || json.Unmarshal(body, &rec) != nil || rec.ID == "" || rec.TaskType == "" {
		return etag, err
	}
	s.fired = true
	s.then()
	return "", store.Retryable(errors.New("the answer was lost"))
}

func ptrTo[T any](v T) *T { return &v }
