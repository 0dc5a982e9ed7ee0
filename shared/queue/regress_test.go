// Regression tests for the findings of an independent review of the core:
// each failed before its fix. Comments above each say what the bug was.

package queue_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/store"
	"github.com/s3q/s3q/shared/store/memstore"
	"github.com/s3q/s3q/shared/store/storefault"
)

var bg = context.Background()
var T0 = time.Date(2026, 1, 28, 9, 0, 0, 0, time.UTC)

func mustSubmit(t *testing.T, q *queue.Queue, req queue.SubmitRequest, now time.Time) queue.Task {
	t.Helper()
	if req.TaskType == "" {
		req.TaskType = "x"
	}
	r, err := q.Submit(bg, req, now)
	if err != nil {
		t.Fatal(err)
	}
	return r.Task
}

// 1. With Shards > 1 the random start shard is redrawn on every loop
// iteration, so one claim may visit the same shard several times and miss
// the shard that holds the only due task.
func TestWithShardsEveryClaimVisitsEveryShard(t *testing.T) {
	s := memstore.New()
	opts := queue.Options{Shards: 4, ListCacheFor: -1}
	q := queue.New(s, opts)
	task := mustSubmit(t, q, queue.SubmitRequest{}, T0)
	empty := 0
	const n = 400
	for i := 0; i < n; i++ {
		cs, err := queue.New(s, opts).Claim(bg, queue.ClaimRequest{}, T0)
		if err != nil {
			t.Fatal(err)
		}
		if len(cs) == 0 {
			empty++
			continue
		}
		// put it back: fail with a reschedule to now
		if _, err := q.Reschedule(bg, task.ID, cs[0].Lease.Token, queue.RescheduleRequest{}, T0); err != nil {
			t.Fatal(err)
		}
	}
	if empty > 0 {
		t.Fatalf("%d of %d claims returned nothing while a due task was pending", empty, n)
	}
}

