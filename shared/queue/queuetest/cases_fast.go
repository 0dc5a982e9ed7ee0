package queuetest

import (
	"context"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/store"
	"github.com/s3q/s3q/shared/store/storefault"
)

// The round trips of the hot paths: a Queue's cached record versions let a
// lease operation after its own claim, and a claim of its own submit, be
// one conditional write; a wrong guess costs a read, never a wrong
// answer. Background cleanup moves a lease operation's marker delete off
// the caller's path.
func runFast(t *testing.T, f Factory) {
	t.Run("a_complete_after_this_processes_claim_is_one_write_and_no_read", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		id := e.submit(queue.SubmitRequest{}, t0).Ref()
		c := store.NewCounting(e.s)
		worker, cl := e.claimedOver(c)
		c.Reset()
		done, err := worker.Complete(ctx, queue.CompleteRequest{ID: id, LeaseToken: cl.Lease.Token, Output: []byte(`1`)}, t0.Add(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		wantStatus(t, done, queue.StatusCompleted)
		if got := c.Counts(); got.Get != 0 || got.Put != 1 || got.Delete != 1 {
			t.Fatalf("complete made %v, want one PUT and the marker's DELETE, no GET", got)
		}
		if m := e.markers(); len(m) != 0 {
			t.Fatalf("markers left: %v", m)
		}
	})

	t.Run("a_claim_of_a_task_this_process_submitted_makes_no_read", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		c := store.NewCounting(e.s)
		q := e.open(c)
		if cs, err := q.Claim(ctx, queue.ClaimRequest{}, t0); err != nil || len(cs) != 0 { // lists the empty queue
			t.Fatalf("claim of an empty queue: %v %d", err, len(cs))
		}
		if _, err := q.Submit(ctx, queue.SubmitRequest{TaskType: "x"}, t0); err != nil {
			t.Fatal(err)
		}
		c.Reset()
		cs, err := q.Claim(ctx, queue.ClaimRequest{LeaseFor: time.Minute}, t0.Add(100*time.Millisecond))
		if err != nil || len(cs) != 1 {
			t.Fatalf("claim: %v %d", err, len(cs))
		}
		if got := c.Counts(); got.Get != 0 || got.Put != 1 || got.List != 0 {
			t.Fatalf("claim made %v, want one PUT: the listing (under a second old) and the record are this process's own", got)
		}
	})

	t.Run("a_claim_on_a_stale_cached_record_never_takes_a_task_another_holds", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		id := e.submit(queue.SubmitRequest{}, t0).ID // e.q caches it pending
		other := e.reopen()
		theirs, err := other.Claim(ctx, queue.ClaimRequest{LeaseFor: time.Minute}, t0)
		if err != nil || len(theirs) != 1 {
			t.Fatalf("other claim: %v %d", err, len(theirs))
		}
		if cs := e.claim(queue.ClaimRequest{}, t0.Add(time.Second)); len(cs) != 0 {
			t.Fatalf("claimed %s, which another process holds", cs[0].Task.ID)
		}
		if got := e.get(id); got.LeaseToken != theirs[0].Lease.Token || got.Attempt != 1 {
			t.Fatalf("task lease %s attempt %d, want the other process's, attempt 1", got.LeaseToken, got.Attempt)
		}
	})

	t.Run("a_complete_on_a_stale_cached_record_reads_it_once_and_lands", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		id := e.submit(queue.SubmitRequest{}, t0).Ref()
		c := store.NewCounting(e.s)
		worker, cl := e.claimedOver(c)
		// Another process (another Lambda container) heartbeats: the
		// worker's cached version is stale, and its lease looks lapsed
		// by then while it is not.
		if _, err := e.reopen().Heartbeat(ctx, queue.HeartbeatRequest{ID: id, LeaseToken: cl.Lease.Token, LeaseFor: time.Minute}, t0.Add(50*time.Second)); err != nil {
			t.Fatal(err)
		}
		c.Reset()
		done, err := worker.Complete(ctx, queue.CompleteRequest{ID: id, LeaseToken: cl.Lease.Token, Output: []byte(`{"ok":true}`)}, t0.Add(90*time.Second))
		if err != nil {
			t.Fatalf("complete under the extended lease: %v", err)
		}
		if done.Status != queue.StatusCompleted || string(done.Output) != `{"ok":true}` {
			t.Fatalf("task %s output %s", done.Status, done.Output)
		}
		if got := c.Counts(); got.Get != 1 || got.Put != 1 {
			t.Fatalf("complete made %v, want one GET (the cached version was refused) and one PUT", got)
		}
	})

	t.Run("a_heartbeat_on_a_stale_cached_record_retries_after_the_precondition", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		id := e.submit(queue.SubmitRequest{}, t0).Ref()
		c := store.NewCounting(e.s)
		worker, cl := e.claimedOver(c)
		if _, err := e.reopen().Cancel(ctx, id, t0.Add(time.Second)); err != nil { // a cancel request
			t.Fatal(err)
		}
		c.Reset()
		hb, err := worker.Heartbeat(ctx, queue.HeartbeatRequest{ID: id, LeaseToken: cl.Lease.Token, LeaseFor: time.Minute}, t0.Add(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if !hb.Task.CancelRequested {
			t.Fatal("the heartbeat did not see the cancel request another process wrote")
		}
		if got := c.Counts(); got.Get != 1 || got.Put != 2 {
			t.Fatalf("heartbeat made %v, want a refused PUT, a GET and a PUT", got)
		}
	})

	t.Run("with_background_cleanup_a_complete_answers_before_its_marker_delete", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f, func(o *queue.Options) { o.BackgroundCleanup = true })
		id := e.submit(queue.SubmitRequest{}, t0).Ref()
		c := e.claimOne(t0)
		answered := make(chan struct{})
		gated := &deleteGate{Store: e.s, open: answered}
		worker := e.open(gated)
		// The worker's cache holds the claimed record, as e.q's does.
		if _, err := worker.Heartbeat(ctx, queue.HeartbeatRequest{ID: id, LeaseToken: c.Lease.Token, LeaseFor: time.Minute}, t0); err != nil {
			t.Fatal(err)
		}
		returned := make(chan error, 1)
		go func() {
			_, err := worker.Complete(ctx, queue.CompleteRequest{ID: id, LeaseToken: c.Lease.Token}, t0.Add(time.Second))
			returned <- err
		}()
		select {
		case err := <-returned:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(time.Minute):
			t.Fatal("complete waited for its marker delete")
		}
		close(answered) // only now may the delete run
		worker.Flush()
		if m := e.markers(); len(m) != 0 {
			t.Fatalf("markers left after Flush: %v", m)
		}
		wantStatus(t, e.get(id), queue.StatusCompleted)
	})

	t.Run("with_background_cleanup_a_lost_marker_delete_is_repaired_by_the_next_scan", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f, func(o *queue.Options) { o.BackgroundCleanup = true })
		id := e.submit(queue.SubmitRequest{}, t0).Ref()
		fs := storefault.New(e.s)
		worker, cl := e.claimedOver(fs)
		fs.FailMatching(storefault.OpDelete, "q/default/index/ready/", storefault.FailBefore, 1)
		if _, err := worker.Complete(ctx, queue.CompleteRequest{ID: id, LeaseToken: cl.Lease.Token}, t0.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		worker.Flush()
		if fs.Hits() != 1 || len(e.markers()) != 1 {
			t.Fatalf("the delete was not lost (hits %d, markers %v)", fs.Hits(), e.markers())
		}
		recoverAll(t, e, t0)
		if m := e.markers(); len(m) != 0 {
			t.Fatalf("markers left after the next scan: %v", m)
		}
		wantStatus(t, e.get(id), queue.StatusCompleted)
	})

	t.Run("arrivals_wake_on_this_processes_submit_after_its_record_is_written", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		woken := e.q.Arrivals("a")
		other := e.q.Arrivals("b")
		if _, err := e.reopen().Submit(ctx, queue.SubmitRequest{TaskType: "x", Queue: "a"}, t0); err != nil {
			t.Fatal(err) // another process's submit: no signal here
		}
		select {
		case <-woken:
			t.Fatal("woken by another process's submit")
		default:
		}
		task := e.submit(queue.SubmitRequest{Queue: "a"}, t0)
		select {
		case <-woken:
		default:
			t.Fatal("not woken by this process's submit")
		}
		select {
		case <-other:
			t.Fatal("queue b woken by a submit to a")
		default:
		}
		if _, err := e.s.Get(ctx, queue.TaskKey(task.Queue, task.ID)); err != nil {
			t.Fatalf("woken before the record exists: %v", err)
		}
	})

	t.Run("a_claim_for_several_tasks_tries_them_at_once_and_gets_them_all", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		for range 5 {
			e.submit(queue.SubmitRequest{}, t0)
		}
		cs := e.reopen()
		got, err := cs.Claim(ctx, queue.ClaimRequest{MaxTasks: 5, LeaseFor: time.Minute}, t0)
		if err != nil || len(got) != 5 {
			t.Fatalf("claim: %v, %d tasks, want 5", err, len(got))
		}
		seen := map[string]bool{}
		for _, c := range got {
			if seen[c.Task.ID] || c.Task.Status != queue.StatusRunning {
				t.Fatalf("task %s twice or %s", c.Task.ID, c.Task.Status)
			}
			seen[c.Task.ID] = true
		}
	})
}

// claimedOver claims the one task of e's store at t0 for a minute through
// a new Queue over s (e's store, wrapped): a worker process whose cache
// holds the claimed record.
func (e *env) claimedOver(s store.Store) (*queue.Queue, queue.Claimed) {
	e.t.Helper()
	worker := e.open(s)
	cs, err := worker.Claim(ctx, queue.ClaimRequest{LeaseFor: time.Minute}, t0)
	if err != nil || len(cs) != 1 {
		e.t.Fatalf("claim: %v %d", err, len(cs))
	}
	return worker, cs[0]
}

// deleteGate holds every Delete until open is closed.
type deleteGate struct {
	store.Store
	open chan struct{}
}

func (g *deleteGate) Delete(ctx context.Context, key string) error {
	<-g.open
	return g.Store.Delete(ctx, key)
}
