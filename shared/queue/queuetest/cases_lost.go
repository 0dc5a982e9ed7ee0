package queuetest

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/internal/check"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/store/storefault"
)

// Lost answers: each write of each transition lands and
// its answer is lost, the process lives on. Every case checks what the
// caller sees and what is left in the bucket: one task per id, markers
// and dedup pointers consistent, no key blocked.

// newLossEnv returns an env whose store fails chosen writes on demand.
func newLossEnv(t testing.TB, f Factory, opts ...func(*queue.Options)) (*env, *storefault.Store) {
	e := newEnv(t, f, opts...)
	fs := storefault.New(e.s)
	e.s = fs
	e.q, e.decls = queues.New(fs, e.options())
	return e, fs
}

// lose arms the next write of kind op under prefix to land with its
// answer lost.
func lose(fs *storefault.Store, op, prefix string) {
	fs.FailMatching(op, prefix, storefault.LoseAnswer, 1)
}

// wantHits fails unless the armed fault hit n writes: a case whose fault
// never fired proves nothing.
func wantHits(t testing.TB, fs *storefault.Store, n int) {
	t.Helper()
	if got := fs.Hits(); got != n {
		t.Fatalf("the armed fault hit %d writes, want %d", got, n)
	}
}

// records returns every stored task record by id.
func (e *env) records() map[string]queue.Task {
	e.t.Helper()
	out := map[string]queue.Task{}
	for _, k := range e.inQueues("/tasks/") {
		obj, err := e.s.Get(ctx, k)
		if err != nil {
			e.t.Fatalf("get %s: %v", k, err)
		}
		var task queue.Task
		if err := json.Unmarshal(obj.Body, &task); err != nil {
			e.t.Fatalf("decode %s: %v", k, err)
		}
		out[task.ID] = task
	}
	return out
}

// consistent checks the invariants a lost answer must not break: every
// marker is named by its record and every record's marker exists; every
// dedup pointer is free or names a task that holds its key (no key is
// blocked by a task that does not exist); at most one live task holds a
// key.
func (e *env) consistent() {
	e.t.Helper()
	recs := e.records()
	for id, task := range recs {
		if task.PurgedAt != nil {
			delete(recs, id) // a purge's tombstone: the task is gone
		}
	}
	named := map[string]string{}
	for id, task := range recs {
		if task.IndexKey != "" {
			named[task.IndexKey] = id
		}
	}
	markers := map[string]bool{}
	for _, k := range e.markers() {
		markers[k] = true
		if _, ok := named[k]; !ok {
			e.t.Errorf("marker %s is named by no record", k)
		}
	}
	for k, id := range named {
		if !markers[k] {
			e.t.Errorf("task %s names marker %s, which is missing", id, k)
		}
	}
	live := map[string]string{}
	for id, task := range recs {
		if task.DedupKey == "" || task.Status.Terminal() {
			continue
		}
		k := queue.DedupKey(task.Queue, task.DedupKey)
		if other, ok := live[k]; ok {
			e.t.Errorf("dedup key %q is held by two live tasks, %s and %s", task.DedupKey, other, id)
		}
		live[k] = id
	}
	for _, k := range e.inQueues("/dedup/") {
		named := e.taskIDIn(k)
		if named == "" {
			continue // released
		}
		task, ok := recs[named]
		if !ok {
			e.t.Errorf("dedup pointer %s names task %s, which does not exist", k, named)
			continue
		}
		if queue.DedupKey(task.Queue, task.DedupKey) != k {
			e.t.Errorf("dedup pointer %s names task %s, which does not hold its key", k, named)
		}
		if id, ok := live[k]; ok && id != named {
			e.t.Errorf("dedup pointer %s names %s while live task %s holds the key", k, named, id)
		}
	}
}

func wantTasks(t testing.TB, e *env, n int) {
	t.Helper()
	if got := len(e.inQueues("/tasks/")); got != n {
		t.Fatalf("%d task records, want %d", got, n)
	}
}

