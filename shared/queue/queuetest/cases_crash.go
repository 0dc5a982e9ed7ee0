package queuetest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/internal/check"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/store"
	"github.com/s3q/s3q/shared/store/storefault"
)

// crashCase is one transition to crash part-way through.
type crashCase struct {
	name string
	// setup brings a task to the state the transition starts from and
	// returns its id and lease token (if running).
	setup func(e *env) (id, token string)
	// run performs the transition through q (whose store fails) at now.
	run func(q *queue.Queue, id, token string, now time.Time) error
	// submits is true when the transition creates the task: a failed
	// submit may leave no task at all, which is then not a loss.
	submits bool
}

const crashLease = time.Minute

func crashCases() []crashCase {
	pending := func(req queue.SubmitRequest) func(e *env) (string, string) {
		return func(e *env) (string, string) { return e.submit(req, t0).ID, "" }
	}
	running := func(req queue.SubmitRequest) func(e *env) (string, string) {
		return func(e *env) (string, string) {
			e.submit(req, t0)
			c := e.claim(queue.ClaimRequest{LeaseFor: crashLease}, t0)[0]
			return c.Task.Ref(), c.Lease.Token
		}
	}
	failed := func(e *env) (string, string) {
		id, tok := running(queue.SubmitRequest{MaxAttempts: 1})(e)
		if _, err := e.q.Fail(ctx, queue.FailRequest{ID: id, LeaseToken: tok, Error: "x"}, t0); err != nil {
			e.t.Fatal(err)
		}
		// The sweep publishes its Task Dead-Lettered event; only then may it be retried.
		if _, err := e.q.Sweep(ctx, t0, queue.SweepOptions{}); err != nil {
			e.t.Fatal(err)
		}
		return id, ""
	}
	return []crashCase{
		{name: "submit", submits: true, setup: func(*env) (string, string) { return "", "" },
			run: func(q *queue.Queue, _, _ string, now time.Time) error {
				_, err := q.Submit(ctx, queue.SubmitRequest{TaskType: "x", TTL: check.Dur("1h")}, now)
				return err
			}},
		{name: "submit_with_dedup_key", submits: true, setup: func(*env) (string, string) { return "", "" },
			run: func(q *queue.Queue, _, _ string, now time.Time) error {
				_, err := q.Submit(ctx, queue.SubmitRequest{TaskType: "x", DedupKey: "k"}, now)
				return err
			}},
		{name: "claim", setup: pending(queue.SubmitRequest{}),
			run: func(q *queue.Queue, _, _ string, now time.Time) error {
				_, err := q.Claim(ctx, queue.ClaimRequest{LeaseFor: crashLease}, now)
				return err
			}},
		{name: "claim_that_expires_the_task", setup: pending(queue.SubmitRequest{TTL: check.Dur("1s")}),
			run: func(q *queue.Queue, _, _ string, now time.Time) error {
				_, err := q.Claim(ctx, queue.ClaimRequest{}, now)
				return err
			}},
		{name: "heartbeat", setup: running(queue.SubmitRequest{}),
			run: func(q *queue.Queue, id, tok string, now time.Time) error {
				_, err := q.Heartbeat(ctx, queue.HeartbeatRequest{ID: id, LeaseToken: tok, LeaseFor: crashLease}, now)
				return err
			}},
		{name: "complete", setup: running(queue.SubmitRequest{TTL: check.Dur("1h")}),
			run: func(q *queue.Queue, id, tok string, now time.Time) error {
				_, err := q.Complete(ctx, queue.CompleteRequest{ID: id, LeaseToken: tok, Output: []byte(`1`)}, now)
				return err
			}},
		{name: "fail_with_retry", setup: running(queue.SubmitRequest{TTL: check.Dur("1h")}),
			run: func(q *queue.Queue, id, tok string, now time.Time) error {
				_, err := q.Fail(ctx, queue.FailRequest{ID: id, LeaseToken: tok, Error: "x"}, now)
				return err
			}},
		{name: "fail_to_dead_letter", setup: running(queue.SubmitRequest{MaxAttempts: 1}),
			run: func(q *queue.Queue, id, tok string, now time.Time) error {
				_, err := q.Fail(ctx, queue.FailRequest{ID: id, LeaseToken: tok, Error: "x"}, now)
				return err
			}},
		{name: "reschedule", setup: running(queue.SubmitRequest{}),
			run: func(q *queue.Queue, id, tok string, now time.Time) error {
				_, err := q.Reschedule(ctx, queue.RescheduleRequest{ID: id, LeaseToken: tok, Delay: queue.Duration(time.Minute)}, now)
				return err
			}},
		{name: "cancel_pending", setup: pending(queue.SubmitRequest{}),
			run: func(q *queue.Queue, id, _ string, now time.Time) error {
				_, err := q.Cancel(ctx, id, now)
				return err
			}},
		{name: "ack_cancel", setup: running(queue.SubmitRequest{}),
			run: func(q *queue.Queue, id, tok string, now time.Time) error {
				_, err := q.AckCancel(ctx, queue.AckCancelRequest{ID: id, LeaseToken: tok}, now)
				return err
			}},
		{name: "expire_by_hand", setup: pending(queue.SubmitRequest{}),
			run: func(q *queue.Queue, id, _ string, now time.Time) error {
				_, err := q.Expire(ctx, id, now)
				return err
			}},
		{name: "retry_by_hand", setup: failed,
			run: func(q *queue.Queue, id, _ string, now time.Time) error {
				_, err := q.Retry(ctx, id, now)
				return err
			}},
	}
}

