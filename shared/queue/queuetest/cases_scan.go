package queuetest

import (
	"context"
	"slices"
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

// runScan: a claim finds a due task wherever it stands in the index —
// behind a shard it did not start from, behind thousands of running tasks
// or tasks of other types, on the page after a drained one — and an idle
// claim stops listing at the first key that is not due yet. The big
// backlogs are smaller on real servers, for time; mem runs them in full.
func runScan(t *testing.T, f Factory) {
	t.Run("a_task_in_any_of_16_shards_is_taken_by_the_next_claim_at_one_list_and_an_empty_claim_costs_one", func(t *testing.T) {
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
			if n := c.Counts().List; n != 1 {
				t.Fatalf("claim %d (%s) made %d LISTs, want 1 (of both claim indexes at once)", i, task.IndexKey, n)
			}
			c = store.NewCounting(e.s)
			if cs, err := e.open(c).Claim(ctx, queue.ClaimRequest{Queue: "wide", LeaseFor: 12 * time.Hour}, now); err != nil || len(cs) != 0 {
				t.Fatalf("empty claim %d: %+v %v", i, cs, err)
			}
			if n := c.Counts().List; n != 1 {
				t.Fatalf("an empty claim made %d LISTs, want 1", n)
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
		if n := c.Counts().List; n != 1 {
			t.Fatalf("an idle claim made %d LISTs (%s), want 1", n, c.Counts())
		}
	})

	// One LIST reads both claim indexes while they are sparse, deadline/
	// first. deadline/ sorts by expiry, not availability, so a listing cut
	// short inside it by markers not yet available must not keep a due
	// ready/ task from the claim: ready/ is then listed from its own root.
	// On a real server pages are cut to 100 keys, for time (mem shows
	// the full pages of 1,000).
	backlog, page := scale(1500, 300), scale(store.MaxListLimit, 100)
	delayed := func(e *env, index string) {
		keys := make([]string, backlog)
		for i := range keys {
			id := queue.NewID(t0)
			switch index {
			case "deadline":
				keys[i] = queue.DeadlineMarkerKey(queue.DefaultQueue, 0, t0.Add(2*time.Hour+time.Duration(i)*time.Second), t0.Add(time.Hour), id)
			case "ready":
				keys[i] = strings.Replace(queue.DeadlineMarkerKey(queue.DefaultQueue, 0, t0.Add(time.Hour), t0, id), "/index/deadline/0/", "/index/ready/0/", 1)
			}
		}
		e.putMany(keys)
	}

	t.Run("a_backlog_of_deadline_markers_not_yet_available_does_not_hide_a_due_ready_task", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		delayed(e, "deadline") // delayed tasks with a TTL: a full page and more
		for i, s := range []store.Store{e.s, smallPages{e.s, page}} {
			now := t0.Add(time.Duration(2*i+1) * time.Minute)
			due := e.submit(queue.SubmitRequest{}, now)
			c := store.NewCounting(s)
			cs, err := e.open(c).Claim(ctx, queue.ClaimRequest{LeaseFor: 12 * time.Hour}, now)
			if err != nil || len(cs) != 1 || cs[0].Task.ID != due.ID {
				t.Fatalf("claim %d: %+v %v, want the ready task %s at once", i, cs, err, due.ID)
			}
			// The index folder's page, the rest of deadline/, ready/.
			if n, most := c.Counts().List, int64((backlog+page-1)/page+2); n > most {
				t.Errorf("claim %d made %d LISTs, want at most %d", i, n, most)
			}
		}
		// A process that saw deadline/'s head page full lists the two
		// indexes at the same time on its next claim, one round trip as
		// with a LIST of the folder: a due ready/ task waits for no extra
		// LIST.
		// (Each index is read from its head with the priority folders
		// that sort before its shards: one LIST of the index folder.)
		g := &pairedLists{Store: smallPages{e.s, page}, first: "q/default/index/deadline/-p1", second: "q/default/index/ready/-p1", started: make(chan struct{})}
		warm := e.open(g)
		for k, now := range []time.Time{t0.Add(10 * time.Minute), t0.Add(11 * time.Minute)} {
			if k == 1 {
				g.armed.Store(true)
			}
			due := e.submit(queue.SubmitRequest{}, now)
			cs, err := warm.Claim(ctx, queue.ClaimRequest{LeaseFor: 12 * time.Hour}, now)
			if err != nil || len(cs) != 1 || cs[0].Task.ID != due.ID {
				t.Fatalf("warm claim %d: %+v %v, want the ready task %s", k, cs, err, due.ID)
			}
		}
		if !g.paired.Load() {
			t.Errorf("the warm claim did not list deadline/ and ready/ at the same time")
		}
	})

	t.Run("a_backlog_of_ready_markers_not_yet_due_does_not_hide_a_due_deadline_task", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		delayed(e, "ready")
		for i, s := range []store.Store{e.s, smallPages{e.s, page}} {
			now := t0.Add(time.Duration(2*i+1) * time.Minute)
			due := e.submit(queue.SubmitRequest{TTL: check.Dur("1h")}, now)
			c := store.NewCounting(s)
			cs, err := e.open(c).Claim(ctx, queue.ClaimRequest{LeaseFor: 12 * time.Hour}, now)
			if err != nil || len(cs) != 1 || cs[0].Task.ID != due.ID {
				t.Fatalf("claim %d: %+v %v, want the task with a deadline %s at once", i, cs, err, due.ID)
			}
			if n := c.Counts().List; n != 1 {
				t.Errorf("claim %d made %d LISTs, want 1: deadline/ sorts first", i, n)
			}
		}
	})

	t.Run("counts_read_both_claim_indexes_with_one_list_and_a_full_deadline_index_does_not_hide_ready", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		d := e.declare(queues.Declaration{Name: queue.DefaultQueue, Shards: 4}, t0)
		c := store.NewCounting(e.s)
		got, err := e.open(c).CountQueue(ctx, d.Settings(), t0)
		// The claim indexes' folder, the three status indexes, the records.
		if err != nil || got.Live != 0 || c.Counts().List != 5 {
			t.Fatalf("empty: %+v %v, %d LISTs, want 5", got, err, c.Counts().List)
		}
		// Pages of 10 keys: deadline/ holds 15 pages, past the 10 a count
		// reads of each index; ready/ is counted all the same.
		delayedN := 15 * 10
		keys := make([]string, delayedN)
		for i := range keys {
			keys[i] = queue.DeadlineMarkerKey(queue.DefaultQueue, i%4, t0.Add(2*time.Hour+time.Duration(i)*time.Second), t0.Add(time.Hour), queue.NewID(t0))
		}
		e.putMany(keys)
		for i := 0; i < 3; i++ {
			e.submit(queue.SubmitRequest{}, t0)
		}
		got, err = e.q.CountQueue(ctx, d.Settings(), t0)
		if err != nil || got.Live != delayedN+3 || got.Delayed != delayedN || got.AtLeast {
			t.Fatalf("counts: %+v %v, want %d live, %d delayed", got, err, delayedN+3, delayedN)
		}
		got, err = e.open(smallPages{e.s, 10}).CountQueue(ctx, d.Settings(), t0)
		if err != nil || got.Live != queue.MaxCountPages*10+3 || !got.AtLeast {
			t.Fatalf("counts in pages of 10: %+v %v, want %d deadline markers (at least) and the 3 ready ones", got, err, queue.MaxCountPages*10)
		}
	})

	t.Run("a_capped_live_count_marks_only_live_as_a_lower_bound_and_leaves_completed_out", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		d := e.declare(queues.Declaration{Name: queue.DefaultQueue}, t0)
		keys := make([]string, (queue.MaxCountPages+2)*10)
		for i := range keys {
			keys[i] = queue.DeadlineMarkerKey(queue.DefaultQueue, 0, t0.Add(2*time.Hour+time.Duration(i)*time.Second), t0.Add(time.Hour), queue.NewID(t0))
		}
		e.putMany(keys)
		expired := e.submit(queue.SubmitRequest{}, t0)
		if _, err := e.q.Expire(ctx, expired.Ref(), t0); err != nil {
			t.Fatal(err)
		}
		got, err := e.open(smallPages{e.s, 10}).CountQueue(ctx, d.Settings(), t0)
		if err != nil || !got.AtLeast || !slices.Equal(got.Capped, []string{"live"}) || got.Expired != 1 || got.IsCapped("expired") || got.Completed != nil {
			t.Fatalf("counts in pages of 10: %+v %v; want live capped, 1 expired exactly, completed absent", got, err)
		}
	})

	t.Run("the_sweep_reads_only_the_deadline_index", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		delayed(e, "ready")
		gone := e.submit(queue.SubmitRequest{TTL: check.Dur("1m")}, t0)
		l := &listed{Store: e.s}
		rep, err := e.open(l).Sweep(ctx, t0.Add(2*time.Minute), queue.SweepOptions{Publisher: &recorder{}})
		if err != nil || rep.Expired != 1 {
			t.Fatalf("sweep: %+v %v", rep, err)
		}
		head := false
		for _, p := range l.prefixes {
			head = head || p == "q/default/index/deadline/"
			if strings.HasPrefix(p, "q/") && p != "q/default/index/deadline/" {
				t.Errorf("the sweep listed %s", p)
			}
		}
		if !head {
			t.Errorf("the sweep did not read the deadline head: it listed %v", l.prefixes)
		}
		if got := e.get(gone.ID); got.Status != queue.StatusExpired {
			t.Fatalf("task %s: %s", gone.ID, got.Status)
		}
	})
}

