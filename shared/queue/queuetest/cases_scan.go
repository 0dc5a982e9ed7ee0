package queuetest

import (
	"strings"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/store"
)

// runScan: a claim finds a due task wherever it stands in the index —
// behind a shard it did not start from, behind thousands of running tasks
// or tasks of other types, on the page after a drained one — and an idle
// claim stops listing at the first key that is not due yet. The big
// backlogs are smaller on real servers, for time; mem runs them in full.
func runScan(t *testing.T, f Factory) {
	t.Run("a_task_in_any_of_16_shards_is_taken_by_the_next_claim_at_two_lists_and_an_empty_claim_costs_two", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		e.declare(queues.Declaration{Name: "wide", Shards: queue.MaxShards}, t0)
		later := t0.Add(24 * time.Hour)
		for i := 0; i < 100; i++ { // not due: in every shard's head
			e.submit(queue.SubmitRequest{Queue: "wide", ScheduleAt: &later}, t0)
		}
		shards := map[string]bool{}
		for i := 0; i < 24; i++ {
			now := t0.Add(time.Duration(i+1) * time.Minute)
			task := e.submit(queue.SubmitRequest{Queue: "wide"}, now)
			shards[task.IndexKey[:strings.LastIndexByte(task.IndexKey, '/')]] = true
			c := store.NewCounting(e.s)
			cs, err := e.open(c).Claim(ctx, queue.ClaimRequest{Queue: "wide", LeaseFor: 12 * time.Hour}, now)
			if err != nil || len(cs) != 1 || cs[0].Task.ID != task.ID {
				t.Fatalf("claim %d: %+v %v", i, cs, err)
			}
			if n := c.Counts().List; n > 2 {
				t.Fatalf("claim %d (%s) made %d LISTs, want at most 2", i, task.IndexKey, n)
			}
			c = store.NewCounting(e.s)
			if cs, err := e.open(c).Claim(ctx, queue.ClaimRequest{Queue: "wide", LeaseFor: 12 * time.Hour}, now); err != nil || len(cs) != 0 {
				t.Fatalf("empty claim %d: %+v %v", i, cs, err)
			}
			if n := c.Counts().List; n > 2 {
				t.Fatalf("an empty claim made %d LISTs, want at most 2", n)
			}
		}
		if len(shards) < 8 {
			t.Fatalf("24 tasks in %d shards of 16", len(shards))
		}
	})

	// scale returns n, or small on a real server.
	scale := func(n, small int) int {
		if f.Real {
			return small
		}
		return n
	}

	t.Run("with_shards_every_claim_visits_every_shard", func(t *testing.T) {
		t.Parallel()
		e := newDeclEnv(t, f, queues.Options{Shards: 4}, func(o *queue.Options) { o.ListCacheFor = -1 })
		task := e.submit(queue.SubmitRequest{}, t0)
		n := scale(400, 40)
		for i := 0; i < n; i++ {
			// Each claim from a fresh process draws its own start shard.
			cs, err := e.reopen().Claim(ctx, queue.ClaimRequest{}, t0)
			if err != nil {
				t.Fatal(err)
			}
			if len(cs) == 0 {
				t.Fatalf("claim %d of %d returned nothing while a due task was pending", i+1, n)
			}
			// Put it back, runnable now.
			if _, err := e.q.Reschedule(ctx, queue.RescheduleRequest{ID: task.Ref(), LeaseToken: cs[0].Lease.Token}, t0); err != nil {
				t.Fatal(err)
			}
		}
	})

	t.Run("thousands_of_running_tasks_at_the_head_do_not_hide_a_due_one", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		n := scale(3000, 300)
		for i := 0; i < n; i++ {
			e.submit(queue.SubmitRequest{}, t0)
		}
		for got, i := 0, 0; got < n; i++ {
			if i > 1000 {
				t.Fatalf("setup: claimed %d of %d", got, n)
			}
			got += len(e.claim(queue.ClaimRequest{MaxTasks: 100, LeaseFor: 12 * time.Hour}, t0.Add(time.Second+time.Duration(i)*10*time.Millisecond)))
		}
		// An idle worker polling every 30s, in this process and in a fresh
		// one, finds a task submitted behind the running ones at its first try.
		for i, cq := range []*queue.Queue{e.q, e.reopen()} {
			for k := 1; k <= 3; k++ {
				now := t0.Add(time.Duration(i*3+k) * 30 * time.Second)
				late := e.submit(queue.SubmitRequest{}, now.Add(-time.Second))
				cs, err := cq.Claim(ctx, queue.ClaimRequest{}, now)
				if err != nil {
					t.Fatal(err)
				}
				if len(cs) != 1 || cs[0].Task.ID != late.ID {
					t.Errorf("process %d, claim at +%ds: got %d tasks, want %s", i, (i*3+k)*30, len(cs), late.ID)
				}
			}
		}
	})

	t.Run("thousands_of_due_tasks_of_other_types_do_not_hide_a_due_one", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		for i, n := 0, scale(3000, 300); i < n; i++ {
			e.submit(queue.SubmitRequest{TaskType: "a"}, t0)
		}
		for k := 1; k <= 3; k++ {
			now := t0.Add(time.Duration(k) * time.Minute)
			b := e.submit(queue.SubmitRequest{TaskType: "b"}, now.Add(-time.Second))
			cs := e.claim(queue.ClaimRequest{TaskTypes: []string{"b"}}, now)
			if len(cs) != 1 || cs[0].Task.ID != b.ID {
				t.Errorf("claim %d for type b: got %d tasks, want %s", k, len(cs), b.ID)
			}
		}
	})

	t.Run("claims_at_one_instant_read_the_page_after_a_drained_one", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		const n = 1001 // one past a LIST page
		for i := 0; i < n; i++ {
			e.submit(queue.SubmitRequest{}, t0)
		}
		total := 0
		for i := 0; i < 11; i++ {
			total += len(e.claim(queue.ClaimRequest{MaxTasks: 100}, t0.Add(time.Second)))
		}
		if total != n {
			t.Fatalf("11 claims of up to 100 at one instant got %d of %d due tasks", total, n)
		}
	})

	t.Run("an_idle_claim_stops_listing_at_the_first_key_not_yet_due", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		when := t0.Add(24 * time.Hour)
		for i, n := 0, scale(2500, 300); i < n; i++ { // on mem, past two LIST pages
			e.submit(queue.SubmitRequest{ScheduleAt: &when}, t0)
		}
		c := store.NewCounting(e.s)
		if cs, err := e.open(c).Claim(ctx, queue.ClaimRequest{}, t0.Add(time.Minute)); err != nil || len(cs) != 0 {
			t.Fatalf("claimed %d tasks (%v), want none", len(cs), err)
		}
		if n := c.Counts().List; n > 2 {
			t.Fatalf("an idle claim made %d LISTs (%s), want at most 2", n, c.Counts())
		}
	})
}
