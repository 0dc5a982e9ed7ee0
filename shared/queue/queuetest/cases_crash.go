package queuetest

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/internal/check"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/store"
	"github.com/s3q/s3q/shared/store/storefault"
)

// attackTx is one transition to fail part-way through.
type attackTx struct {
	name  string
	setup func(e *env) attackState
	run   func(q *queue.Queue, st attackState, now time.Time) error
}

func attackTxs() []attackTx {
	parented := func(e *env) attackState {
		p := e.submit(queue.SubmitRequest{TaskType: "parent", Queue: attackQueue, TTL: check.Dur("3h")}, t0)
		return attackState{parent: p.Ref()}
	}
	pending := func(e *env) attackState {
		st := parented(e)
		st.id = e.submit(attackSubmit(bareID(st.parent)), t0).Ref()
		return st
	}
	running := func(max int, ttl string) func(e *env) attackState {
		return func(e *env) attackState {
			st := attackState{id: e.submit(queue.SubmitRequest{
				TaskType: "x", Queue: attackQueue, DedupKey: "k", TTL: check.Dur(ttl), MaxAttempts: max}, t0).Ref()}
			cs := e.claim(queue.ClaimRequest{Queue: attackQueue, LeaseFor: attackLease}, t0)
			if len(cs) != 1 || cs[0].Task.Ref() != st.id {
				e.t.Fatalf("setup claimed %d tasks, want %s", len(cs), st.id)
			}
			st.token = cs[0].Lease.Token
			return st
		}
	}
	return []attackTx{
		{name: "submit_with_dedup_parent_and_ttl", setup: parented,
			run: func(q *queue.Queue, st attackState, now time.Time) error {
				_, err := q.Submit(ctx, attackSubmit(bareID(st.parent)), now)
				return err
			}},
		{name: "claim_under_max_concurrency", setup: pending,
			run: func(q *queue.Queue, _ attackState, now time.Time) error {
				_, err := q.Claim(ctx, queue.ClaimRequest{Queue: attackQueue, LeaseFor: attackLease}, now)
				return err
			}},
		{name: "complete", setup: running(3, "2h"),
			run: func(q *queue.Queue, st attackState, now time.Time) error {
				return completeTask(q, st.id, st.token, now)
			}},
		{name: "fail_with_retry", setup: running(3, "2h"),
			run: func(q *queue.Queue, st attackState, now time.Time) error {
				return failTask(q, st.id, st.token, now)
			}},
		{name: "fail_to_dead_letter", setup: running(1, "2h"),
			run: func(q *queue.Queue, st attackState, now time.Time) error {
				return failTask(q, st.id, st.token, now)
			}},
		{name: "cancel_of_a_parent", setup: pending,
			run: func(q *queue.Queue, st attackState, now time.Time) error {
				_, err := q.Cancel(ctx, st.parent, now)
				return err
			}},
		{name: "cancel_of_a_running_child", setup: running(3, "2h"),
			run: func(q *queue.Queue, st attackState, now time.Time) error {
				_, err := q.Cancel(ctx, st.id, now)
				return err
			}},
		{name: "sweep_of_a_lapsed_lease_past_its_deadline", setup: func(e *env) attackState {
			st := running(3, "30s")(e)
			return st
		},
			run: func(q *queue.Queue, _ attackState, now time.Time) error {
				_, err := q.Sweep(ctx, now.Add(2*attackLease), queue.SweepOptions{})
				return err
			}},
		{name: "expire_via_sweep", setup: pending,
			run: func(q *queue.Queue, _ attackState, now time.Time) error {
				_, err := q.Sweep(ctx, now.Add(150*time.Minute), queue.SweepOptions{})
				return err
			}},
		{name: "retry_of_a_dedup_holder", setup: deadHolder,
			run: func(q *queue.Queue, st attackState, now time.Time) error {
				_, err := q.Retry(ctx, st.id, now)
				return err
			}},
		{name: "purge_of_a_dedup_holder", setup: deadHolder,
			run: func(q *queue.Queue, _ attackState, now time.Time) error {
				_, err := q.Purge(ctx, queue.BulkRequest{Queue: attackQueue, Status: queue.StatusFailed}, now)
				return err
			}},
		{name: "purge_of_a_pending_child", setup: pending,
			run: func(q *queue.Queue, _ attackState, now time.Time) error {
				_, err := q.Purge(ctx, queue.BulkRequest{Queue: attackQueue, Status: queue.StatusPending, TaskType: "x"}, now)
				return err
			}},
	}
}