func runCrash(t *testing.T, f Factory) {
	for _, cc := range crashCases() {
		writes := countWrites(t, f, cc)
		if writes == 0 {
			t.Fatalf("%s makes no write", cc.name)
		}
		for _, mode := range []storefault.FaultMode{storefault.FailBefore, storefault.FailAfter} {
			modeName := map[storefault.FaultMode]string{storefault.FailBefore: "before", storefault.FailAfter: "after"}[mode]
			for n := 1; n <= writes; n++ {
				name := fmt.Sprintf("a_crash_%s_write_%d_of_%d_of_%s_loses_nothing", modeName, n, writes, cc.name)
				t.Run(name, func(t *testing.T) { crashOnce(t, f, cc, n, mode) })
			}
		}
	}
}

// countWrites runs cc once without a crash and counts its writes.
func countWrites(t *testing.T, f Factory, cc crashCase) int {
	e := newEnv(t, f)
	id, tok := cc.setup(e)
	counting := store.NewCounting(e.s)
	if err := cc.run(e.open(counting), id, tok, t0.Add(time.Second)); err != nil {
		t.Fatalf("%s without a crash: %v", cc.name, err)
	}
	c := counting.Counts()
	return int(c.Put + c.Delete)
}

// crashOnce crashes cc at its n-th write and checks that a fresh process
// finds, repairs and finishes everything.
func crashOnce(t *testing.T, f Factory, cc crashCase, n int, mode storefault.FaultMode) {
	e := newEnv(t, f)
	id, tok := cc.setup(e)
	faulty := storefault.New(e.s)
	crashing := e.open(faulty)
	crashAt := t0.Add(time.Second)
	faulty.Fail(n, mode)
	err := cc.run(crashing, id, tok, crashAt)
	if !faulty.Fired() {
		t.Fatalf("write %d never happened (err %v)", n, err)
	}
	// err may be nil: a lost best-effort write (a marker delete) does not
	// fail the call, and the next scan repairs it.
	faulty.Disarm()

	// Find the task when the crashed transition made it.
	if cc.submits {
		keys := e.inQueues("/tasks/")
		if len(keys) > 1 {
			t.Fatalf("a crashed submit made %d tasks", len(keys))
		}
		if err == nil && len(keys) == 0 {
			t.Fatal("submit returned success but no task exists")
		}
		if len(keys) == 0 {
			recoverAll(t, e, crashAt)
			if m := e.markers(); len(m) != 0 {
				t.Fatalf("markers left after a failed submit: %v", m)
			}
			return
		}
		id = strings.TrimSuffix(keys[0][strings.LastIndexByte(keys[0], '/')+1:], ".json")
	}

	// Nothing runs twice while a lease is valid: a fresh process claiming
	// at the crash time must not get a task someone still holds.
	before := e.get(id)
	if before.Status == queue.StatusRunning && before.LeaseExpiresAt != nil && crashAt.Before(*before.LeaseExpiresAt) {
		other := e.reopen()
		cs, err := other.Claim(ctx, queue.ClaimRequest{}, crashAt)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cs {
			if c.Task.ID == id {
				t.Fatalf("task %s claimed while its lease was valid", id)
			}
		}
	}

	recoverAll(t, e, crashAt)
	got := e.get(id)
	if !got.Status.Terminal() {
		t.Fatalf("after recovery task %s is %s, want it finished (nothing lost)", id, got.Status)
	}
	if m := e.markers(); len(m) != 0 {
		t.Fatalf("markers left after recovery: %v (task %s)", m, got.Status)
	}
	if h := e.hints(); len(h) != 0 {
		t.Fatalf("hints left after recovery: %v (task %s)", h, got.Status)
	}
	if (got.Status == queue.StatusExpired && got.ExpiryEventSentAt == nil) ||
		(got.Status == queue.StatusFailed && got.DeadLetterEventSentAt == nil) {
		t.Fatalf("after recovery task %s is %s with its event still owed", id, got.Status)
	}
}

// recoverAll is the next process: it claims and completes whatever is
// there, well past every lease and the stale-marker grace, and then
// sweeps, which publishes what the crashed process left owed.
func recoverAll(t *testing.T, e *env, from time.Time) {
	t.Helper()
	q := e.reopen()
	now := from.Add(time.Hour)
	defer func() {
		if _, err := q.Sweep(ctx, now, queue.SweepOptions{}); err != nil {
			t.Fatalf("recovery sweep: %v", err)
		}
	}()
	for i := 0; i < 20; i++ {
		cs, err := q.Claim(ctx, queue.ClaimRequest{MaxTasks: 10}, now)
		if err != nil {
			t.Fatalf("recovery claim: %v", err)
		}
		for _, c := range cs {
			if _, err := q.Complete(ctx, queue.CompleteRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token}, now); err != nil && !errors.Is(err, queue.ErrNotRunning) {
				t.Fatalf("recovery complete: %v", err)
			}
		}
		now = now.Add(time.Hour)
		if len(cs) == 0 && i > 2 {
			return
		}
	}
}