// pairedLists holds, once armed, the first LIST of prefix first from its
// start until a LIST of prefix second from its start has begun, and
// notes whether it did (paired): the two were in flight at the same time.
// Each is named by its prefix when listed from its start, or by the key
// a LIST of its parent folder starts after.
// Listed one after the other, the first gives up after 30s (a failure,
// never a wait of the passing case).
type pairedLists struct {
	store.Store
	first, second string
	armed         atomic.Bool
	paired        atomic.Bool
	once          sync.Once
	started       chan struct{}
}

func (p *pairedLists) List(ctx context.Context, prefix, startAfter string, limit int) (store.Page, error) {
	if name := prefix; p.armed.Load() && (startAfter == "" || strings.HasSuffix(startAfter, "/-p1")) {
		if startAfter != "" {
			name = startAfter
		}
		switch name {
		case p.second:
			p.once.Do(func() { close(p.started) })
		case p.first:
			select {
			case <-p.started:
				p.paired.Store(true)
			case <-time.After(30 * time.Second):
			}
			p.armed.Store(false)
		}
	}
	return p.Store.List(ctx, prefix, startAfter, limit)
}

// listed is a store that notes the prefix of each LIST.
type listed struct {
	store.Store
	mu       sync.Mutex
	prefixes []string
}

func (l *listed) List(ctx context.Context, prefix, startAfter string, limit int) (store.Page, error) {
	l.mu.Lock()
	l.prefixes = append(l.prefixes, prefix)
	l.mu.Unlock()
	return l.Store.List(ctx, prefix, startAfter, limit)
}

// smallPages is a store whose LIST pages hold at most n keys, as a
// bigger backlog would fill them.
type smallPages struct {
	store.Store
	n int
}

func (s smallPages) List(ctx context.Context, prefix, startAfter string, limit int) (store.Page, error) {
	if limit <= 0 || limit > s.n {
		limit = s.n
	}
	return s.Store.List(ctx, prefix, startAfter, limit)
}