var attackModes = []struct {
	name string
	mode storefault.FaultMode
}{
	{"dies_before", storefault.FailBefore}, {"dies_after", storefault.FailAfter}, {"loses_the_answer_of", storefault.LoseAnswer},
}

func runAttackFault(t *testing.T, f Factory) {
	background := func(o *queue.Options) { o.BackgroundCleanup = true }
	for _, tx := range attackTxs() {
		for _, bg := range []bool{false, true} {
			var opts []func(*queue.Options)
			suffix := ""
			if bg {
				// The lease operations' cleanups run after they return.
				if !strings.HasPrefix(tx.name, "complete") && !strings.HasPrefix(tx.name, "fail") {
					continue
				}
				opts, suffix = append(opts, background), "_under_background_cleanup"
			}
			writes := attackWrites(t, f, tx, opts...)
			for _, m := range attackModes {
				for n := 1; n <= writes; n++ {
					name := fmt.Sprintf("a_%s%s_that_%s_write_%d_of_%d_loses_nothing_and_doubles_nothing", tx.name, suffix, m.name, n, writes)
					t.Run(name, func(t *testing.T) { attackFaultOnce(t, f, tx, n, m.mode, opts...) })
				}
			}
		}
	}
}

// attackWrites runs tx once without a fault and counts its writes.
func attackWrites(t *testing.T, f Factory, tx attackTx, opts ...func(*queue.Options)) int {
	t.Helper()
	e := newAttackEnv(t, f, opts...)
	st := tx.setup(e)
	counting := store.NewCounting(e.s)
	q := e.open(counting)
	if err := tx.run(q, st, t0.Add(time.Second)); err != nil {
		t.Fatalf("%s without a fault: %v", tx.name, err)
	}
	q.Flush()
	c := counting.Counts()
	if c.Put+c.Delete == 0 {
		t.Fatalf("%s makes no write", tx.name)
	}
	return int(c.Put + c.Delete)
}

func attackFaultOnce(t *testing.T, f Factory, tx attackTx, n int, mode storefault.FaultMode, opts ...func(*queue.Options)) {
	e := newAttackEnv(t, f, opts...)
	st := tx.setup(e)
	faulty := storefault.New(e.s)
	q := e.open(faulty)
	at := t0.Add(time.Second)
	faulty.Fail(n, mode)
	err := tx.run(q, st, at)
	q.Flush() // background cleanups meet the fault too
	if !faulty.Fired() {
		t.Fatalf("write %d never happened (err %v)", n, err)
	}
	faulty.Disarm()
	if mode == storefault.LoseAnswer && err != nil {
		// The process lives and its caller calls again.
		if err := tx.run(q, st, at); err != nil && !isRefusal(err) {
			t.Fatalf("%s called again after its answer was lost: %v", tx.name, err)
		}
		q.Flush()
	}
	xs := 0
	for _, task := range e.records() {
		if task.TaskType == "x" {
			xs++
		}
	}
	if xs > 1 {
		t.Fatalf("%d tasks of type x after one transition, want at most 1: one was made twice", xs)
	}
	e.noDoubleRun(at)
	e.submitMeetsNoGhost(at)
	attackRecover(t, e, at)
}

