package queuetest

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/internal/check"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/store"
	"github.com/s3q/s3q/shared/store/storefault"
)

// callerDeletes records, for each delete of a key containing match,
// whether it ran on the test's goroutine (the case's function is on its
// stack: the call made it before answering) or on a goroutine of its own
// (a background cleanup).
type callerDeletes struct {
	store.Store
	match string

	mu     sync.Mutex
	inline []bool
}

func (c *callerDeletes) Delete(ctx context.Context, key string) error {
	if strings.Contains(key, c.match) {
		buf := make([]byte, 64<<10)
		stack := string(buf[:runtime.Stack(buf, false)])
		c.mu.Lock()
		c.inline = append(c.inline, strings.Contains(stack, "runAttackBackgroundChild"))
		c.mu.Unlock()
	}
	return c.Store.Delete(ctx, key)
}

// A child's children/ marker is written again, same key, when the child
// is retried. Under BackgroundCleanup a fail's delete of it ran after the
// answer: in a Lambda container frozen after its answer and thawed after
// the child's retry, it deleted the revived child's marker, and the
// cascade of its parent's expiry then missed the child, which ran on.
// The delete runs before the answer.
func runAttackBackgroundChild(t *testing.T, f Factory) {
	t.Run("a_childs_marker_is_deleted_before_its_fail_under_background_cleanup_answers", func(t *testing.T) {
		e := newEnv(t, f)
		parent := e.submit(queue.SubmitRequest{TaskType: "parent", TTL: check.Dur("1h")}, t0)
		child := e.submit(queue.SubmitRequest{ParentID: parent.ID, TTL: check.Dur("5h"), MaxAttempts: 1}, t0)
		c := e.claim(queue.ClaimRequest{TaskTypes: []string{child.TaskType}}, t0)[0]
		cd := &callerDeletes{Store: e.s, match: "/children/"}
		o := e.options()
		o.Core.BackgroundCleanup = true
		w := queues.NewQueue(cd, o)
		if err := failTask(w, child.Ref(), c.Lease.Token, t0); err != nil {
			t.Fatal(err)
		}
		w.Flush()
		if len(cd.inline) != 1 || !cd.inline[0] {
			t.Fatalf("deletes of the child's marker (true: before the answer): %v, want [true]", cd.inline)
		}
		// Revived, the child is found by its parent's cascade.
		e.sweep(t0, nil)
		if _, err := e.reopen().Retry(ctx, child.Ref(), t0.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		e.sweep(t0.Add(61*time.Minute), nil)
		if got := e.get(child.ID); got.Status != queue.StatusExpired {
			t.Fatalf("the retried child of an expired parent is %s, want expired", got.Status)
		}
	})
}

// A parent that never expires is never cascaded: its purge is the last
// moment its children's hints can go. Without it, its flag and the
// marker of a child whose submit crashed before its record stayed for
// good, through every sweep.
func runAttackChild(t *testing.T, f Factory) {
	t.Run("a_purged_parent_leaves_no_childrens_hints_even_of_a_child_whose_submit_crashed", func(t *testing.T) {
		e := newEnv(t, f)
		p := e.submit(queue.SubmitRequest{TaskType: "parent"}, t0)
		e.submit(queue.SubmitRequest{TaskType: "child", ParentID: p.ID}, t0) // a child that finishes normally
		fs := storefault.New(e.s)
		fs.FailMatching("", "q/default/tasks/", storefault.FailBefore, 1000)
		_, err := e.open(fs).Submit(ctx, queue.SubmitRequest{TaskType: "child", ParentID: p.ID}, t0) // crashes before its record
		fs.Disarm()
		if err == nil {
			t.Fatal("the child's submit succeeded though its record write failed")
		}
		now := t0.Add(time.Hour)
		for _, c := range e.claim(queue.ClaimRequest{MaxTasks: 10}, now) {
			if _, err := e.q.Complete(ctx, queue.CompleteRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token}, now); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := e.q.Purge(ctx, queue.BulkRequest{Queue: "default", Status: queue.StatusCompleted}, now); err != nil {
			t.Fatal(err)
		}
		for i := 1; i <= 3; i++ {
			e.sweep(now.Add(time.Duration(i)*24*time.Hour), nil)
		}
		if r := e.inQueues("/tasks/"); len(r) != 0 {
			t.Fatalf("records left after the purge: %v", r)
		}
		if h := e.hints(); len(h) != 0 {
			t.Fatalf("hints left after the parent's purge and three sweeps: %v", h)
		}
	})
}

// runAttackRaceChildrenCases are the children cases of runAttackRace (groups.go).
func runAttackRaceChildrenCases(t *testing.T, f Factory) {
	// A child retried while its parent expires: the retry read the
	// parent before the sweep expired it, and the sweep's cascade listed
	// the parent's children before the child's marker existed.
	for _, at := range []struct{ name, match, op string }{
		{"before_its_first_write", "/", ""},
		{"between_its_hints_and_its_record", "/tasks/", "put"},
	} {
		t.Run("a_child_retried_while_its_parent_expires_"+at.name+"_does_not_outlive_it", func(t *testing.T) {
			e := newEnv(t, f)
			parent := e.submit(queue.SubmitRequest{TaskType: "parent", TTL: check.Dur("1h")}, t0)
			child := e.submit(queue.SubmitRequest{ParentID: parent.ID, TTL: check.Dur("5h"), MaxAttempts: 1}, t0)
			c := e.claim(queue.ClaimRequest{TaskTypes: []string{child.TaskType}}, t0)[0]
			if c.Task.ID != child.ID {
				t.Fatalf("claimed %s, want the child %s", c.Task.ID, child.ID)
			}
			if err := failTask(e.q, child.Ref(), c.Lease.Token, t0); err != nil {
				t.Fatal(err)
			}
			e.sweep(t0, nil)
			now := t0.Add(61 * time.Minute)
			q, h := e.interleave(at.match, at.op, func() { e.sweep(now, nil) })
			_, err := q.Retry(ctx, child.Ref(), now)
			wantFired(t, h)
			if got := e.get(parent.ID); got.Status != queue.StatusExpired {
				t.Fatalf("parent is %s, want expired", got.Status)
			}
			got := e.get(child.ID)
			if err == nil && got.Status != queue.StatusExpired {
				t.Fatalf("the retried child of an expired parent is %s, want expired (parent_expired)", got.Status)
			}
			if err != nil && got.Status != queue.StatusFailed {
				t.Fatalf("a refused retry (%v) left the child %s", err, got.Status)
			}
			e.claimNone(now)
			e.sweep(now.Add(time.Hour), nil)
			e.consistent()
			if h := e.liveHints(); len(h) != 0 {
				t.Fatalf("hints left: %v", h)
			}
		})
	}
}

// The child's marker under its parent and the parent's flag
// (side_child.go).
func runSideChild(t *testing.T, f Factory) {
	childKey := func(parent, child string) string { return "q/default/children/" + parent + "/" + child }
	flagKey := func(parent string) string { return "q/default/children/" + parent + ".flag" }

	t.Run("a_child_has_its_marker_while_it_is_live_and_its_parent_keeps_its_flag", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		parent := e.submit(queue.SubmitRequest{TTL: check.Dur("1h")}, t0)
		child := e.submit(queue.SubmitRequest{ParentID: parent.ID}, t0)
		wantKeys(t, "child hints after the submit", e.inQueues("/children/"), childKey(parent.ID, child.ID), flagKey(parent.ID))
		if _, err := e.q.Cancel(ctx, child.Ref(), t0); err != nil {
			t.Fatal(err)
		}
		wantKeys(t, "child hints after the cancel", e.inQueues("/children/"), flagKey(parent.ID))
		if _, err := e.q.Retry(ctx, child.Ref(), t0.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		wantKeys(t, "child hints after the retry", e.inQueues("/children/"), childKey(parent.ID, child.ID), flagKey(parent.ID))
		if _, err := e.q.Cancel(ctx, child.Ref(), t0.Add(2*time.Second)); err != nil {
			t.Fatal(err)
		}
		wantKeys(t, "child hints after the second cancel", e.inQueues("/children/"), flagKey(parent.ID))
	})

	t.Run("a_child_submit_whose_record_write_fails_leaves_stale_hints_that_the_parents_cascade_deletes", func(t *testing.T) {
		t.Parallel()
		e, fs := newLossEnv(t, f)
		parent := e.submit(queue.SubmitRequest{TTL: check.Dur("1m")}, t0)
		recordWriteFails(t, e, fs, "default", "", func() error {
			_, err := e.q.Submit(ctx, queue.SubmitRequest{TaskType: "email.send", ParentID: parent.ID}, t0)
			return err
		})
		wantTasks(t, e, 1)
		wantKeyCount(t, "child hints", e.inQueues("/children/"), 2)
		e.sweep(t0.Add(5*time.Minute), nil)
		e.sweep(t0.Add(6*time.Minute), nil)
		wantStatus(t, e.get(parent.Ref()), queue.StatusExpired)
		wantKeys(t, "child hints after the cascade", e.inQueues("/children/"))
		wantKeys(t, "hints after the cascade", e.hints())
	})

	t.Run("a_child_retry_whose_record_write_fails_leaves_the_child_cancelled_and_a_stale_marker_that_the_cascade_deletes", func(t *testing.T) {
		t.Parallel()
		e, fs := newLossEnv(t, f)
		parent := e.submit(queue.SubmitRequest{TTL: check.Dur("1h")}, t0)
		child := e.submit(queue.SubmitRequest{ParentID: parent.ID}, t0)
		if _, err := e.q.Cancel(ctx, child.Ref(), t0); err != nil {
			t.Fatal(err)
		}
		recordWriteFails(t, e, fs, "default", child.Ref(), func() error {
			_, err := e.q.Retry(ctx, child.Ref(), t0.Add(time.Second))
			return err
		})
		wantKeys(t, "child hints", e.inQueues("/children/"), childKey(parent.ID, child.ID), flagKey(parent.ID))
		e.sweep(t0.Add(2*time.Hour), nil)
		e.sweep(t0.Add(2*time.Hour+time.Minute), nil)
		wantStatus(t, e.get(parent.Ref()), queue.StatusExpired)
		wantStatus(t, e.get(child.Ref()), queue.StatusCancelled)
		wantKeys(t, "child hints after the cascade", e.inQueues("/children/"))
	})

	for _, suffix := range []string{".flag", ""} {
		t.Run("a_child_submit_whose_parent_hint_answer_was_lost_still_joins_the_cascade"+strings.ReplaceAll(suffix, ".", "_"), func(t *testing.T) {
			t.Parallel()
			e, fs := newLossEnv(t, f)
			parent := e.submit(queue.SubmitRequest{TTL: check.Dur("1m")}, t0)
			prefix := "q/default/children/" + parent.ID + suffix
			if suffix == "" {
				prefix += "/"
			}
			lose(fs, storefault.OpPut, prefix)
			child, err := e.q.Submit(ctx, queue.SubmitRequest{TaskType: "email.send", ParentID: parent.ID}, t0)
			if err != nil {
				t.Fatal(err)
			}
			wantHits(t, fs, 1)
			e.consistent()
			wantKeyCount(t, "child hints", e.inQueues("/children/"), 2)
			e.sweep(t0.Add(2*time.Minute), nil)
			e.sweep(t0.Add(3*time.Minute), nil)
			wantStatus(t, e.get(child.Task.Ref()), queue.StatusExpired)
		})
	}

	t.Run("two_retries_of_one_cancelled_child_leave_one_winner_with_its_marker_which_the_loser_does_not_delete", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		parent := e.submit(queue.SubmitRequest{TTL: check.Dur("1h")}, t0)
		// A deadline of its own, past its parent's: only the cascade
		// expires it at 2h.
		child := e.submit(queue.SubmitRequest{ParentID: parent.ID, TTL: check.Dur("10h")}, t0)
		if _, err := e.q.Cancel(ctx, child.Ref(), t0); err != nil {
			t.Fatal(err)
		}
		e.raceRetries(t0.Add(time.Second), child.Ref(), child.Ref())
		wantStatus(t, e.get(child.Ref()), queue.StatusPending)
		wantKeys(t, "child hints", e.inQueues("/children/"), childKey(parent.ID, child.ID), flagKey(parent.ID))
		// The parent's expiry reaches the child through its marker.
		e.sweep(t0.Add(2*time.Hour), nil)
		e.sweep(t0.Add(2*time.Hour+time.Minute), nil)
		wantStatus(t, e.get(child.Ref()), queue.StatusExpired)
	})
}