func runLost(t *testing.T, f Factory) {
	runLostSubmit(t, f)
	runLostLease(t, f)
	runLostManage(t, f)
	runIDBudget(t, f)
	runIDRace(t, f)
}

func runLostSubmit(t *testing.T, f Factory) {
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

func runLostLease(t *testing.T, f Factory) {
	t.Run("a_claim_whose_answer_was_lost_still_leases_the_task", func(t *testing.T) {
		t.Parallel()
		e, fs := newLossEnv(t, f)
		a := e.submit(queue.SubmitRequest{}, t0)
		lose(fs, storefault.OpPutIfMatch, "q/default/tasks/")
		c := e.claimOne(t0)
		wantHits(t, fs, 1)
		got := e.get(a.Ref())
		if got.Status != queue.StatusRunning || got.LeaseToken != c.Lease.Token {
			t.Fatalf("record: %s token %q, want running under %q", got.Status, got.LeaseToken, c.Lease.Token)
		}
		e.claimNone(t0)
		e.consistent()
	})

	t.Run("a_heartbeat_whose_answer_was_lost_extends_the_lease_and_its_retry_answers_the_same", func(t *testing.T) {
		t.Parallel()
		e, fs := newLossEnv(t, f)
		e.submit(queue.SubmitRequest{}, t0)
		c := e.claimOne(t0)
		lose(fs, storefault.OpPutIfMatch, "q/default/tasks/")
		hb, err := e.q.Heartbeat(ctx, queue.HeartbeatRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token, LeaseFor: 10 * time.Minute}, t0.Add(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		wantHits(t, fs, 1)
		wantTime(t, "lease expiry", &hb.Lease.ExpiresAt, t0.Add(11*time.Minute))
		again, err := e.q.Heartbeat(ctx, queue.HeartbeatRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token, LeaseFor: 10 * time.Minute}, t0.Add(time.Minute))
		if err != nil || again.Lease.Token != c.Lease.Token || !again.Lease.ExpiresAt.Equal(hb.Lease.ExpiresAt) {
			t.Fatalf("retry: %+v, %v", again.Lease, err)
		}
		e.consistent()
	})

	type op struct {
		name string
		do   func(q *queue.Queue, c queue.Claimed, now time.Time) (queue.Task, error)
		want queue.Status
	}
	ops := []op{
		{"complete", func(q *queue.Queue, c queue.Claimed, now time.Time) (queue.Task, error) {
			return q.Complete(ctx, queue.CompleteRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token, Output: []byte(`{"ok":true}`)}, now)
		}, queue.StatusCompleted},
		{"fail", func(q *queue.Queue, c queue.Claimed, now time.Time) (queue.Task, error) {
			return q.Fail(ctx, queue.FailRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token, Error: "boom"}, now)
		}, queue.StatusPending},
		{"fail_for_good", func(q *queue.Queue, c queue.Claimed, now time.Time) (queue.Task, error) {
			no := false
			return q.Fail(ctx, queue.FailRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token, Error: "boom", Retryable: &no}, now)
		}, queue.StatusFailed},
		{"reschedule", func(q *queue.Queue, c queue.Claimed, now time.Time) (queue.Task, error) {
			return q.Reschedule(ctx, queue.RescheduleRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token, Delay: queue.Duration(time.Minute)}, now)
		}, queue.StatusPending},
		{"cancel_acknowledgement", func(q *queue.Queue, c queue.Claimed, now time.Time) (queue.Task, error) {
			return q.AckCancel(ctx, queue.AckCancelRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token}, now)
		}, queue.StatusCancelled},
	}
	for _, o := range ops {
		t.Run("a_"+o.name+"_whose_answer_was_lost_lands_once_and_its_retry_answers_the_same", func(t *testing.T) {
			e, fs := newLossEnv(t, f)
			e.submit(queue.SubmitRequest{DedupKey: "k"}, t0)
			c := e.claimOne(t0)
			lose(fs, storefault.OpPutIfMatch, "q/default/tasks/")
			first, err := o.do(e.q, c, t0.Add(time.Second))
			if err != nil {
				t.Fatal(err)
			}
			wantHits(t, fs, 1)
			wantStatus(t, first, o.want)
			raw := string(e.raw(c.Task.Ref()))
			// The client never saw that answer and retries, in a fresh process.
			again, err := o.do(e.reopen(), c, t0.Add(2*time.Second))
			if err != nil {
				t.Fatalf("retry: %v", err)
			}
			if again.Status != first.Status || again.Attempt != first.Attempt || !again.UpdatedAt.Equal(first.UpdatedAt) {
				t.Fatalf("retry answered %s attempt %d, want %s attempt %d", again.Status, again.Attempt, first.Status, first.Attempt)
			}
			if string(e.raw(c.Task.Ref())) != raw {
				t.Fatal("the retry wrote the record again")
			}
			e.consistent()
		})
	}

	t.Run("a_lease_operation_retried_as_another_operation_is_still_refused", func(t *testing.T) {
		t.Parallel()
		e, _ := newLossEnv(t, f)
		e.submit(queue.SubmitRequest{}, t0)
		c := e.claimOne(t0)
		if _, err := e.q.Complete(ctx, queue.CompleteRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token}, t0); err != nil {
			t.Fatal(err)
		}
		// Another operation with the ended token did not happen: a
		// conflict naming the token, never a replay of the completion.
		_, err := e.q.Fail(ctx, queue.FailRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token, Error: "x"}, t0)
		wantLeaseConflict(t, "a fail with the token a completion ended", err)
		_, err = e.q.Complete(ctx, queue.CompleteRequest{ID: c.Task.Ref(), LeaseToken: "not-the-token"}, t0)
		check.Err(t, err, queue.ErrNotRunning)
	})

	t.Run("a_fail_retried_after_the_task_was_claimed_again_does_not_fail_the_new_attempt", func(t *testing.T) {
		t.Parallel()
		e, _ := newLossEnv(t, f)
		a := e.submit(queue.SubmitRequest{}, t0)
		c := e.claimOne(t0)
		if _, err := e.q.Fail(ctx, queue.FailRequest{ID: a.Ref(), LeaseToken: c.Lease.Token, Error: "x"}, t0); err != nil {
			t.Fatal(err)
		}
		c2 := e.claimOne(t0.Add(time.Hour))
		// The first worker's token is older than the task's latest claim:
		// a mismatch, never a 200 showing the new attempt running.
		_, err := e.q.Fail(ctx, queue.FailRequest{ID: a.Ref(), LeaseToken: c.Lease.Token, Error: "x"}, t0.Add(time.Hour))
		check.Err(t, err, queue.ErrLeaseMismatch)
		if got := e.get(a.ID); got.Status != queue.StatusRunning || got.LeaseToken != c2.Lease.Token {
			t.Fatalf("after the retried fail: %s", got.Status)
		}
		if _, err := e.q.Complete(ctx, queue.CompleteRequest{ID: a.Ref(), LeaseToken: c2.Lease.Token}, t0.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	})
}

