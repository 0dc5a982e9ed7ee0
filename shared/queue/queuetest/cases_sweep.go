package queuetest

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/internal/check"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/store"
)

// runAttackRaceSweepCases are the sweep cases of runAttackRace (groups.go).
func runAttackRaceSweepCases(t *testing.T, f Factory) {

	// Complete and the sweep of a lapsed lease past the task's deadline
	// race freely: one of them decides, and it is recorded once.
	t.Run("a_complete_racing_the_sweep_of_its_lapsed_lease_is_decided_once", func(t *testing.T) {
		for i := 0; i < 5; i++ {
			e := newAttackEnv(t, f)
			task := e.submit(queue.SubmitRequest{Queue: attackQueue, TTL: check.Dur("30s")}, t0)
			c := e.claim(queue.ClaimRequest{Queue: attackQueue, LeaseFor: attackLease}, t0)[0]
			q1, q2 := e.reopen(), e.reopen()
			errs := race(
				func() error { return completeTask(q1, task.Ref(), c.Lease.Token, t0.Add(50*time.Second)) },
				func() error { _, err := q2.Sweep(ctx, t0.Add(2*attackLease), queue.SweepOptions{}); return err },
			)
			if errs[1] != nil {
				t.Fatalf("sweep: %v", errs[1])
			}
			got := e.get(task.ID)
			switch {
			case errs[0] == nil && got.Status != queue.StatusCompleted:
				t.Fatalf("the complete succeeded but the task is %s", got.Status)
			case errs[0] != nil && got.Status != queue.StatusExpired:
				t.Fatalf("the complete failed (%v) but the task is %s, want expired", errs[0], got.Status)
			}
			attackRecover(t, e, t0.Add(2*attackLease))
		}
	})
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

// runSweepSweepCases are the sweep cases of runSweep (groups.go).
func runSweepSweepCases(t *testing.T, f Factory) {
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
}

// deadlineLists is a store that counts the LISTs of deadline/ heads.
type deadlineLists struct {
	store.Store
	n atomic.Int64
}

func (d *deadlineLists) List(ctx context.Context, prefix, after string, limit int) (store.Page, error) {
	if strings.HasPrefix(prefix, "q/") && strings.HasSuffix(prefix, "/index/deadline/") {
		d.n.Add(1)
	}
	return d.Store.List(ctx, prefix, after, limit)
}

// runSweepQueues: however many queue names callers have sent, the sweep's
// own work is done first and the queue heads it has no time for wait for
// the next sweep.
func runSweepQueues(t *testing.T, f Factory) {
	t.Run("a_queue_declared_with_more_shards_than_the_deployment_is_swept_in_every_shard", func(t *testing.T) {
		e := newEnv(t, f)
		if _, _, err := e.decls.Declare(ctx, queues.Declaration{Name: "wide", Shards: 4}, t0); err != nil {
			t.Fatal(err)
		}
		var ids []string
		for i := 0; i < 12; i++ {
			ids = append(ids, e.submit(queue.SubmitRequest{Queue: "wide", TTL: check.Dur("1m")}, t0).Ref())
		}
		// A process that has not read the declaration, as a sweep's is.
		rep, err := e.reopen().Sweep(ctx, t0.Add(2*time.Minute), queue.SweepOptions{})
		if err != nil || rep.Expired != len(ids) {
			t.Fatalf("sweep: %+v %v", rep, err)
		}
		for _, id := range ids {
			wantStatus(t, e.get(id), queue.StatusExpired)
		}
	})

	t.Run("many_queue_names_with_due_wake_ups_do_not_stop_the_sweep_publishing_events", func(t *testing.T) {
		n := 20_000
		if f.Real {
			n = 300
		}
		e := newEnv(t, f)
		// An expiry whose event is owed, and one due in a queue of its own.
		owed := e.submit(queue.SubmitRequest{}, t0)
		if _, err := e.q.Expire(ctx, owed.Ref(), t0); err != nil {
			t.Fatal(err)
		}
		due := e.submit(queue.SubmitRequest{Queue: "zz-last", TTL: check.Dur("1m")}, t0)
		// n queue names, each with a wake-up due, as n submits with a
		// one-minute TTL leave them.
		keys := make([]string, 0, n)
		for i := 0; i < n; i++ {
			keys = append(keys, fmt.Sprintf("sweep/wake/%s_hostile-%05d", keyTime(t0), i))
		}
		e.putMany(keys)

		// The sweep runs out of time after 50 queue heads.
		rep, pub := sweepOutOfTime(t, e, 50)
		if !rep.Incomplete || rep.EventsSent != 1 || rep.QueuesDue < min(n, 1000) || rep.Queues >= rep.QueuesDue {
			t.Fatalf("first sweep: %+v", rep)
		}
		if evs := pub.take(); len(evs) != 1 || evs[0].TaskID != owed.ID {
			t.Fatalf("events: %+v", evs)
		}
		wantStatus(t, e.get(owed.Ref()), queue.StatusExpired)

		// Given time, the next sweep reads every head, expires the due
		// task, and deletes the wake-ups, past the grace.
		if rep := e.sweep(t0.Add(3*time.Minute), pub); rep.Incomplete || rep.Queues != n+1 || rep.WakeupsDeleted != n {
			t.Fatalf("second sweep: %+v", rep)
		}
		wantStatus(t, e.get(due.Ref()), queue.StatusExpired)
		if rep := e.sweep(t0.Add(4*time.Minute), pub); rep.Queues != 1 || rep.WakeupsDeleted != 1 {
			t.Fatalf("third sweep: %+v", rep) // zz-last's, read clean once more
		}
		if evs := pub.take(); len(evs) != 1 || evs[0].TaskID != due.ID {
			t.Fatalf("events: %+v", evs)
		}
		wantKeys(t, "wake-ups", e.wakeups())
		if rep := e.sweep(t0.Add(5*time.Minute), nil); rep.Requests != (store.Counts{List: 1}) {
			t.Fatalf("idle sweep: %v", rep.Requests)
		}
	})
}

// sweepOutOfTime runs a sweep at t0+1m whose clock passes its deadline
// once it has listed lists queue heads, and returns its report and what
// it published.
func sweepOutOfTime(t *testing.T, e *env, lists int64) (queue.SweepReport, *recorder) {
	t.Helper()
	gate := &deadlineLists{Store: e.s}
	wall := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time {
		if gate.n.Load() >= lists {
			return wall
		}
		return wall.Add(-time.Second)
	}
	pub := &recorder{}
	rep, err := e.open(gate).Sweep(ctx, t0.Add(time.Minute), queue.SweepOptions{Publisher: pub, Deadline: wall, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	return rep, pub
}

// runSweepRulesSweepCases are the sweep cases of runSweepRules (groups.go).
func runSweepRulesSweepCases(t *testing.T, f Factory) {

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