// runSubmitChildrenCases are the children cases of runSubmit (groups.go).
func runSubmitChildrenCases(t *testing.T, f Factory) {

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
}

// runSweepChildrenCases are the children cases of runSweep (groups.go).
func runSweepChildrenCases(t *testing.T, f Factory) {

	t.Run("expiring_a_parent_expires_its_pending_children_and_asks_running_ones_to_cancel", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		parent := e.submit(queue.SubmitRequest{TaskType: "parent", TTL: check.Dur("10m")}, t0)
		// A parent and its children are in one queue.
		kid := e.submit(queue.SubmitRequest{ParentID: parent.ID, TTL: check.Dur("1h"), TaskType: "kid"}, t0)
		grandkid := e.submit(queue.SubmitRequest{ParentID: kid.ID, TTL: check.Dur("2h"), TaskType: "kid"}, t0)
		stopper := e.submit(queue.SubmitRequest{ParentID: parent.ID, TTL: check.Dur("1h"), TaskType: "run", OnParentExpired: queue.OnParentExpiredCancel}, t0)
		runner := e.submit(queue.SubmitRequest{ParentID: parent.ID, TTL: check.Dur("1h"), TaskType: "run"}, t0)
		if cs := e.claim(queue.ClaimRequest{TaskTypes: []string{"run"}, MaxTasks: 2, LeaseFor: 2 * time.Hour}, t0); len(cs) != 2 {
			t.Fatalf("claimed %d", len(cs))
		}
		if n := len(e.keys("q/default/children/")); n != 6 {
			t.Fatalf("%d children keys, want 4 markers and 2 parent flags", n)
		}
		pub := &recorder{}
		now := t0.Add(10 * time.Minute)
		rep := e.sweep(now, pub)
		if rep.Expired != 1 || rep.ExpiredByParent != 2 || rep.CancelRequested != 1 || rep.EventsSent != 3 {
			t.Fatalf("report: %+v", rep)
		}
		wantStatus(t, e.get(parent.Ref()), queue.StatusExpired)
		for _, id := range []string{kid.ID, grandkid.ID} {
			got := e.get(id)
			wantStatus(t, got, queue.StatusExpired)
			wantTime(t, "expired_at", got.ExpiredAt, now)
			if got.ExpiryReason != queue.ReasonParentExpired || got.ExpiryEventSentAt == nil {
				t.Fatalf("child %s: reason %q sent %v", id, got.ExpiryReason, got.ExpiryEventSentAt)
			}
		}
		if got := e.get(stopper.Ref()); got.Status != queue.StatusRunning || !got.CancelRequested {
			t.Fatalf("cancel child: %s cancel_requested=%v", got.Status, got.CancelRequested)
		}
		if got := e.get(runner.Ref()); got.Status != queue.StatusRunning || got.CancelRequested {
			t.Fatalf("run-on child: %s cancel_requested=%v", got.Status, got.CancelRequested)
		}
		evs := byTask(t, pub.take())
		if m := detail(t, evs[kid.ID]); m["reason"] != "parent_expired" || m["parent_id"] != parent.ID {
			t.Fatalf("child event: %v", m)
		}
		if m := detail(t, evs[grandkid.ID]); m["reason"] != "parent_expired" || m["parent_id"] != kid.ID {
			t.Fatalf("grandchild event: %v", m)
		}
		wantKeys(t, "hints", e.hints(), "q/default/children/"+parent.ID+"/"+stopper.ID, "q/default/children/"+parent.ID+"/"+runner.ID)
		// The running children finish; their markers go with them.
		for _, id := range []string{stopper.Ref(), runner.Ref()} {
			got := e.get(id)
			if _, err := e.q.AckCancel(ctx, queue.AckCancelRequest{ID: id, LeaseToken: got.LeaseToken}, now); err != nil {
				t.Fatal(err)
			}
		}
		wantKeys(t, "hints", e.hints())
		if rep := e.sweep(now.Add(time.Minute), pub); rep.EventsSent != 0 || rep.ExpiredByParent != 0 {
			t.Fatalf("second sweep: %+v", rep)
		}
	})

	t.Run("a_child_of_an_expired_parent_is_expired_on_arrival", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		parent := e.submit(queue.SubmitRequest{TTL: check.Dur("0s")}, t0)
		kid := e.submit(queue.SubmitRequest{ParentID: parent.ID, TTL: check.Dur("1h")}, t0)
		wantStatus(t, kid, queue.StatusExpired)
		if kid.ExpiryReason != queue.ReasonParentExpired {
			t.Fatalf("reason %q", kid.ExpiryReason)
		}
		wantKeys(t, "markers", e.markers())
		// A parent that expires while the child is being submitted: the
		// child's own check after its write catches it.
		late := e.submit(queue.SubmitRequest{TTL: check.Dur("1h")}, t0)
		other := e.reopen()
		hooked := e.open(hookStore{Store: e.s, prefix: "q/default/children/", hook: func() {
			if _, err := other.Expire(ctx, late.Ref(), t0); err != nil {
				t.Error(err)
			}
		}, once: &sync.Once{}})
		res, err := hooked.Submit(ctx, queue.SubmitRequest{TaskType: "x", ParentID: late.ID}, t0)
		if err != nil {
			t.Fatal(err)
		}
		wantStatus(t, res.Task, queue.StatusExpired)
		if got := e.get(res.Task.Ref()); got.Status != queue.StatusExpired || got.ExpiryReason != queue.ReasonParentExpired {
			t.Fatalf("raced child: %s %q", got.Status, got.ExpiryReason)
		}
		pub := &recorder{}
		if rep := e.sweep(t0.Add(time.Second), pub); rep.EventsSent != 4 {
			t.Fatalf("report: %+v", rep)
		}
		wantKeys(t, "hints", e.hints())
		wantKeys(t, "markers", e.markers())
	})
}

// hookStore runs hook once, just before the first Put of a key under prefix.
type hookStore struct {
	store.Store
	prefix string
	hook   func()
	once   *sync.Once
}

func (h hookStore) Put(c context.Context, key string, body []byte, opts ...store.PutOption) (string, error) {
	if strings.HasPrefix(key, h.prefix) {
		h.once.Do(h.hook)
	}
	return h.Store.Put(c, key, body, opts...)
}

// runSweepRulesChildrenCases are the children cases of runSweepRules (groups.go).
func runSweepRulesChildrenCases(t *testing.T, f Factory) {

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
}
