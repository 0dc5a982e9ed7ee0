package queuetest

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/internal/check"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/store"
)

func wantKeys(t testing.TB, what string, got []string, want ...string) {
	t.Helper()
	sort.Strings(want)
	got = append([]string(nil), got...)
	sort.Strings(got)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("%s = %v, want %v", what, got, want)
	}
}

var expiredDetailKeys = []string{"age_seconds", "created_at", "dedup_key", "expired_at", "expires_at", "parent_id", "queue", "reason", "task_id", "task_type"}

func wantDetailKeys(t testing.TB, m map[string]any, want []string) {
	t.Helper()
	var got []string
	for k := range m {
		got = append(got, k)
	}
	sort.Strings(got)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("detail keys = %v, want %v", got, want)
	}
}

func runSweep(t *testing.T, f Factory) {
	t.Run("a_sweep_expires_every_pending_task_past_its_deadline_and_publishes_one_event_each", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		var due []queue.Task
		for i := 0; i < 3; i++ {
			due = append(due, e.submit(queue.SubmitRequest{TaskType: "mail", TTL: check.Dur("1m"), DedupKey: fmt.Sprint("k", i)}, t0))
		}
		late := t0.Add(time.Hour)
		due = append(due, e.submit(queue.SubmitRequest{TaskType: "report", ExpiresAt: at(t0.Add(time.Minute)), ScheduleAt: &late}, t0))
		later := e.submit(queue.SubmitRequest{TTL: check.Dur("1h")}, t0)
		never := e.submit(queue.SubmitRequest{}, t0)

		pub := &recorder{}
		now := t0.Add(time.Minute)
		rep := e.sweep(now, pub)
		if rep.Expired != 4 || rep.EventsSent != 4 || rep.EventsFailed != 0 || rep.Errors != 0 {
			t.Fatalf("report: %+v", rep)
		}
		if rep.ExpiredByType["mail"] != 3 || rep.ExpiredByType["report"] != 1 {
			t.Fatalf("expired by type: %v", rep.ExpiredByType)
		}
		evs := byTask(t, pub.take())
		for i, d := range due {
			got := e.get(d.Ref())
			wantStatus(t, got, queue.StatusExpired)
			wantTime(t, "expired_at", got.ExpiredAt, now)
			wantTime(t, "expiry_event_sent_at", got.ExpiryEventSentAt, now)
			if got.ExpiryReason != queue.ReasonTTL {
				t.Fatalf("expiry_reason = %q", got.ExpiryReason)
			}
			ev, ok := evs[d.ID]
			if !ok || ev.DetailType != queue.DetailTypeTaskExpired || !ev.Time.Equal(now) {
				t.Fatalf("event of %s: %+v (found %v)", d.ID, ev, ok)
			}
			m := detail(t, ev)
			wantDetailKeys(t, m, expiredDetailKeys)
			if m["task_id"] != d.ID || m["queue"] != "default" || m["reason"] != "ttl" || m["age_seconds"] != 60.0 || m["parent_id"] != nil {
				t.Fatalf("detail: %v", m)
			}
			if i < 3 && m["dedup_key"] != fmt.Sprint("k", i) {
				t.Fatalf("dedup_key = %v", m["dedup_key"])
			}
			if m["expires_at"] != "2026-01-28T09:01:00Z" || m["expired_at"] != "2026-01-28T09:01:00Z" || m["created_at"] != "2026-01-28T09:00:00Z" {
				t.Fatalf("times in detail: %v", m)
			}
		}
		wantKeys(t, "markers", e.markers(), e.get(later.Ref()).IndexKey, e.get(never.Ref()).IndexKey)
		wantKeys(t, "hints", e.hints())
		rep = e.sweep(now.Add(time.Minute), pub)
		if rep.Expired != 0 || rep.EventsSent != 0 || len(pub.take()) != 0 {
			t.Fatalf("second sweep: %+v", rep)
		}
		wantStatus(t, e.get(later.Ref()), queue.StatusPending)
		wantStatus(t, e.get(never.Ref()), queue.StatusPending)
	})

	t.Run("sweep_requests_do_not_grow_with_the_backlog", func(t *testing.T) {
		t.Parallel()
		backlog := 2500 // past two LIST pages
		if f.Real {
			backlog = 300 // kept small for time; mem shows the pages
		}
		cost := func(n int) store.Counts {
			e := newEnv(t, f)
			for i := 0; i < 5; i++ {
				e.submit(queue.SubmitRequest{TTL: check.Dur("1m")}, t0)
			}
			keys := make([]string, n)
			for i := range keys {
				exp := t0.Add(time.Hour + time.Duration(i)*time.Second)
				keys[i] = "q/default/index/deadline/0/" + keyTime(exp) + "_" + keyTime(t0) + "_" + queue.NewID(t0)
			}
			e.putMany(keys)
			// Every request of the sweeping process, its registry's read
			// of the queue's declaration too (the report leaves that out).
			c := store.NewCounting(e.s)
			rep, err := e.open(c).Sweep(ctx, t0.Add(time.Minute), queue.SweepOptions{Publisher: &recorder{}})
			if err != nil || rep.Expired != 5 || rep.EventsSent != 5 {
				t.Fatalf("backlog %d: %+v, %v", n, rep, err)
			}
			if want := c.Counts(); rep.Requests != (store.Counts{List: want.List, Get: want.Get - 1, Head: want.Head, Put: want.Put, Delete: want.Delete}) {
				t.Fatalf("report %v, want all but the declaration's GET of %v", rep.Requests, want)
			}
			return c.Counts()
		}
		small, big := cost(10), cost(backlog)
		if small != big {
			t.Fatalf("requests grew with the backlog: 10 -> %v, %d -> %v", small, backlog, big)
		}
		// Two LISTs (the sweep index, one deadline head) and the queue's
		// declaration (its shards); per task a GET, the outbox PUT, the
		// status/ marker PUT, the record CAS, the marker DELETE, a HEAD for
		// children, the CAS that notes the event, the outbox DELETE.
		if want := (store.Counts{List: 2, Get: 6, Head: 5, Put: 20, Delete: 10}); small != want {
			t.Fatalf("requests = %v, want %v", small, want)
		}
	})

	t.Run("an_idle_sweep_costs_one_list_however_many_queues_were_used", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		if rep := e.sweep(t0, nil); rep.Requests != (store.Counts{List: 1}) {
			t.Fatalf("sweep of an empty bucket: %v", rep.Requests)
		}
		for i := 0; i < 50; i++ {
			name := fmt.Sprintf("q%d", i)
			task := e.submit(queue.SubmitRequest{Queue: name, TTL: check.Dur("1h")}, t0)
			c := e.claim(queue.ClaimRequest{Queue: name}, t0)[0]
			if _, err := e.q.Complete(ctx, queue.CompleteRequest{ID: task.Ref(), LeaseToken: c.Lease.Token}, t0); err != nil {
				t.Fatal(err)
			}
		}
		if n := len(e.wakeups()); n != 50 {
			t.Fatalf("%d wake-ups, want one per queue", n)
		}
		for i := 1; i <= 3; i++ {
			rep := e.sweep(t0.Add(time.Duration(i)*time.Minute), nil)
			if rep.Requests != (store.Counts{List: 1}) || rep.Queues != 0 {
				t.Fatalf("idle sweep %d: queues %d, requests %v, want 1 LIST", i, rep.Queues, rep.Requests)
			}
		}
		// Due, each queue's head is read once, found empty and its
		// wake-up deleted once StaleMarkerGrace behind.
		if rep := e.sweep(t0.Add(time.Hour), nil); rep.Queues != 50 || rep.WakeupsDeleted != 0 {
			t.Fatalf("sweep at the wake-ups: %+v", rep)
		}
		if rep := e.sweep(t0.Add(time.Hour+3*time.Minute), nil); rep.Queues != 50 || rep.WakeupsDeleted != 50 {
			t.Fatalf("sweep past the grace: %+v", rep)
		}
		wantKeys(t, "wake-ups", e.wakeups())
		if rep := e.sweep(t0.Add(time.Hour+4*time.Minute), nil); rep.Requests != (store.Counts{List: 1}) {
			t.Fatalf("idle again: %v", rep.Requests)
		}
	})

	t.Run("a_running_task_past_its_deadline_is_parked_and_expired_when_its_lease_lapses", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		task := e.submit(queue.SubmitRequest{TTL: check.Dur("10m")}, t0)
		c := e.claim(queue.ClaimRequest{LeaseFor: time.Hour}, t0)[0]
		rep := e.sweep(t0.Add(11*time.Minute), nil)
		if rep.Parked != 1 || rep.Expired != 0 {
			t.Fatalf("report: %+v", rep)
		}
		got := e.get(task.Ref())
		wantStatus(t, got, queue.StatusRunning)
		if want := "sweep/" + keyTime(t0.Add(time.Hour)) + "_lease_default." + task.ID; got.IndexKey != want {
			t.Fatalf("index_key = %s, want %s", got.IndexKey, want)
		}
		wantKeys(t, "markers", e.markers(), got.IndexKey)
		// Parked, it costs later sweeps nothing once its queue's wake-up
		// is gone (the sweep index's LIST stops at the parked lease, so the
		// wake-ups take a LIST of their own).
		if rep := e.sweep(t0.Add(13*time.Minute), nil); rep.WakeupsDeleted != 1 {
			t.Fatalf("sweep after the grace: %+v", rep)
		}
		if rep := e.sweep(t0.Add(14*time.Minute), nil); rep.Requests != (store.Counts{List: 2}) {
			t.Fatalf("sweep after parking: %v", rep.Requests)
		}
		// The holder works on and extends its lease.
		if _, err := e.q.Heartbeat(ctx, queue.HeartbeatRequest{ID: task.Ref(), LeaseToken: c.Lease.Token, LeaseFor: time.Hour}, t0.Add(30*time.Minute)); err != nil {
			t.Fatal(err)
		}
		if rep := e.sweep(t0.Add(time.Hour), nil); rep.Parked != 1 || rep.Expired != 0 {
			t.Fatalf("sweep at the first lease expiry: %+v", rep)
		}
		wantStatus(t, e.get(task.Ref()), queue.StatusRunning)
		pub := &recorder{}
		if rep := e.sweep(t0.Add(90*time.Minute), pub); rep.Expired != 1 || rep.EventsSent != 1 {
			t.Fatalf("sweep at the lapse: %+v", rep)
		}
		got = e.get(task.Ref())
		wantStatus(t, got, queue.StatusExpired)
		if got.ExpiryReason != queue.ReasonTTL || got.LeaseToken != "" {
			t.Fatalf("expired: reason %q token %q", got.ExpiryReason, got.LeaseToken)
		}
		wantKeys(t, "markers", e.markers())
		wantKeys(t, "hints", e.hints())
		_, err := e.q.Complete(ctx, queue.CompleteRequest{ID: task.Ref(), LeaseToken: c.Lease.Token}, t0.Add(91*time.Minute))
		check.Err(t, err, queue.ErrNotRunning)
	})

	t.Run("a_parked_task_completes_or_fails_as_usual", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		a := e.submit(queue.SubmitRequest{TTL: check.Dur("10m")}, t0)
		b := e.submit(queue.SubmitRequest{TTL: check.Dur("10m")}, t0)
		cs := e.claim(queue.ClaimRequest{LeaseFor: time.Hour, MaxTasks: 2}, t0)
		tok := map[string]string{}
		for _, c := range cs {
			tok[c.Task.ID] = c.Lease.Token
		}
		if rep := e.sweep(t0.Add(11*time.Minute), nil); rep.Parked != 2 {
			t.Fatalf("report: %+v", rep)
		}
		if _, err := e.q.Complete(ctx, queue.CompleteRequest{ID: a.Ref(), LeaseToken: tok[a.ID]}, t0.Add(20*time.Minute)); err != nil {
			t.Fatal(err)
		}
		// A retry of a task past its deadline goes back under deadline/,
		// where the next sweep expires it.
		got, err := e.q.Fail(ctx, queue.FailRequest{ID: b.Ref(), LeaseToken: tok[b.ID], Error: "x"}, t0.Add(20*time.Minute))
		if err != nil || got.Status != queue.StatusPending || !strings.Contains(got.IndexKey, "/index/deadline/") {
			t.Fatalf("fail: %v %s %s", err, got.Status, got.IndexKey)
		}
		wantKeys(t, "markers", e.markers(), got.IndexKey)
		if rep := e.sweep(t0.Add(21*time.Minute), nil); rep.Expired != 1 {
			t.Fatalf("report: %+v", rep)
		}
		wantStatus(t, e.get(b.Ref()), queue.StatusExpired)
		wantKeys(t, "markers", e.markers())
		wantKeys(t, "hints", e.hints())
	})

	t.Run("a_lapsed_lease_is_reclaimed_to_pending_failed_or_cancelled_like_a_claim_would", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		again := e.submit(queue.SubmitRequest{TTL: check.Dur("10m"), MaxAttempts: 3}, t0)
		spent := e.submit(queue.SubmitRequest{TTL: check.Dur("10m"), MaxAttempts: 1}, t0)
		asked := e.submit(queue.SubmitRequest{TTL: check.Dur("10m"), MaxAttempts: 3}, t0)
		e.claim(queue.ClaimRequest{LeaseFor: time.Hour, MaxTasks: 3}, t0)
		if _, err := e.q.Cancel(ctx, asked.Ref(), t0.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		if rep := e.sweep(t0.Add(11*time.Minute), nil); rep.Parked != 3 {
			t.Fatalf("report: %+v", rep)
		}
		// Through the core a parked task's deadline has always passed; give
		// these a later one, as an older version might have left them.
		for _, id := range []string{again.ID, spent.ID, asked.ID} {
			e.rewrite(id, func(t *queue.Task) { t.ExpiresAt = at(t0.Add(48 * time.Hour)) })
		}
		pub := &recorder{}
		now := t0.Add(time.Hour)
		rep := e.sweep(now, pub)
		if rep.Reclaimed != 1 || rep.DeadLettered != 1 || rep.Cancelled != 1 || rep.EventsSent != 1 {
			t.Fatalf("report: %+v", rep)
		}
		got := e.get(again.Ref())
		wantStatus(t, got, queue.StatusPending)
		if !got.AvailableAt.Equal(now) || got.Attempt != 1 || !strings.Contains(got.IndexKey, "/index/deadline/") {
			t.Fatalf("reclaimed: available_at %s attempt %d index_key %s", got.AvailableAt, got.Attempt, got.IndexKey)
		}
		if c := e.claimOne(now); c.Task.ID != again.ID || c.Task.Attempt != 2 {
			t.Fatalf("claimed %s attempt %d", c.Task.ID, c.Task.Attempt)
		}
		wantStatus(t, e.get(asked.Ref()), queue.StatusCancelled)
		dead := e.get(spent.Ref())
		wantStatus(t, dead, queue.StatusFailed)
		wantTime(t, "dead_letter_event_sent_at", dead.DeadLetterEventSentAt, now)
		evs := pub.take()
		if len(evs) != 1 || evs[0].TaskID != spent.ID || evs[0].DetailType != queue.DetailTypeTaskDeadLettered {
			t.Fatalf("events: %+v", evs)
		}
		m := detail(t, evs[0])
		wantDetailKeys(t, m, []string{"attempt", "created_at", "dedup_key", "expires_at", "failed_at", "last_error", "max_attempts", "parent_id", "queue", "task_id", "task_type"})
		if m["attempt"] != 1.0 || m["max_attempts"] != 1.0 || m["last_error"] != "lease expired after attempt 1 of 1" {
			t.Fatalf("detail: %v", m)
		}
	})

	t.Run("a_claim_cancels_a_task_whose_lease_lapsed_after_a_cancel_request", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		task := e.submit(queue.SubmitRequest{}, t0)
		e.claim(queue.ClaimRequest{LeaseFor: time.Minute}, t0)
		if _, err := e.q.Cancel(ctx, task.Ref(), t0.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		e.claimNone(t0.Add(2 * time.Minute))
		wantStatus(t, e.get(task.Ref()), queue.StatusCancelled)
		wantKeys(t, "markers", e.markers())
	})

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

	t.Run("tasks_expired_by_a_claim_by_hand_or_on_arrival_get_their_event_from_the_next_sweep", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		byClaim := e.submit(queue.SubmitRequest{TTL: check.Dur("1m")}, t0)
		byHand := e.submit(queue.SubmitRequest{Queue: "other"}, t0)
		onArrival := e.submit(queue.SubmitRequest{TTL: check.Dur("0s")}, t0)
		e.claimNone(t0.Add(time.Minute))
		if _, err := e.q.Expire(ctx, byHand.Ref(), t0.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		if n := len(e.hints()); n != 3 {
			t.Fatalf("%d outbox entries, want 3", n)
		}
		pub := &recorder{}
		rep := e.sweep(t0.Add(2*time.Minute), pub)
		if rep.Expired != 0 || rep.EventsSent != 3 || rep.ExpiredByType["email.send"] != 3 {
			t.Fatalf("report: %+v", rep)
		}
		evs := byTask(t, pub.take())
		for id, want := range map[string][2]any{byClaim.ID: {"ttl", 60.0}, byHand.ID: {"manual", 60.0}, onArrival.ID: {"ttl", 0.0}} {
			m := detail(t, evs[id])
			if m["reason"] != want[0] || m["age_seconds"] != want[1] {
				t.Fatalf("event of %s: %v, want reason %v age %v", id, m, want[0], want[1])
			}
			if e.get(id).ExpiryEventSentAt == nil {
				t.Fatalf("task %s: expiry_event_sent_at not set", id)
			}
		}
		wantKeys(t, "hints", e.hints())
	})

	t.Run("a_task_that_lands_in_failed_gets_a_dead_lettered_event_each_time", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		spent := e.submit(queue.SubmitRequest{MaxAttempts: 1, Queue: "a"}, t0)
		permanent := e.submit(queue.SubmitRequest{Queue: "b"}, t0)
		lapsed := e.submit(queue.SubmitRequest{MaxAttempts: 1, Queue: "c"}, t0)
		no := false
		for _, tc := range []struct {
			id, q string
			req   queue.FailRequest
		}{{spent.ID, "a", queue.FailRequest{Error: "boom"}}, {permanent.ID, "b", queue.FailRequest{Error: "bad input", Retryable: &no}}} {
			c := e.claim(queue.ClaimRequest{Queue: tc.q}, t0)[0]
			tc.req.ID, tc.req.LeaseToken = e.ref(tc.id), c.Lease.Token
			if _, err := e.q.Fail(ctx, tc.req, t0); err != nil {
				t.Fatal(err)
			}
		}
		e.claim(queue.ClaimRequest{Queue: "c", LeaseFor: time.Minute}, t0)
		if cs := e.claim(queue.ClaimRequest{Queue: "c"}, t0.Add(2*time.Minute)); len(cs) != 0 {
			t.Fatal("claimed a task whose attempts are spent")
		}
		pub := &recorder{}
		if rep := e.sweep(t0.Add(3*time.Minute), pub); rep.EventsSent != 3 {
			t.Fatalf("report: %+v", rep)
		}
		evs := byTask(t, pub.take())
		for id, lastErr := range map[string]string{spent.ID: "boom", permanent.ID: "bad input", lapsed.ID: "lease expired after attempt 1 of 1"} {
			if ev := evs[id]; ev.DetailType != queue.DetailTypeTaskDeadLettered || detail(t, ev)["last_error"] != lastErr {
				t.Fatalf("event of %s: %s %s", id, ev.DetailType, ev.Detail)
			}
		}
		// Retried by hand and failed again: a new event.
		if _, err := e.q.Retry(ctx, spent.Ref(), t0.Add(4*time.Minute)); err != nil {
			t.Fatal(err)
		}
		c := e.claim(queue.ClaimRequest{Queue: "a"}, t0.Add(4*time.Minute))[0]
		if _, err := e.q.Fail(ctx, queue.FailRequest{ID: spent.Ref(), LeaseToken: c.Lease.Token, Error: "boom again"}, t0.Add(5*time.Minute)); err != nil {
			t.Fatal(err)
		}
		if rep := e.sweep(t0.Add(6*time.Minute), pub); rep.EventsSent != 1 {
			t.Fatalf("report: %+v", rep)
		}
		if evs := pub.take(); len(evs) != 1 || detail(t, evs[0])["last_error"] != "boom again" {
			t.Fatalf("events: %+v", evs)
		}
		wantKeys(t, "hints", e.hints())
	})

	t.Run("an_event_the_publisher_does_not_deliver_is_published_by_a_later_sweep", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		first := e.submit(queue.SubmitRequest{TTL: check.Dur("1m")}, t0)
		e.submit(queue.SubmitRequest{TTL: check.Dur("1m")}, t0)
		flaky := &recorder{fail: func(ev queue.Event) error {
			if ev.TaskID == first.ID {
				return errors.New("throttled")
			}
			return nil
		}}
		rep, err := e.reopen().Sweep(ctx, t0.Add(time.Minute), queue.SweepOptions{Publisher: flaky})
		if err == nil || !strings.Contains(err.Error(), "throttled") || rep.EventsSent != 1 || rep.EventsFailed != 1 || rep.Expired != 2 {
			t.Fatalf("report: %v %+v", err, rep)
		}
		if got := e.get(first.Ref()); got.Status != queue.StatusExpired || got.ExpiryEventSentAt != nil {
			t.Fatalf("undelivered: %s sent_at %v", got.Status, got.ExpiryEventSentAt)
		}
		if n := len(e.hints()); n != 1 {
			t.Fatalf("%d outbox entries, want 1", n)
		}
		down := &recorder{callErr: errors.New("service unavailable")}
		rep, err = e.reopen().Sweep(ctx, t0.Add(2*time.Minute), queue.SweepOptions{Publisher: down})
		if err == nil || rep.EventsFailed != 1 {
			t.Fatalf("sweep with the bus down: %v %+v", err, rep)
		}
		pub := &recorder{}
		if rep := e.sweep(t0.Add(3*time.Minute), pub); rep.EventsSent != 1 {
			t.Fatalf("report: %+v", rep)
		}
		if evs := pub.take(); len(evs) != 1 || evs[0].TaskID != first.ID {
			t.Fatalf("events: %+v", evs)
		}
		wantKeys(t, "hints", e.hints())
		if rep := e.sweep(t0.Add(4*time.Minute), pub); rep.EventsSent != 0 {
			t.Fatalf("report: %+v", rep)
		}
	})

	t.Run("stale_markers_and_hints_are_deleted_only_once_past_the_grace", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		ghost := queue.NewID(t0)
		e.put("sweep/wake/" + keyTime(t0) + "_default") // as a crashed submit leaves it
		stale := []string{
			"q/default/index/deadline/0/" + keyTime(t0) + "_" + keyTime(t0) + "_" + ghost,
			"sweep/" + keyTime(t0) + "_event_default." + ghost,
			"sweep/" + keyTime(t0) + "_lease_default." + ghost,
		}
		for _, k := range stale {
			e.put(k)
		}
		if rep := e.sweep(t0.Add(time.Minute), nil); rep.StaleMarkers != 0 {
			t.Fatalf("young: %+v", rep)
		}
		if n := len(e.keys("sweep/")) + len(e.inQueues("/index/deadline/")); n != 4 {
			t.Fatalf("%d keys, want the 3 young ones and the wake-up", n)
		}
		if rep := e.sweep(t0.Add(3*time.Minute), nil); rep.StaleMarkers != 3 {
			t.Fatalf("old: %+v", rep)
		}
		wantKeys(t, "markers", e.markers(), e.inQueues("/index/ready/")...)
		wantKeys(t, "hints", e.hints())
	})

	t.Run("a_sweep_stops_at_its_deadline_and_the_next_one_finishes", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		n := 12
		for i := 0; i < n; i++ {
			e.submit(queue.SubmitRequest{TTL: check.Dur("1m")}, t0)
		}
		wall := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
		var reads atomic.Int32
		clock := func() time.Time { // the deadline comes after a few tasks
			if reads.Add(1) > 7 {
				return wall
			}
			return wall.Add(-time.Second)
		}
		pub := &recorder{}
		rep, err := e.reopen().Sweep(ctx, t0.Add(time.Minute), queue.SweepOptions{Publisher: pub, Deadline: wall, Clock: clock, Concurrency: 1})
		if err != nil {
			t.Fatal(err)
		}
		if !rep.Incomplete || rep.Expired == 0 || rep.Expired >= n {
			t.Fatalf("sweep cut short: %+v", rep)
		}
		rep2 := e.sweep(t0.Add(2*time.Minute), pub)
		if rep2.Incomplete || rep.Expired+rep2.Expired != n {
			t.Fatalf("second sweep: %+v (first expired %d)", rep2, rep.Expired)
		}
		if evs := byTask(t, pub.take()); len(evs) != n {
			t.Fatalf("%d events, want %d", len(evs), n)
		}
		wantKeys(t, "markers", e.markers())
		wantKeys(t, "hints", e.hints())
	})

	t.Run("two_sweeps_and_claimers_at_once_move_each_task_exactly_once", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		n, m := 16, 6
		overdue := map[string]bool{}
		for i := 0; i < n; i++ {
			overdue[e.submit(queue.SubmitRequest{TTL: check.Dur("1m")}, t0).ID] = true
		}
		for i := 0; i < m; i++ {
			e.submit(queue.SubmitRequest{}, t0)
		}
		now := t0.Add(time.Minute)
		pubs := []*recorder{{}, {}}
		var mu sync.Mutex
		claimed := map[string]int{}
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		start := make(chan struct{})
		for _, pub := range pubs {
			q := e.reopen()
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				if _, err := q.Sweep(ctx, now, queue.SweepOptions{Publisher: pub, Concurrency: 4}); err != nil {
					errs <- err
				}
			}()
		}
		for w := 0; w < 3; w++ {
			q := e.reopen()
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for empty := 0; empty < 2; {
					cs, err := q.Claim(ctx, queue.ClaimRequest{MaxTasks: 4, LeaseFor: time.Hour}, now)
					if err != nil {
						errs <- err
						return
					}
					if len(cs) == 0 {
						empty++
					}
					mu.Lock()
					for _, c := range cs {
						claimed[c.Task.ID]++
					}
					mu.Unlock()
				}
			}()
		}
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if len(claimed) != m {
			t.Fatalf("%d tasks claimed, want %d", len(claimed), m)
		}
		for id, c := range claimed {
			if c != 1 || overdue[id] {
				t.Fatalf("task %s claimed %d times (overdue %v)", id, c, overdue[id])
			}
		}
		e.sweep(now.Add(3*time.Minute), pubs[0]) // whatever the race left owed, and stale hints
		seen := map[string]bool{}
		for _, p := range pubs {
			for _, ev := range p.take() {
				seen[ev.TaskID] = true
			}
		}
		for id := range overdue {
			hist, err := allHistory(e.q, id)
			if err != nil {
				t.Fatal(err)
			}
			moves := 0
			for i := 1; i < len(hist); i++ {
				if hist[i].Task.Status == queue.StatusExpired && hist[i-1].Task.Status != queue.StatusExpired {
					moves++
				}
			}
			if moves != 1 {
				t.Fatalf("task %s was expired %d times", id, moves)
			}
			if got := e.get(id); got.ExpiryEventSentAt == nil || !seen[id] {
				t.Fatalf("task %s: event sent_at %v, published %v", id, got.ExpiryEventSentAt, seen[id])
			}
		}
		wantKeys(t, "hints", e.hints())
	})

	t.Run("a_sweep_reads_the_queues_whose_wake_ups_are_due_and_counts_deadlines_near_expiration", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		task := e.submit(queue.SubmitRequest{Queue: "reports", TTL: check.Dur("1m")}, t0)
		for _, ttl := range []string{"2m", "5m", "7m", "1h"} {
			e.submit(queue.SubmitRequest{Queue: "mail", TTL: check.Dur(ttl)}, t0)
		}
		rep := e.sweep(t0.Add(time.Minute), nil)
		if rep.Queues != 1 || rep.Expired != 1 || rep.NearExpiration != 0 {
			t.Fatalf("report: %+v", rep)
		}
		wantStatus(t, e.get(task.Ref()), queue.StatusExpired)
		rep = e.sweep(t0.Add(2*time.Minute), nil)
		if rep.Queues != 2 || rep.Expired != 1 || rep.NearExpiration != 2 {
			t.Fatalf("report: %+v", rep)
		}
		// A queue without a wake-up is swept when named.
		ghost := "q/legacy/index/deadline/0/" + keyTime(t0) + "_" + keyTime(t0) + "_" + queue.NewID(t0)
		e.put(ghost)
		rep, err := e.reopen().Sweep(ctx, t0.Add(time.Hour), queue.SweepOptions{Queues: []string{"legacy"}})
		if err != nil || rep.Queues != 3 || rep.StaleMarkers != 1 {
			t.Fatalf("named queue: %v %+v", err, rep)
		}
		e.sweep(t0.Add(time.Hour+time.Minute), nil)
		if keys := e.keys("sweep/2"); len(keys) != 0 {
			t.Fatalf("left in the sweep index: %v", keys)
		}
		_, err = e.reopen().Sweep(ctx, t0, queue.SweepOptions{Queues: []string{"../x"}})
		check.Field(t, err, "queue")
	})

	t.Run("artifacts_are_deleted_once_past_their_time_or_once_the_task_finishes", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		put := func(id string, names ...string) {
			name, id, _ := strings.Cut(e.ref(id), "/")
			for _, n := range names {
				e.put(queue.ArtifactKey(name, id, n))
			}
		}
		a := e.submit(queue.SubmitRequest{}, t0)
		got, until, err := e.q.ReserveArtifact(ctx, queue.ArtifactRequest{ID: a.Ref(), TTL: 10 * time.Minute}, t0.Add(30*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if !until.Equal(t0.Add(10*time.Minute + 30*time.Second)) {
			t.Fatalf("url expiry %s", until)
		}
		wantTime(t, "artifacts_expire_at", got.ArtifactsExpireAt, t0.Add(11*time.Minute))
		put(a.ID, "in.bin", "notes.txt")
		// More URLs within the minute cost one GET and write nothing.
		q, counts := e.counted()
		if _, _, err := q.ReserveArtifact(ctx, queue.ArtifactRequest{ID: a.Ref(), TTL: 10 * time.Minute}, t0.Add(40*time.Second)); err != nil {
			t.Fatal(err)
		}
		if c := counts.Counts(); c != (store.Counts{Get: 1}) {
			t.Fatalf("second reservation: %v", c)
		}
		if rep := e.sweep(t0.Add(11*time.Minute-time.Second), nil); rep.ArtifactsDeleted != 0 {
			t.Fatalf("early: %+v", rep)
		}
		if rep := e.sweep(t0.Add(11*time.Minute), nil); rep.ArtifactsDeleted != 2 {
			t.Fatalf("due: %+v", rep)
		}
		wantKeys(t, "artifacts", e.inQueues("/artifacts/"))
		wantKeys(t, "hints", e.hints())

		// The task's deadline bounds the URLs.
		b := e.submit(queue.SubmitRequest{TTL: check.Dur("5m")}, t0)
		if _, until, err := e.q.ReserveArtifact(ctx, queue.ArtifactRequest{ID: b.Ref(), TTL: time.Hour}, t0); err != nil || !until.Equal(t0.Add(5*time.Minute)) {
			t.Fatalf("bounded: %s %v", until, err)
		}
		_, _, err = e.q.ReserveArtifact(ctx, queue.ArtifactRequest{ID: b.Ref(), TTL: time.Hour}, t0.Add(5*time.Minute))
		wantState(t, err, queue.StatusPending)

		// A finished task's artifacts go at the next sweep.
		c := e.submit(queue.SubmitRequest{Queue: "c"}, t0)
		if _, _, err := e.q.ReserveArtifact(ctx, queue.ArtifactRequest{ID: c.Ref(), TTL: time.Hour}, t0); err != nil {
			t.Fatal(err)
		}
		put(c.ID, "out.json")
		cl := e.claim(queue.ClaimRequest{Queue: "c"}, t0)[0]
		if _, err := e.q.Complete(ctx, queue.CompleteRequest{ID: c.Ref(), LeaseToken: cl.Lease.Token}, t0.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		_, _, err = e.q.ReserveArtifact(ctx, queue.ArtifactRequest{ID: c.Ref(), TTL: time.Hour}, t0.Add(time.Minute))
		wantState(t, err, queue.StatusCompleted)
		if rep := e.sweep(t0.Add(2*time.Minute), nil); rep.ArtifactsDeleted != 1 {
			t.Fatalf("finished: %+v", rep)
		}
		wantKeys(t, "artifacts", e.inQueues("/artifacts/"))

		// A later reservation moves the time: the earlier entry is let go.
		d := e.submit(queue.SubmitRequest{Queue: "d"}, t0)
		for _, when := range []time.Duration{0, 5 * time.Minute} {
			if _, _, err := e.q.ReserveArtifact(ctx, queue.ArtifactRequest{ID: d.Ref(), TTL: 10 * time.Minute}, t0.Add(when)); err != nil {
				t.Fatal(err)
			}
		}
		put(d.ID, "x")
		if rep := e.sweep(t0.Add(10*time.Minute), nil); rep.ArtifactsDeleted != 0 {
			t.Fatalf("superseded: %+v", rep)
		}
		if rep := e.sweep(t0.Add(time.Hour), nil); rep.ArtifactsDeleted != 1 {
			t.Fatalf("due: %+v", rep)
		}
		wantKeys(t, "artifacts", e.inQueues("/artifacts/"))
		wantKeys(t, "hints", e.hints())

		_, _, err = e.q.ReserveArtifact(ctx, queue.ArtifactRequest{ID: queue.NewID(t0), TTL: time.Hour}, t0)
		check.Err(t, err, queue.ErrNotFound)
		for _, bad := range []string{"", "../x", "a/b", ".hidden", "a..b", strings.Repeat("x", 129), "tab\tname"} {
			check.Field(t, queue.ValidateArtifactName(bad), "name")
		}
	})

	t.Run("rules", func(t *testing.T) { runSweepRules(t, f) })
	t.Run("crash", func(t *testing.T) { runSweepCrash(t, f); runSweepCrashPaths(t, f) })
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
