package queuetest

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/internal/check"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/store"
)

// runLostSubmitSubmitIDCases are the submit_id cases of runLostSubmit (groups.go).
func runLostSubmitSubmitIDCases(t *testing.T, f Factory) {

	t.Run("a_submit_retried_with_its_id_after_the_answer_was_lost_replays_the_task", func(t *testing.T) {
		t.Parallel()
		e, _ := newLossEnv(t, f)
		req := queue.SubmitRequest{ID: queue.NewID(t0), TaskType: "email.send", TTL: check.Dur("1h"), Input: json.RawMessage(`{"to": "a"}`)}
		first, err := e.q.Submit(ctx, req, t0)
		if err != nil {
			t.Fatal(err)
		}
		// The answer never reached the client, which retries a second
		// later, with its input spelled differently.
		req.Input = json.RawMessage(`{"to":"a"}`)
		again, err := e.reopen().Submit(ctx, req, t0.Add(time.Second))
		if err != nil || !again.Replayed || again.Task.ID != first.Task.ID || !again.Task.CreatedAt.Equal(first.Task.CreatedAt) {
			t.Fatalf("retry: %+v, %v", again, err)
		}
		wantTasks(t, e, 1)
		e.consistent() // the retry's own marker is gone
	})

	t.Run("a_submit_retried_with_its_id_and_another_request_is_a_conflict_on_id", func(t *testing.T) {
		t.Parallel()
		e, _ := newLossEnv(t, f)
		req := queue.SubmitRequest{ID: queue.NewID(t0), TaskType: "email.send"}
		if _, err := e.q.Submit(ctx, req, t0); err != nil {
			t.Fatal(err)
		}
		req.Input = json.RawMessage(`{"other":true}`)
		_, err := e.q.Submit(ctx, req, t0.Add(time.Second))
		var ce *queue.ConflictError
		if !errors.As(err, &ce) || ce.Field != "id" || !errors.Is(err, queue.ErrConflict) {
			t.Fatalf("err = %v, want a *queue.ConflictError on id", err)
		}
		wantTasks(t, e, 1)
		e.consistent()
	})
}

// runIDBudget checks that an id costs no request: a submit with one makes
// the same two writes as one without.
func runIDBudget(t *testing.T, f Factory) {
	t.Run("a_submit_with_an_id_costs_the_same_requests_as_one_without", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		q, counts := e.counted()
		if _, err := q.Submit(ctx, queue.SubmitRequest{TaskType: "warm"}, t0); err != nil { // warms what is written once per process (a wake-up)
			t.Fatal(err)
		}
		counts.Reset()
		if _, err := q.Submit(ctx, queue.SubmitRequest{TaskType: "a"}, t0); err != nil {
			t.Fatal(err)
		}
		without := counts.Counts()
		counts.Reset()
		if _, err := q.Submit(ctx, queue.SubmitRequest{ID: queue.NewID(t0), TaskType: "a"}, t0); err != nil {
			t.Fatal(err)
		}
		if with := counts.Counts(); with != without || with.Total() != 2 {
			t.Fatalf("with an id: %v; without: %v; want 2 PUTs each", with, without)
		}
	})
}

// runIDRace submits one request with one id from many goroutines at once.
func runIDRace(t *testing.T, f Factory) {
	t.Run("concurrent_submits_with_one_id_make_one_task_and_the_rest_replay_it", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		n := 4
		if f.Real {
			n = 12
		}
		req := queue.SubmitRequest{ID: queue.NewID(t0), TaskType: "email.send", DedupKey: "k"}
		type out struct {
			res queue.SubmitResult
			err error
		}
		outs := make(chan out, n)
		for i := 0; i < n; i++ {
			go func() {
				q := e.reopen() // separate processes
				res, err := q.Submit(ctx, req, t0.Add(time.Duration(i)*time.Millisecond))
				outs <- out{res, err}
			}()
		}
		created := 0
		for i := 0; i < n; i++ {
			o := <-outs
			if o.err != nil {
				// Racing takers of one dedup key may be told to retry
				// (ErrConflict); never that the id was made by a different
				// request (a *ConflictError naming a field): they are all
				// the same request.
				var ce *queue.ConflictError
				if !errors.Is(o.err, queue.ErrConflict) || errors.As(o.err, &ce) {
					t.Fatalf("submit: %v, want a task, a replay or a plain retry-later conflict", o.err)
				}
				continue
			}
			if o.res.Task.ID != req.ID || o.res.Deduplicated {
				t.Fatalf("answer: %+v", o.res)
			}
			if !o.res.Replayed {
				created++
			}
		}
		if created != 1 {
			t.Fatalf("%d submits created the task, want 1", created)
		}
		wantTasks(t, e, 1)
		e.consistent()
	})

	t.Run("concurrent_submits_of_one_id_with_and_without_a_dedup_key_make_one_task_and_block_no_key", func(t *testing.T) {
		e := newEnv(t, f)
		n := 4
		if f.Real {
			n = 12
		}
		id := queue.NewID(t0)
		reqs := []queue.SubmitRequest{
			{ID: id, TaskType: "x", DedupKey: "k"},
			{ID: id, TaskType: "x"},
			{ID: id, TaskType: "x", DedupKey: "k2"},
			{ID: id, TaskType: "x", DedupKey: "k3"},
		}
		type out struct {
			req queue.SubmitRequest
			res queue.SubmitResult
			err error
		}
		outs := make(chan out, n)
		for i := 0; i < n; i++ {
			go func() {
				q := e.reopen()
				req := reqs[i%len(reqs)]
				res, err := q.Submit(ctx, req, t0.Add(time.Duration(i)*time.Millisecond))
				outs <- out{req, res, err}
			}()
		}
		created := 0
		for i := 0; i < n; i++ {
			o := <-outs
			var ce *queue.ConflictError
			switch {
			case errors.As(o.err, &ce) && ce.Field == "id":
			case errors.Is(o.err, queue.ErrConflict): // racing takers of one key
			case o.err != nil:
				t.Fatalf("submit %+v: %v", o.req, o.err)
			case o.res.Task.ID != id || o.res.Deduplicated:
				t.Fatalf("answer: %+v", o.res)
			case !o.res.Replayed:
				created++
			}
		}
		if created != 1 {
			t.Fatalf("%d submits created the task, want 1", created)
		}
		wantTasks(t, e, 1)
		e.consistent()
		// Every key the losers took is free again: a new task gets it.
		for _, r := range reqs {
			if r.DedupKey == "" {
				continue
			}
			res, err := e.q.Submit(ctx, queue.SubmitRequest{TaskType: "x", DedupKey: r.DedupKey, Queue: r.Queue}, t0.Add(time.Second))
			if err != nil {
				t.Fatalf("key %s/%s: %v", r.Queue, r.DedupKey, err)
			}
			if res.Deduplicated && res.Task.ID != id {
				t.Fatalf("key %s/%s is held by %s", r.Queue, r.DedupKey, res.Task.ID)
			}
		}
	})
}

// runReplaySubmitIDCases are the submit_id cases of runReplay (groups.go).
func runReplaySubmitIDCases(t *testing.T, f Factory) {

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
