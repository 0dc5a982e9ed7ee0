package queuetest

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/internal/check"
	"github.com/s3q/s3q/shared/queue"
)

// runSweepRules: the sweep and the transitions around it keep their
// promises — a dead-lettered task owes its event before it can be
// retried, each dead-lettering its own event; a parked lease, shortened
// or lapsed, is reclaimed when it lapses; a child of an expired parent
// stays ended; a sweep past its deadline lists nothing; racing sweeps and
// workers lose nothing.
func runSweepRules(t *testing.T, f Factory) {
	t.Run("a_dead_lettered_task_can_be_retried_only_once_its_event_is_out", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		task := e.submit(queue.SubmitRequest{MaxAttempts: 1}, t0)
		c := e.claimOne(t0)
		if got, err := e.q.Fail(ctx, queue.FailRequest{ID: task.Ref(), LeaseToken: c.Lease.Token, Error: "boom"}, t0.Add(time.Second)); err != nil || got.Status != queue.StatusFailed {
			t.Fatalf("fail: %v %s", err, got.Status)
		}
		var se *queue.StateError
		if _, err := e.q.Retry(ctx, task.Ref(), t0.Add(10*time.Second)); !errors.As(err, &se) {
			t.Fatalf("a retry before the sweep published the event: %v, want a StateError", err)
		}
		pub := &recorder{}
		e.sweep(t0.Add(time.Minute), pub)
		if n := pub.count(task.ID, queue.DetailTypeTaskDeadLettered); n != 1 {
			t.Fatalf("%d Task Dead-Lettered events, want 1", n)
		}
		if _, err := e.q.Retry(ctx, task.Ref(), t0.Add(2*time.Minute)); err != nil {
			t.Fatalf("a retry once the event is out: %v", err)
		}
	})

	t.Run("two_dead_letterings_of_one_task_make_two_events", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		task := e.submit(queue.SubmitRequest{MaxAttempts: 1}, t0)
		pub := &recorder{}
		c := e.claimOne(t0)
		if _, err := e.q.Fail(ctx, queue.FailRequest{ID: task.Ref(), LeaseToken: c.Lease.Token, Error: "one"}, t0.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		e.sweep(t0.Add(2*time.Second), pub)
		if _, err := e.q.Retry(ctx, task.Ref(), t0.Add(3*time.Second)); err != nil {
			t.Fatal(err)
		}
		c = e.claimOne(t0.Add(4 * time.Second))
		if _, err := e.q.Fail(ctx, queue.FailRequest{ID: task.Ref(), LeaseToken: c.Lease.Token, Error: "two"}, t0.Add(5*time.Second)); err != nil {
			t.Fatal(err)
		}
		e.sweep(t0.Add(time.Minute), pub)
		if n := pub.count(task.ID, queue.DetailTypeTaskDeadLettered); n != 2 {
			t.Fatalf("2 dead-letterings, %d events", n)
		}
	})

	t.Run("a_parked_task_whose_lease_was_shortened_is_reclaimed_when_it_lapses", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		task := e.submit(queue.SubmitRequest{TTL: check.Dur("10m")}, t0)
		c := e.claim(queue.ClaimRequest{LeaseFor: 12 * time.Hour}, t0)[0]
		if rep := e.sweep(t0.Add(11*time.Minute), nil); rep.Parked != 1 {
			t.Fatalf("sweep report %+v, want one parked task", rep)
		}
		// lease_for 0 is the task's timeout (5m): the lease now ends at +17m.
		if _, err := e.q.Heartbeat(ctx, queue.HeartbeatRequest{ID: task.Ref(), LeaseToken: c.Lease.Token}, t0.Add(12*time.Minute)); err != nil {
			t.Fatal(err)
		}
		// The worker dies; sweeps every minute (every few on a real
		// server) until an hour later.
		step := 1
		if f.Real {
			step = 6
		}
		for m := 18; m <= 78; m += step {
			e.sweep(t0.Add(time.Duration(m)*time.Minute), nil)
		}
		if got := e.get(task.Ref()); got.Status != queue.StatusExpired {
			t.Fatalf("the lease lapsed at +17m; at +78m the task is still %s (index_key %s, lease_expires_at %s)", got.Status, got.IndexKey, got.LeaseExpiresAt)
		}
	})

	t.Run("a_first_attempt_task_whose_worker_died_is_expired_by_the_sweep", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		task := e.submit(queue.SubmitRequest{TTL: check.Dur("10m"), TTLFrom: queue.TTLFromFirstAttempt}, t0)
		e.claim(queue.ClaimRequest{LeaseFor: time.Minute}, t0)
		pub := &recorder{}
		for _, d := range []time.Duration{time.Hour, 2 * time.Hour, 24 * time.Hour} {
			e.sweep(t0.Add(d), pub)
		}
		if got := e.get(task.Ref()); got.Status != queue.StatusExpired || pub.count(task.ID, queue.DetailTypeTaskExpired) != 1 {
			t.Fatalf("deadline %s, lease lapsed at +1m; a day later: %s, index_key %s, events %d", got.ExpiresAt, got.Status, got.IndexKey, pub.count(task.ID, queue.DetailTypeTaskExpired))
		}
	})

	t.Run("a_failed_child_of_an_expired_parent_cannot_be_retried", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		parent := e.submit(queue.SubmitRequest{TTL: check.Dur("10m")}, t0)
		kid := e.submit(queue.SubmitRequest{ParentID: parent.ID, TTL: check.Dur("10h"), TaskType: "kid", MaxAttempts: 1}, t0)
		c := e.claim(queue.ClaimRequest{TaskTypes: []string{"kid"}}, t0)[0]
		if _, err := e.q.Fail(ctx, queue.FailRequest{ID: kid.Ref(), LeaseToken: c.Lease.Token, Error: "x"}, t0); err != nil {
			t.Fatal(err)
		}
		e.sweep(t0.Add(10*time.Minute), nil) // the parent expires, and its cascade runs
		wantStatus(t, e.get(parent.Ref()), queue.StatusExpired)
		var se *queue.StateError
		if _, err := e.q.Retry(ctx, kid.Ref(), t0.Add(11*time.Minute)); !errors.As(err, &se) {
			t.Fatalf("retry of a child of an expired parent: %v, want a StateError", err)
		}
		e.sweep(t0.Add(12*time.Minute), nil)
		if cs := e.claim(queue.ClaimRequest{TaskTypes: []string{"kid"}}, t0.Add(13*time.Minute)); len(cs) != 0 {
			t.Fatal("a child of an expired parent was retried and started")
		}
	})

	t.Run("a_sweep_that_starts_past_its_deadline_lists_nothing_more", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		for i := 0; i < 200; i++ {
			e.submit(queue.SubmitRequest{Queue: "tenant-" + string(rune('a'+i%26)) + strings.Repeat("x", i/26)}, t0)
		}
		wall := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
		rep, _ := e.reopen().Sweep(ctx, t0.Add(time.Minute), queue.SweepOptions{Deadline: wall, Clock: func() time.Time { return wall.Add(time.Second) }})
		if rep.Requests.List > 2 {
			t.Fatalf("the deadline passed before the sweep began, yet it made %d LISTs (queues %d, incomplete %v)", rep.Requests.List, rep.Queues, rep.Incomplete)
		}
	})

	t.Run("sweeps_racing_workers_at_parked_lease_expiry_lose_nothing", func(t *testing.T) {
		t.Parallel()
		rounds := 30
		if f.Real {
			rounds = 3
		}
		for round := 0; round < rounds; round++ {
			sweepRace(t, f, round)
		}
	})
}