// 2a. A cancel request on a running task is dropped when the lease runs
// out: the next claim starts the task again and clears cancel_requested.
func TestACancelRequestSurvivesALapsedLease(t *testing.T) {
	q := queue.New(memstore.New(), queue.Options{})
	task := mustSubmit(t, q, queue.SubmitRequest{}, T0)
	if _, err := q.Claim(bg, queue.ClaimRequest{LeaseFor: time.Minute}, T0); err != nil {
		t.Fatal(err)
	}
	got, err := q.Cancel(bg, task.ID, T0.Add(2*time.Minute)) // lease already expired: nobody holds it
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cancel answered status=%s cancel_requested=%v", got.Status, got.CancelRequested)
	cs, err := queue.New(q.Store(), queue.Options{}).Claim(bg, queue.ClaimRequest{}, T0.Add(3*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) == 1 {
		t.Fatalf("cancelled task %s was started again (attempt %d, cancel_requested=%v)", cs[0].Task.ID, cs[0].Task.Attempt, cs[0].Task.CancelRequested)
	}
}

// 2b. Fail (retryable) of a cancel-requested task puts it back to pending.
func TestACancelRequestWinsOverARetryableFailure(t *testing.T) {
	q := queue.New(memstore.New(), queue.Options{Backoff: func(int) time.Duration { return time.Second }})
	task := mustSubmit(t, q, queue.SubmitRequest{}, T0)
	cs, _ := q.Claim(bg, queue.ClaimRequest{LeaseFor: time.Minute}, T0)
	if _, err := q.Cancel(bg, task.ID, T0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	got, err := q.Fail(bg, task.ID, cs[0].Lease.Token, queue.FailRequest{Error: "interrupted"}, T0.Add(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if got.Status == queue.StatusPending {
		t.Fatalf("cancel-requested task went back to pending (cancel_requested=%v); it will run again", got.CancelRequested)
	}
}

// 3. Retry of a terminal dedup holder after another submit took the key
// over makes two live tasks with one dedup key.
func TestRetryNeverMakesTwoLiveTasksForOneDedupKey(t *testing.T) {
	q := queue.New(memstore.New(), queue.Options{})
	a, _ := q.Submit(bg, queue.SubmitRequest{TaskType: "x", DedupKey: "k", MaxAttempts: 1}, T0)
	cs, _ := q.Claim(bg, queue.ClaimRequest{}, T0)
	if _, err := q.Fail(bg, a.Task.ID, cs[0].Lease.Token, queue.FailRequest{Error: "x"}, T0); err != nil {
		t.Fatal(err)
	}
	b, err := q.Submit(bg, queue.SubmitRequest{TaskType: "x", DedupKey: "k"}, T0.Add(time.Second))
	if err != nil || b.Deduplicated {
		t.Fatalf("b: %+v %v", b, err)
	}
	_, err = q.Retry(bg, a.Task.ID, T0.Add(2*time.Second))
	var se *queue.StateError
	if !errors.As(err, &se) {
		t.Fatalf("retry of a task whose dedup key another live task holds: %v, want a StateError", err)
	}
	// Once b is finished, the key is free and a can be retried; a submit
	// meanwhile does not take the key over from the reviving a.
	cb, _ := q.Claim(bg, queue.ClaimRequest{}, T0.Add(3*time.Second))
	if len(cb) != 1 || cb[0].Task.ID != b.Task.ID {
		t.Fatalf("claim b: %+v", cb)
	}
	if _, err := q.Complete(bg, b.Task.ID, cb[0].Lease.Token, nil, T0.Add(3*time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Sweep(bg, T0.Add(4*time.Second), queue.SweepOptions{}); err != nil { // publishes a's Task Dead-Lettered event
		t.Fatal(err)
	}
	if r, err := q.Retry(bg, a.Task.ID, T0.Add(4*time.Second)); err != nil || r.Status != queue.StatusPending {
		t.Fatalf("retry once the key is free: %v %v", r.Status, err)
	}
	c, err := q.Submit(bg, queue.SubmitRequest{TaskType: "x", DedupKey: "k"}, T0.Add(5*time.Second))
	if err != nil || !c.Deduplicated || c.Task.ID != a.Task.ID {
		t.Fatalf("a submit after the retry must return the revived task: %+v %v", c, err)
	}
	ga, _ := q.Get(bg, a.Task.ID)
	gb, _ := q.Get(bg, b.Task.ID)
	if !ga.Status.Terminal() && !gb.Status.Terminal() {
		t.Fatalf("two live tasks for dedup key k: %s (%s) and %s (%s)", ga.ID, ga.Status, gb.ID, gb.Status)
	}
}

// 4a. Head-of-line blocking: more than MaxScanPages*1000 running tasks at
// the head of ready/ hide a pending task from every claim that starts from
// the head (any claim more than ListCacheFor after the previous one).
func TestThousandsOfRunningTasksDoNotHideADueOne(t *testing.T) {
	s := memstore.New()
	q := queue.New(s, queue.Options{})
	const n = 3000
	for i := 0; i < n; i++ {
		mustSubmit(t, q, queue.SubmitRequest{}, T0)
	}
	for got, i := 0, 0; got < n; i++ {
		if i > 1000 {
			t.Fatalf("setup: claimed %d of %d", got, n)
		}
		cs, err := q.Claim(bg, queue.ClaimRequest{MaxTasks: 100, LeaseFor: 12 * time.Hour}, T0.Add(time.Second+time.Duration(i)*10*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		got += len(cs)
	}
	// An idle worker polling every 30s, in this process and in a fresh one,
	// finds a task submitted behind the 3000 running ones at its first try.
	for i, cq := range []*queue.Queue{q, queue.New(s, queue.Options{})} {
		for k := 1; k <= 3; k++ {
			now := T0.Add(time.Duration(i*3+k) * 30 * time.Second)
			late := mustSubmit(t, q, queue.SubmitRequest{}, now.Add(-time.Second))
			cs, err := cq.Claim(bg, queue.ClaimRequest{}, now)
			if err != nil {
				t.Fatal(err)
			}
			if len(cs) != 1 || cs[0].Task.ID != late.ID {
				t.Errorf("queue %d, claim at +%ds: got %d tasks, want %s", i, (i*3+k)*30, len(cs), late.ID)
			}
		}
	}
}

// 4b. The same with a type filter: 3000 due tasks of type a hide a task
// of type b from claims for b, for ever.
func TestThousandsOfTasksOfOtherTypesDoNotHideADueOne(t *testing.T) {
	s := memstore.New()
	q := queue.New(s, queue.Options{})
	for i := 0; i < 3000; i++ {
		mustSubmit(t, q, queue.SubmitRequest{TaskType: "a"}, T0)
	}
	for k := 1; k <= 3; k++ {
		now := T0.Add(time.Duration(k) * time.Minute)
		b := mustSubmit(t, q, queue.SubmitRequest{TaskType: "b"}, now.Add(-time.Second))
		cs, err := q.Claim(bg, queue.ClaimRequest{TaskTypes: []string{"b"}}, now)
		if err != nil {
			t.Fatal(err)
		}
		if len(cs) != 1 || cs[0].Task.ID != b.ID {
			t.Errorf("claim %d for type b: got %d tasks, want %s", k, len(cs), b.ID)
		}
	}
}

// 5. The default backoff has nanosecond jitter: available_at is not
// microsecond-normalised (and its key is truncated, so key != record).
func TestComputedTimesAreWholeMicroseconds(t *testing.T) {
	q := queue.New(memstore.New(), queue.Options{})
	bad := 0
	for i := 0; i < 20; i++ {
		mustSubmit(t, q, queue.SubmitRequest{}, T0)
	}
	cs, _ := q.Claim(bg, queue.ClaimRequest{MaxTasks: 20}, T0)
	var ex queue.Task
	for _, c := range cs {
		f, err := q.Fail(bg, c.Task.ID, c.Lease.Token, queue.FailRequest{Error: "x"}, T0)
		if err != nil {
			t.Fatal(err)
		}
		if f.AvailableAt.Nanosecond()%1000 != 0 {
			bad++
			ex = f
		}
	}
	if bad > 0 {
		t.Fatalf("%d of %d retries have a sub-microsecond available_at, e.g. %s, index_key %s", bad, len(cs), ex.AvailableAt.Format(time.RFC3339Nano), ex.IndexKey)
	}
}

// 6. A claim whose conditional write lands but whose answer is lost (a
// 500 or a reset connection: the store says the write MAY have applied)
// hands out nothing; with max_attempts 1 the task is later dead-lettered
// without ever having run.
func TestAClaimWhoseAnswerIsLostStillHandsTheTaskOver(t *testing.T) {
	mem := memstore.New()
	q := queue.New(mem, queue.Options{})
	task := mustSubmit(t, q, queue.SubmitRequest{MaxAttempts: 1}, T0)
	f := storefault.New(mem)
	f.Fail(1, storefault.LoseAnswer) // the claim's PutIfMatch lands, its answer is lost
	cq := queue.New(f, queue.Options{})
	cs, err := cq.Claim(bg, queue.ClaimRequest{LeaseFor: time.Minute}, T0)
	if !f.Fired() {
		t.Fatal("no answer was lost")
	}
	if err != nil || len(cs) != 1 || cs[0].Task.ID != task.ID {
		t.Fatalf("a claim whose write landed must hand the task over: %d tasks, %v", len(cs), err)
	}
	if _, err := cq.Complete(bg, task.ID, cs[0].Lease.Token, nil, T0.Add(time.Second)); err != nil {
		t.Fatalf("complete under the recovered lease: %v", err)
	}
}

// 7. A fully consumed, truncated listing makes the next claim (within
// ListCacheFor) answer nothing although the next page holds due tasks.
func TestAClaimReadsThePageAfterADrainedOne(t *testing.T) {
	q := queue.New(memstore.New(), queue.Options{})
	for i := 0; i < 1001; i++ {
		mustSubmit(t, q, queue.SubmitRequest{}, T0)
	}
	total := 0
	for i := 0; i < 11; i++ {
		cs, err := q.Claim(bg, queue.ClaimRequest{MaxTasks: 100}, T0.Add(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		total += len(cs)
	}
	if total != 1001 {
		t.Fatalf("11 claims of up to 100 at one instant got %d of 1001 due tasks", total)
	}
}

var _ = errors.Is
var _ = fmt.Sprint

// 8. ready/ with more than one page of future tasks: an idle claim lists
// MaxScanPages pages although the first entry already says nothing is due.
func TestAnIdleClaimStopsAtTheFirstFutureKey(t *testing.T) {
	mem := memstore.New()
	q := queue.New(mem, queue.Options{})
	when := T0.Add(24 * time.Hour)
	for i := 0; i < 2500; i++ {
		mustSubmit(t, q, queue.SubmitRequest{ScheduleAt: &when}, T0)
	}
	c := store.NewCounting(mem)
	if cs, _ := queue.New(c, queue.Options{}).Claim(bg, queue.ClaimRequest{}, T0.Add(time.Minute)); len(cs) != 0 {
		t.Fatal("claimed")
	}
	if n := c.Counts().List; n > 2 {
		t.Fatalf("an idle claim made %d LISTs (%s)", n, c.Counts())
	}
}