// submitMeetsNoGhost submits with the fault cases' dedup key at now from
// a fresh process, as a client would right after the fault: it may be
// refused as a conflict to retry (the key is being taken), but a task it
// answers with exists, lives and holds the key.
func (e *env) submitMeetsNoGhost(now time.Time) {
	e.t.Helper()
	res, err := e.reopen().Submit(ctx, attackSubmit(""), now)
	if errors.Is(err, queue.ErrConflict) {
		return
	}
	if err != nil {
		e.t.Fatalf("submit with the key after the fault: %v", err)
	}
	got, err := e.reopen().Get(ctx, res.Task.Ref())
	if err != nil {
		e.t.Fatalf("submit with the key after the fault answered task %s (deduplicated %v), which cannot be read: %v", res.Task.ID, res.Deduplicated, err)
	}
	if got.Status.Terminal() || got.DedupKey != "k" {
		e.t.Fatalf("submit with the key after the fault answered task %s, which is %s with key %q", got.ID, got.Status, got.DedupKey)
	}
}

// isRefusal reports whether err is a refusal a repeated call may meet
// (its first call landed): not a store failure.
func isRefusal(err error) bool {
	var se *queue.StateError
	return errors.As(err, &se) || errors.Is(err, queue.ErrNotRunning) || errors.Is(err, queue.ErrNotFound) ||
		errors.Is(err, queue.ErrLeaseMismatch) || errors.Is(err, queue.ErrConflict)
}

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

// purgeCrashCases are the tasks a crashed purge starts from: pending
// with a dedup key and a deadline, and failed (its event sent) with a
// status entry.
var purgeCrashCases = []struct {
	name   string
	status queue.Status
	setup  func(e *env) string
}{
	{"pending_with_dedup_key_and_deadline", queue.StatusPending, func(e *env) string {
		return e.submit(queue.SubmitRequest{DedupKey: "k", TTL: check.Dur("1h")}, t0).ID
	}},
	{"dead_lettered_with_dedup_key", queue.StatusFailed, func(e *env) string {
		id := e.submit(queue.SubmitRequest{DedupKey: "k", MaxAttempts: 1}, t0).Ref()
		c := e.claim(queue.ClaimRequest{}, t0)[0]
		if _, err := e.q.Fail(ctx, queue.FailRequest{ID: id, LeaseToken: c.Lease.Token, Error: "x"}, t0); err != nil {
			e.t.Fatal(err)
		}
		e.sweep(t0, nil)
		return id
	}},
}

