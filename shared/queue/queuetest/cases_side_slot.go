package queuetest

import (
	"slices"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/store/storefault"
)

// The concurrency slot of a task of a queue with max_concurrency
// (side_slot.go).
func runSideSlot(t *testing.T, f Factory) {
	t.Run("a_slot_is_held_by_its_task_while_it_runs_and_free_once_its_lease_ends", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		one, _ := e.oneSlotQueue(2)
		c := e.claim(one, t0)[0]
		e.wantHolders("one", c.Task.ID)
		if cs := e.claim(one, t0); len(cs) != 0 {
			t.Fatalf("claimed %d tasks past max_concurrency", len(cs))
		}
		if _, err := e.q.Complete(ctx, queue.CompleteRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token}, t0); err != nil {
			t.Fatal(err)
		}
		e.wantHolders("one")
		next := e.claim(one, t0)
		if len(next) != 1 || next[0].Task.ID == c.Task.ID {
			t.Fatalf("claimed %d tasks after the complete, want the other one", len(next))
		}
		e.wantHolders("one", next[0].Task.ID)
	})

	t.Run("a_claim_whose_record_write_fails_after_its_slot_landed_leaves_the_task_pending_and_the_slot_taken_over_after_its_lease", func(t *testing.T) {
		t.Parallel()
		e, fs := newLossEnv(t, f)
		one, tasks := e.oneSlotQueue(1)
		a := tasks[0]
		recordWriteFails(t, e, fs, "one", a.Ref(), func() error {
			_, err := e.q.Claim(ctx, one, t0)
			return err
		})
		wantStatus(t, e.get(a.Ref()), queue.StatusPending)
		e.wantHolders("one", a.ID)
		// Held as far as anyone can tell until the lease it names ends...
		if cs, err := e.reopen().Claim(ctx, one, t0.Add(30*time.Second)); err != nil || len(cs) != 0 {
			t.Fatalf("claim during the slot's lease: %d tasks, %v", len(cs), err)
		}
		// ...then taken over.
		cs, err := e.reopen().Claim(ctx, one, t0.Add(2*time.Minute))
		if err != nil || len(cs) != 1 || cs[0].Task.ID != a.ID {
			t.Fatalf("claim after the slot's lease: %d tasks, %v", len(cs), err)
		}
		e.wantHolders("one", a.ID)
		wantKeyCount(t, "slots", e.keys("q/one/slots/"), 1)
	})

	t.Run("a_claim_whose_slot_answer_was_lost_holds_one_slot_and_frees_it_on_complete", func(t *testing.T) {
		t.Parallel()
		e, fs := newLossEnv(t, f)
		one, _ := e.oneSlotQueue(2)
		lose(fs, storefault.OpPutIfAbsent, "q/one/slots/")
		cs, err := e.q.Claim(ctx, one, t0)
		if err != nil || len(cs) != 1 {
			t.Fatalf("claim: %d tasks, %v", len(cs), err)
		}
		wantHits(t, fs, 1)
		e.wantHolders("one", cs[0].Task.ID)
		if _, err := e.q.Complete(ctx, queue.CompleteRequest{ID: cs[0].Task.Ref(), LeaseToken: cs[0].Lease.Token}, t0); err != nil {
			t.Fatal(err)
		}
		if got := e.claim(one, t0); len(got) != 1 {
			t.Fatalf("claim after the complete: %d tasks", len(got))
		}
	})

	t.Run("a_slot_takeover_whose_answer_was_lost_is_recognised", func(t *testing.T) {
		t.Parallel()
		e, fs := newLossEnv(t, f)
		e.declare(queues.Declaration{Name: "one", MaxConcurrency: 1}, t0)
		e.submit(queue.SubmitRequest{Queue: "one"}, t0)
		e.submit(queue.SubmitRequest{Queue: "one"}, t0)
		if cs := e.claim(queue.ClaimRequest{Queue: "one", LeaseFor: time.Minute}, t0); len(cs) != 1 {
			t.Fatalf("claimed %d", len(cs))
		}
		// Its worker dies; after the lease the slot is taken over, and
		// that write's answer is lost.
		later := t0.Add(time.Minute + time.Second)
		lose(fs, storefault.OpPutIfMatch, "q/one/slots/")
		cs, err := e.reopen().Claim(ctx, queue.ClaimRequest{Queue: "one", LeaseFor: time.Minute}, later)
		if err != nil || len(cs) != 1 {
			t.Fatalf("claim: %d tasks, %v", len(cs), err)
		}
		wantHits(t, fs, 1)
		if _, err := e.q.Complete(ctx, queue.CompleteRequest{ID: cs[0].Task.Ref(), LeaseToken: cs[0].Lease.Token}, later); err != nil {
			t.Fatal(err)
		}
		// The slot was freed by the complete: the next task runs at once.
		if got := e.claim(queue.ClaimRequest{Queue: "one", LeaseFor: time.Minute}, later); len(got) != 1 {
			t.Fatalf("claim after the complete: %d tasks", len(got))
		}
	})

	t.Run("two_claimers_racing_for_one_task_under_max_concurrency_leave_one_winner_holding_one_slot", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		e.declare(queues.Declaration{Name: "two", MaxConcurrency: 2}, t0)
		a := e.submit(queue.SubmitRequest{Queue: "two"}, t0)
		p1, p2 := e.cached(a.Ref()), e.cached(a.Ref())
		req := queue.ClaimRequest{Queue: "two", LeaseFor: time.Minute}
		got := make([][]queue.Claimed, 2)
		errs := race(
			func() (err error) { got[0], err = p1.Claim(ctx, req, t0); return err },
			func() (err error) { got[1], err = p2.Claim(ctx, req, t0); return err },
		)
		if errs[0] != nil || errs[1] != nil {
			t.Fatalf("claims: %v", errs)
		}
		if n := len(got[0]) + len(got[1]); n != 1 {
			t.Fatalf("%d claims won the task, want 1", n)
		}
		won := append(got[0], got[1]...)[0]
		e.wantHolders("two", a.ID)
		if _, err := e.q.Complete(ctx, queue.CompleteRequest{ID: won.Task.Ref(), LeaseToken: won.Lease.Token}, t0); err != nil {
			t.Fatal(err)
		}
		e.wantHolders("two")
	})
}

// oneSlotQueue declares queue "one" with max_concurrency 1, submits n
// tasks to it at t0, and returns a claim of it with a one-minute lease.
func (e *env) oneSlotQueue(n int) (queue.ClaimRequest, []queue.Task) {
	e.t.Helper()
	e.declare(queues.Declaration{Name: "one", MaxConcurrency: 1}, t0)
	var tasks []queue.Task
	for range n {
		tasks = append(tasks, e.submit(queue.SubmitRequest{Queue: "one"}, t0))
	}
	return queue.ClaimRequest{Queue: "one", LeaseFor: time.Minute}, tasks
}

// wantHolders fails unless the tasks that hold a slot of the named
// queue are ids, slot by slot (a free slot holds none).
func (e *env) wantHolders(name string, ids ...string) {
	e.t.Helper()
	var held []string
	for _, k := range e.keys("q/" + name + "/slots/") {
		if id := e.taskIDIn(k); id != "" {
			held = append(held, id)
		}
	}
	if !slices.Equal(held, ids) {
		e.t.Fatalf("slots of %s held by %v, want %v", name, held, ids)
	}
}