func runLostManage(t *testing.T, f Factory) {
	t.Run("a_queue_update_and_delete_whose_answers_were_lost_are_recognised", func(t *testing.T) {
		e, fs := newLossEnv(t, f)
		e.declare(queues.Declaration{Name: "a"}, t0)
		lose(fs, storefault.OpPutIfMatch, "q/a/queue.json")
		d, created, err := e.decls.Declare(ctx, queues.Declaration{Name: "a", MaxConcurrency: 5}, t0.Add(time.Second))
		if err != nil || created || d.MaxConcurrency != 5 {
			t.Fatalf("update: %+v created=%v %v", d, created, err)
		}
		wantHits(t, fs, 1)
		if got, err := e.reopenDecls().Get(ctx, "a", t0.Add(time.Second)); err != nil || got.MaxConcurrency != 5 {
			t.Fatalf("stored: %+v %v", got, err)
		}
		lose(fs, storefault.OpPutIfMatch, "q/a/queue.json")
		if err := e.decls.Delete(ctx, "a", t0.Add(2*time.Second)); err != nil {
			t.Fatalf("delete: %v", err)
		}
		wantHits(t, fs, 1)
		if _, err := e.reopenDecls().Get(ctx, "a", t0.Add(2*time.Second)); !errors.Is(err, queue.ErrQueueNotFound) {
			t.Fatalf("after the delete: %v", err)
		}
	})

	t.Run("a_dedup_pointer_left_by_a_conflicting_submit_of_a_taken_id_does_not_hold_its_key", func(t *testing.T) {
		e := newEnv(t, f)
		x := e.submit(queue.SubmitRequest{ID: queue.NewID(t0), DedupKey: "k1"}, t0)
		// A submit of x's id with another body and key k2 took k2's
		// pointer and crashed before its (refused) create: the pointer
		// names x, a live task that does not hold k2.
		body, _ := json.Marshal(map[string]any{"task_id": x.ID, "created_at": t0})
		if _, err := e.s.PutIfAbsent(ctx, queue.DedupKey(queue.DefaultQueue, "k2"), body); err != nil {
			t.Fatal(err)
		}
		res, err := e.q.Submit(ctx, queue.SubmitRequest{TaskType: "email.send", DedupKey: "k2"}, t0.Add(5*time.Minute))
		if err != nil || res.Deduplicated || res.Task.ID == x.ID || res.Task.DedupKey != "k2" {
			t.Fatalf("a submit with k2: %+v %v", res, err)
		}
		e.consistent()
		// Nor does it stop a retry of the task that holds the key.
		f := e.submit(queue.SubmitRequest{DedupKey: "k3"}, t0)
		if _, err := e.q.Cancel(ctx, f.Ref(), t0); err != nil {
			t.Fatal(err)
		}
		obj, err := e.s.Get(ctx, queue.DedupKey(queue.DefaultQueue, "k3"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.s.PutIfMatch(ctx, queue.DedupKey(queue.DefaultQueue, "k3"), body, obj.ETag); err != nil {
			t.Fatal(err)
		}
		if got, err := e.q.Retry(ctx, f.Ref(), t0.Add(5*time.Minute)); err != nil || got.Status != queue.StatusPending {
			t.Fatalf("retry of the task with k3: %v %v", got.Status, err)
		}
		e.consistent()
	})

	t.Run("a_cancel_whose_answer_was_lost_is_recognised", func(t *testing.T) {
		t.Parallel()
		e, fs := newLossEnv(t, f)
		a := e.submit(queue.SubmitRequest{DedupKey: "k"}, t0)
		lose(fs, storefault.OpPutIfMatch, "q/default/tasks/")
		got, err := e.q.Cancel(ctx, a.Ref(), t0)
		if err != nil {
			t.Fatal(err)
		}
		wantHits(t, fs, 1)
		wantStatus(t, got, queue.StatusCancelled)
		e.consistent()
		res, err := e.q.Submit(ctx, queue.SubmitRequest{TaskType: "email.send", DedupKey: "k"}, t0)
		if err != nil || res.Deduplicated {
			t.Fatalf("the key is not free: %+v, %v", res, err)
		}
	})

	for _, c := range []struct{ name, op, prefix string }{
		{"record", storefault.OpPutIfMatch, "q/default/tasks/"},
		{"dedup_pointer", storefault.OpPutIfMatch, "q/default/dedup/"},
		{"marker", storefault.OpPut, "q/default/index/ready/"},
	} {
		t.Run("a_retry_whose_"+c.name+"_answer_was_lost_is_recognised", func(t *testing.T) {
			e, fs := newLossEnv(t, f)
			a := e.submit(queue.SubmitRequest{DedupKey: "k"}, t0)
			if _, err := e.q.Cancel(ctx, a.Ref(), t0); err != nil {
				t.Fatal(err)
			}
			lose(fs, c.op, c.prefix)
			got, err := e.q.Retry(ctx, a.Ref(), t0.Add(time.Second))
			if err != nil {
				t.Fatal(err)
			}
			wantHits(t, fs, 1)
			wantStatus(t, got, queue.StatusPending)
			e.consistent()
			res, err := e.q.Submit(ctx, queue.SubmitRequest{TaskType: "email.send", DedupKey: "k"}, t0.Add(time.Hour))
			if err != nil || !res.Deduplicated || res.Task.ID != a.ID {
				t.Fatalf("the key: %+v, %v", res, err)
			}
		})
	}

	for _, c := range []struct{ name, op, prefix string }{
		{"record", storefault.OpPutIfMatch, "q/default/tasks/"},
		{"outbox_entry", storefault.OpPut, "sweep/"},
	} {
		t.Run("an_expire_whose_"+c.name+"_answer_was_lost_is_recognised_and_owes_one_event", func(t *testing.T) {
			e, fs := newLossEnv(t, f)
			a := e.submit(queue.SubmitRequest{}, t0)
			lose(fs, c.op, c.prefix)
			got, err := e.q.Expire(ctx, a.Ref(), t0)
			if err != nil {
				t.Fatal(err)
			}
			wantHits(t, fs, 1)
			wantStatus(t, got, queue.StatusExpired)
			e.consistent()
			pub := &recorder{}
			e.sweep(t0.Add(time.Minute), pub)
			if evs := byTask(t, pub.take()); len(evs) != 1 {
				t.Fatalf("%d events, want 1", len(evs))
			}
		})

		t.Run("a_sweep_whose_event_note_on_the_"+c.name+"_answer_was_lost_publishes_once", func(t *testing.T) {
			e, fs := newLossEnv(t, f)
			a := e.submit(queue.SubmitRequest{}, t0)
			if _, err := e.q.Expire(ctx, a.Ref(), t0); err != nil {
				t.Fatal(err)
			}
			if c.op == storefault.OpPut {
				lose(fs, storefault.OpDelete, c.prefix) // the outbox entry's delete
			} else {
				lose(fs, c.op, c.prefix) // the note of expiry_event_sent_at
			}
			pub := &recorder{}
			if _, err := e.q.Sweep(ctx, t0.Add(time.Minute), queue.SweepOptions{Publisher: pub}); err != nil {
				t.Fatal(err)
			}
			wantHits(t, fs, 1)
			e.sweep(t0.Add(2*time.Minute), pub)
			e.sweep(t0.Add(3*time.Minute), pub)
			if evs := byTask(t, pub.take()); len(evs) != 1 {
				t.Fatalf("%d events, want 1", len(evs))
			}
			if got := e.get(a.Ref()); got.ExpiryEventSentAt == nil {
				t.Fatal("the event is still owed")
			}
			if h := e.hints(); len(h) != 0 {
				t.Fatalf("hints left: %v", h)
			}
		})

		t.Run("a_sweep_whose_"+c.name+"_answer_was_lost_expires_the_task_once", func(t *testing.T) {
			e, fs := newLossEnv(t, f)
			a := e.submit(queue.SubmitRequest{TTL: check.Dur("1m")}, t0)
			lose(fs, c.op, c.prefix)
			pub := &recorder{}
			rep, err := e.q.Sweep(ctx, t0.Add(2*time.Minute), queue.SweepOptions{Publisher: pub})
			if err != nil {
				t.Fatal(err)
			}
			wantHits(t, fs, 1)
			if rep.Expired != 1 {
				t.Fatalf("sweep expired %d, want 1", rep.Expired)
			}
			wantStatus(t, e.get(a.Ref()), queue.StatusExpired)
			e.sweep(t0.Add(3*time.Minute), pub)
			if evs := byTask(t, pub.take()); len(evs) != 1 {
				t.Fatalf("%d events, want 1", len(evs))
			}
			e.consistent()
		})
	}
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