// runPurgeCrash crashes a purge before and after each of its writes: the
// task is then whole (as it was) or gone, never half; a re-run finishes
// it; and once the scans have passed, nothing of it is left and its
// dedup key is free.
func runPurgeCrash(t *testing.T, f Factory) {
	for _, pc := range purgeCrashCases {
		e := newEnv(t, f)
		pc.setup(e)
		counting := store.NewCounting(e.s)
		if _, err := e.open(counting).Purge(ctx, queue.BulkRequest{Queue: queue.DefaultQueue, Status: pc.status}, t0.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		c := counting.Counts()
		writes := int(c.Put + c.Delete)
		for _, mode := range []storefault.FaultMode{storefault.FailBefore, storefault.FailAfter} {
			modeName := map[storefault.FaultMode]string{storefault.FailBefore: "before", storefault.FailAfter: "after"}[mode]
			for n := 1; n <= writes; n++ {
				t.Run(fmt.Sprintf("a_crash_%s_write_%d_of_%d_of_a_purge_of_%s_leaves_it_whole_or_gone", modeName, n, writes, pc.name), func(t *testing.T) {
					t.Parallel()
					purgeCrashOnce(t, f, pc.status, pc.setup, n, mode)
				})
			}
		}
	}
}

func purgeCrashOnce(t *testing.T, f Factory, status queue.Status, setup func(*env) string, n int, mode storefault.FaultMode) {
	e := newEnv(t, f)
	id := setup(e)
	before := e.get(id)
	faulty := storefault.New(e.s)
	faulty.Fail(n, mode)
	req := queue.BulkRequest{Queue: queue.DefaultQueue, Status: status}
	_, err := e.open(faulty).Purge(ctx, req, t0.Add(time.Second))
	if !faulty.Fired() {
		t.Fatalf("write %d never happened (err %v)", n, err)
	}
	faulty.Disarm()

	got, gerr := e.q.Get(ctx, id)
	switch {
	case gerr == nil:
		if got.Status != before.Status || got.UpdatedAt != before.UpdatedAt {
			t.Fatalf("after the crash the task is %s (updated %s), want it whole: %s (updated %s)", got.Status, got.UpdatedAt, before.Status, before.UpdatedAt)
		}
		// Whole: a re-run purges it.
		res, err := e.reopen().Purge(ctx, req, t0.Add(2*time.Second))
		if err != nil || res.Changed != 1 {
			t.Fatalf("re-run after the crash: %+v, %v", res, err)
		}
	case errors.Is(gerr, queue.ErrNotFound):
		if res, err := e.reopen().Purge(ctx, req, t0.Add(2*time.Second)); err != nil || res.Matched != 0 {
			t.Fatalf("re-run over a purged task: %+v, %v; want nothing matched", res, err)
		}
	default:
		t.Fatal(gerr)
	}
	_, gerr = e.q.Get(ctx, id)
	check.Err(t, gerr, queue.ErrNotFound)

	// The key is free at once, whatever the crash left.
	res, err := e.reopen().Submit(ctx, queue.SubmitRequest{TaskType: "x", DedupKey: "k"}, t0.Add(3*time.Second))
	if err != nil || res.Deduplicated {
		t.Fatalf("submit with the purged task's dedup key: %+v, %v; want a new task", res, err)
	}
	// The scans that meet what is left delete it, past the grace.
	later := t0.Add(time.Hour + time.Minute)
	q := e.reopen()
	if _, err := q.Purge(ctx, queue.BulkRequest{Queue: queue.DefaultQueue, Status: queue.StatusPending}, later); err != nil {
		t.Fatal(err)
	}
	for _, s := range []queue.Status{queue.StatusFailed, queue.StatusExpired, queue.StatusCancelled} {
		// A listing repairs a status entry by the time the store stamped
		// on it, its own clock: an hour past it.
		if _, err := q.List(ctx, queue.ListRequest{Queue: queue.DefaultQueue, Status: s, Now: time.Now().Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := q.Claim(ctx, queue.ClaimRequest{}, later); err != nil {
		t.Fatal(err)
	}
	e.sweep(later, nil)
	e.wantNothingOf(id)
}

// runRaceCrashCases are the crash cases of runRace (groups.go).
func runRaceCrashCases(t *testing.T, f Factory) {

	t.Run("workers_that_crash_mid_lease_lose_no_task_and_none_runs_twice_under_a_valid_lease", func(t *testing.T) {
		e := newEnv(t, f)
		n := 120
		for i := 0; i < n; i++ {
			e.submit(queue.SubmitRequest{TaskType: "job", MaxAttempts: 50}, t0)
		}
		// The leases run on a clock the test controls, not the machine's:
		// it moves only when a worker finds nothing to claim, and never
		// while a worker is between its claim and its complete (they hold
		// held): a slow or loaded machine cannot lapse a lease a worker is
		// still using, and the abandoned ones still run out.
		var elapsed atomic.Int64 // since t0
		var held sync.RWMutex
		clock := func() time.Time { return t0.Add(time.Duration(elapsed.Load())) }
		const lease = 300 * time.Millisecond

		// Claims of each task in the order the store took them (attempt
		// order). Goroutines read the clock before they claim, so their
		// registration order here may differ; the attempt number does not.
		type claimRec struct {
			now     time.Time
			expires time.Time
		}
		var mu sync.Mutex
		claims := map[string]map[int]claimRec{}
		completed := map[string]int{}
		var violations []string
		var done, abandoned atomic.Int32
		var wg sync.WaitGroup
		errs := make(chan error, Workers)
		for w := 0; w < Workers; w++ {
			q := e.reopen()
			wg.Add(1)
			go func() {
				defer wg.Done()
				// A guard against a livelock, not a timing check: a loaded
				// 2-core machine with the race detector needs minutes.
				deadline := time.Now().Add(5 * time.Minute)
				for k := 0; int(done.Load()) < n; k++ {
					if time.Now().After(deadline) {
						errs <- fmt.Errorf("gave up with %d of %d done", done.Load(), n)
						return
					}
					held.RLock()
					now := clock()
					cs, err := q.Claim(ctx, queue.ClaimRequest{LeaseFor: lease, MaxTasks: 2}, now)
					if err != nil {
						held.RUnlock()
						errs <- err
						return
					}
					for i, c := range cs {
						mu.Lock()
						if claims[c.Task.ID] == nil {
							claims[c.Task.ID] = map[int]claimRec{}
						}
						if _, dup := claims[c.Task.ID][c.Task.Attempt]; dup {
							violations = append(violations, fmt.Sprintf("task %s: attempt %d claimed twice", c.Task.ID, c.Task.Attempt))
						}
						claims[c.Task.ID][c.Task.Attempt] = claimRec{now: now, expires: c.Lease.ExpiresAt}
						mu.Unlock()
						// Every third claim of a worker is abandoned: the worker "crashes".
						if (k+i+w)%3 == 0 {
							abandoned.Add(1)
							continue
						}
						_, err := q.Complete(ctx, queue.CompleteRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token}, clock())
						mu.Lock()
						switch {
						case err == nil:
							completed[c.Task.ID]++
							done.Add(1)
						case errors.Is(err, queue.ErrLeaseExpired) || errors.Is(err, queue.ErrLeaseMismatch) || errors.Is(err, queue.ErrNotRunning):
							// slow worker: its lease ran out and the task went to someone else
						default:
							violations = append(violations, fmt.Sprintf("complete %s: %v", c.Task.ID, err))
						}
						mu.Unlock()
					}
					held.RUnlock()
					if len(cs) == 0 {
						held.Lock()
						elapsed.Add(int64(lease / 3)) // let abandoned leases run out
						held.Unlock()
						time.Sleep(time.Millisecond) // and the others work
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		for id, byAttempt := range claims {
			for a, c := range byAttempt {
				if prev, ok := byAttempt[a-1]; ok && c.now.Before(prev.expires) {
					violations = append(violations, fmt.Sprintf("task %s: attempt %d claimed at %s while attempt %d's lease ran to %s", id, a, c.now, a-1, prev.expires))
				}
			}
		}
		if len(violations) > 0 {
			t.Fatalf("%d violations, first: %s", len(violations), violations[0])
		}
		if abandoned.Load() == 0 {
			t.Fatal("no claim was abandoned: the case tested nothing")
		}
		if len(completed) != n {
			t.Fatalf("%d tasks completed, want %d", len(completed), n)
		}
		for id, c := range completed {
			if c != 1 {
				t.Fatalf("task %s completed %d times", id, c)
			}
		}
	})
}

// runSweepCrash crashes a sweep at each of its writes, before and after
// the write lands, and checks that the next sweeps finish the work: an
// overdue parent expired with its pending child, both events published, a
// running task parked, nothing left behind.
func runSweepCrash(t *testing.T, f Factory) {
	setup := func(e *env) (parent, kid, long string) {
		parent = e.submit(queue.SubmitRequest{TTL: check.Dur("1m")}, t0).ID
		kid = e.submit(queue.SubmitRequest{ParentID: parent, TTL: check.Dur("1h")}, t0).ID // a child is in its parent's queue
		long = e.submit(queue.SubmitRequest{TTL: check.Dur("1m"), Queue: "long"}, t0).Ref()
		e.claim(queue.ClaimRequest{Queue: "long", LeaseFor: time.Hour}, t0)
		return parent, kid, long
	}
	now := t0.Add(time.Minute)
	e := newEnv(t, f)
	setup(e)
	writes := sweepWrites(t, e, now)

	for _, mode := range []storefault.FaultMode{storefault.FailBefore, storefault.FailAfter} {
		modeName := map[storefault.FaultMode]string{storefault.FailBefore: "before", storefault.FailAfter: "after"}[mode]
		for n := 1; n <= writes; n++ {
			name := fmt.Sprintf("a_sweep_crashed_%s_write_%d_of_%d_leaves_work_the_next_sweep_finishes", modeName, n, writes)
			t.Run(name, func(t *testing.T) {
				e := newEnv(t, f)
				parent, kid, long := setup(e)
				faulty := storefault.New(e.s)
				pub := &recorder{}
				faulty.Fail(n, mode)
				_, _ = e.open(faulty).Sweep(ctx, now, crashSweepOptions(pub))
				if !faulty.Fired() {
					t.Fatalf("write %d never happened", n)
				}
				faulty.Disarm()

				e.sweep(now, pub)                    // at once
				e.sweep(now.Add(3*time.Minute), pub) // and past the stale-marker grace
				// A stale marker not yet due is the next claim's to drop.
				e.claim(queue.ClaimRequest{}, now.Add(3*time.Minute)) // the kid is in its parent's queue
				seen := map[string]bool{}
				for _, ev := range pub.take() {
					seen[ev.TaskID] = true
				}
				for id, reason := range map[string]string{parent: queue.ReasonTTL, kid: queue.ReasonParentExpired} {
					got := e.get(id)
					if got.Status != queue.StatusExpired || got.ExpiryReason != reason || got.ExpiryEventSentAt == nil || !seen[id] {
						t.Fatalf("task %s: %s reason %q sent_at %v published %v", id, got.Status, got.ExpiryReason, got.ExpiryEventSentAt, seen[id])
					}
				}
				got := e.get(long)
				wantStatus(t, got, queue.StatusRunning)
				if seen[long] {
					t.Fatal("an event for a running task")
				}
				lease := "sweep/" + keyTime(t0.Add(time.Hour)) + "_lease_" + strings.Replace(long, "/", ".", 1)
				if got.IndexKey != lease {
					t.Fatalf("index_key %s, want %s", got.IndexKey, lease)
				}
				wantKeys(t, "markers", e.markers(), lease)
				wantKeys(t, "hints", e.hints())
			})
		}
	}
}

// runSweepCrashPaths crashes a sweep at each of its writes on the paths
// runSweepCrash does not take — a parked lease lapsing past its deadline,
// a dead-letter event owed, the artifacts of a completed task — before,
// after and with the answer lost, and checks that the next sweeps finish
// the work: the parked task expired with its event, the dead-letter event
// out, the artifacts gone, no marker or hint left behind.
func runSweepCrashPaths(t *testing.T, f Factory) {
	setup := func(e *env) (parked, dead, done string) {
		parked = e.submit(queue.SubmitRequest{TTL: check.Dur("10m"), Queue: "p"}, t0).Ref()
		e.claim(queue.ClaimRequest{Queue: "p", LeaseFor: 20 * time.Minute}, t0)
		e.sweep(t0.Add(11*time.Minute), nil) // parked until +20m
		dead = e.submit(queue.SubmitRequest{MaxAttempts: 1, Queue: "d"}, t0).Ref()
		c := e.claim(queue.ClaimRequest{Queue: "d"}, t0)[0]
		if _, err := e.q.Fail(ctx, queue.FailRequest{ID: dead, LeaseToken: c.Lease.Token, Error: "x"}, t0.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		done = e.submit(queue.SubmitRequest{Queue: "a"}, t0).Ref()
		if _, _, err := e.q.ReserveArtifact(ctx, queue.ArtifactRequest{ID: done, TTL: time.Hour}, t0); err != nil {
			t.Fatal(err)
		}
		e.put(queue.ArtifactKey("a", strings.TrimPrefix(done, "a/"), "x"))
		c = e.claim(queue.ClaimRequest{Queue: "a"}, t0)[0]
		if _, err := e.q.Complete(ctx, queue.CompleteRequest{ID: done, LeaseToken: c.Lease.Token}, t0.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		return parked, dead, done
	}
	now := t0.Add(21 * time.Minute)
	e := newEnv(t, f)
	setup(e)
	writes := sweepWrites(t, e, now)

	modeNames := map[storefault.FaultMode]string{storefault.FailBefore: "before", storefault.FailAfter: "after", storefault.LoseAnswer: "with_its_answer_lost_at"}
	for _, mode := range []storefault.FaultMode{storefault.FailBefore, storefault.FailAfter, storefault.LoseAnswer} {
		for n := 1; n <= writes; n++ {
			name := fmt.Sprintf("a_sweep_of_parked_dead_and_done_tasks_crashed_%s_write_%d_of_%d_leaves_work_the_next_sweep_finishes", modeNames[mode], n, writes)
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				e := newEnv(t, f)
				parked, dead, done := setup(e)
				faulty := storefault.New(e.s)
				faulty.Fail(n, mode)
				pub := &recorder{}
				_, _ = e.open(faulty).Sweep(ctx, now, crashSweepOptions(pub))
				if !faulty.Fired() {
					t.Fatalf("write %d never happened", n)
				}
				faulty.Disarm()
				e.sweep(now, pub)
				e.sweep(now.Add(3*time.Minute), pub)
				if g := e.get(parked); g.Status != queue.StatusExpired || g.ExpiryEventSentAt == nil || pub.count(parked, queue.DetailTypeTaskExpired) == 0 {
					t.Fatalf("parked task: %s, expiry event sent at %v", g.Status, g.ExpiryEventSentAt)
				}
				if g := e.get(dead); g.DeadLetterEventSentAt == nil || pub.count(dead, queue.DetailTypeTaskDeadLettered) == 0 {
					t.Fatalf("dead-lettered task: event sent at %v", g.DeadLetterEventSentAt)
				}
				if left := e.keys(queue.ArtifactPrefix("a", strings.TrimPrefix(done, "a/"))); len(left) != 0 {
					t.Fatalf("artifacts left: %v", left)
				}
				for _, k := range e.keys("sweep/") {
					if !strings.Contains(k, "_queue_") && !strings.Contains(k, "_artifacts_") {
						t.Fatalf("left: %s", k)
					}
				}
				for _, dir := range []string{"/index/ready/", "/index/deadline/", "/children/"} {
					if left := e.inQueues(dir); len(left) != 0 {
						t.Fatalf("left: %v", left)
					}
				}
			})
		}
	}
}

// crashSweepOptions sweeps one task at a time, so that the n-th write is
// the same in every run.
func crashSweepOptions(pub queue.EventPublisher) queue.SweepOptions {
	return queue.SweepOptions{Publisher: pub, Concurrency: 1}
}

// sweepWrites returns how many writes (puts and deletes) a sweep of e at
// now makes: the writes a crash case crashes at, one by one.
func sweepWrites(t *testing.T, e *env, now time.Time) int {
	t.Helper()
	counting := store.NewCounting(e.s)
	if _, err := e.open(counting).Sweep(ctx, now, crashSweepOptions(&recorder{})); err != nil {
		t.Fatal(err)
	}
	return int(counting.Counts().Put + counting.Counts().Delete)
}