// sweepRace parks 20 running tasks, then two sweeps run at their lease
// expiry while their workers complete, heartbeat or are gone: every task
// ends completed, running with a marker it names, or expired with its
// event; no Task Expired event for a task that did not expire.
func sweepRace(t *testing.T, f Factory, round int) {
	e := newEnv(t, f)
	const n = 20
	for i := 0; i < n; i++ {
		e.submit(queue.SubmitRequest{TTL: check.Dur("10m")}, t0)
	}
	cs := e.claim(queue.ClaimRequest{LeaseFor: time.Hour, MaxTasks: n}, t0)
	if len(cs) != n {
		t.Fatalf("claimed %d of %d", len(cs), n)
	}
	e.sweep(t0.Add(11*time.Minute), nil)
	// At +30m the workers of two in three heartbeat; at +1h (the lease of
	// the rest lapsed) they act while two sweeps run.
	for i, c := range cs {
		if i%3 != 2 {
			if _, err := e.q.Heartbeat(ctx, queue.HeartbeatRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token, LeaseFor: time.Hour}, t0.Add(30*time.Minute)); err != nil {
				t.Fatal(err)
			}
		}
	}
	pub := &recorder{}
	var wg sync.WaitGroup
	want := make([]queue.Status, n)
	for i, c := range cs {
		want[i] = []queue.Status{queue.StatusCompleted, queue.StatusRunning, queue.StatusExpired}[i%3]
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			switch i % 3 {
			case 0:
				_, err = e.q.Complete(ctx, queue.CompleteRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token}, t0.Add(time.Hour))
			case 1:
				_, err = e.q.Heartbeat(ctx, queue.HeartbeatRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token, LeaseFor: time.Hour}, t0.Add(time.Hour))
			}
			if err != nil {
				t.Error(err)
			}
		}()
	}
	for k := 0; k < 2; k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := e.reopen().Sweep(ctx, t0.Add(time.Hour), queue.SweepOptions{Publisher: pub, Concurrency: 4}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	e.sweep(t0.Add(time.Hour+time.Minute), pub)
	for i, c := range cs {
		id := c.Task.ID
		got := e.get(id)
		if got.Status != want[i] {
			t.Fatalf("round %d task %s: %s, want %s", round, id, got.Status, want[i])
		}
		if got.Status == queue.StatusRunning {
			if _, err := e.s.Head(ctx, got.IndexKey); err != nil {
				t.Fatalf("running task %s names missing marker %s", id, got.IndexKey)
			}
		}
		if events := pub.count(id, queue.DetailTypeTaskExpired); (want[i] == queue.StatusExpired) != (events > 0) {
			t.Fatalf("round %d task %s (%s): %d Task Expired events", round, id, want[i], events)
		}
	}
}
