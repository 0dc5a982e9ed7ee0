package queuetest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/internal/check"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/store"
	"github.com/s3q/s3q/shared/store/storefault"
)

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
