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
	"github.com/s3q/s3q/shared/store/storefault"
)

// The attack listing cases: a claim's LIST overtaken by this Queue's own
// writes (a submit, a fail with retries, a complete) while it is in
// flight. This Queue's own writes are to be seen at once by its next
// claim, whatever the listing cache says, and a task it finished is not
// handed out again.

// listGate holds the first LIST of a prefix containing match until
// released, and says when it is held.
type listGate struct {
	store.Store
	match string

	mu      sync.Mutex
	armed   bool
	held    chan struct{} // closed when the LIST is held
	release chan struct{} // closed to let it go
}

func newListGate(s store.Store, match string) *listGate {
	return &listGate{Store: s, match: match, armed: true, held: make(chan struct{}), release: make(chan struct{})}
}

func (g *listGate) List(ctx context.Context, prefix, startAfter string, limit int) (store.Page, error) {
	g.mu.Lock()
	hold := g.armed && strings.Contains(prefix, g.match)
	if hold {
		g.armed = false
	}
	g.mu.Unlock()
	if hold {
		page, err := g.Store.List(ctx, prefix, startAfter, limit) // answered now, delivered late
		close(g.held)
		<-g.release
		return page, err
	}
	return g.Store.List(ctx, prefix, startAfter, limit)
}

func runAttackScan(t *testing.T, f Factory) {
	for _, w := range []struct {
		name string
		// setup returns a write to make while the LIST is in flight, and
		// the task the next claim must get ("" for none).
		setup func(e *env, q *queue.Queue) (write func() error, want func() string)
	}{
		{"a_submit", func(e *env, q *queue.Queue) (func() error, func() string) {
			var id string
			return func() error {
					res, err := q.Submit(ctx, queue.SubmitRequest{TaskType: "x"}, t0)
					id = res.Task.ID
					return err
				},
				func() string { return id }
		}},
		{"a_fail_with_retries_left", func(e *env, q *queue.Queue) (func() error, func() string) {
			task := e.submit(queue.SubmitRequest{}, t0.Add(-time.Hour))
			c := e.claim(queue.ClaimRequest{LeaseFor: 2 * time.Hour}, t0.Add(-time.Hour))[0]
			return func() error {
					_, err := q.Fail(ctx, queue.FailRequest{ID: task.Ref(), LeaseToken: c.Lease.Token, Error: "x", RetryAfter: time.Nanosecond}, t0.Add(-time.Second))
					return err
				},
				func() string { return task.ID }
		}},
		{"a_complete", func(e *env, q *queue.Queue) (func() error, func() string) {
			task := e.submit(queue.SubmitRequest{}, t0.Add(-time.Hour))
			c := e.claim(queue.ClaimRequest{LeaseFor: 2 * time.Hour}, t0.Add(-time.Hour))[0]
			// Back to pending (reschedule), then claimed by this Queue and
			// completed while its LIST, which holds the marker, is in flight.
			if _, err := e.q.Reschedule(ctx, queue.RescheduleRequest{ID: task.Ref(), LeaseToken: c.Lease.Token}, t0.Add(-time.Minute)); err != nil {
				e.t.Fatal(err)
			}
			return func() error {
					cs, err := e.open(e.s).Claim(ctx, queue.ClaimRequest{}, t0)
					if err != nil || len(cs) != 1 {
						e.t.Fatalf("claim: %v, %d", err, len(cs))
					}
					return completeTask(q, cs[0].Task.Ref(), cs[0].Lease.Token, t0)
				},
				func() string { return "" }
		}},
	} {
		t.Run("a_claim_whose_LIST_is_overtaken_by_"+w.name+"_of_its_own_process_sees_it_at_once", func(t *testing.T) {
			e := newEnv(t, f, func(o *queue.Options) { o.ListCacheFor = time.Hour })
			gate := newListGate(e.s, "/index/") // the claim indexes: a claim lists their folder
			q := e.open(gate)
			write, want := w.setup(e, q)
			// Warm the declaration, not the listing: the first LIST is the
			// gated one.
			done := make(chan []queue.Claimed, 1)
			go func() {
				cs, err := q.Claim(ctx, queue.ClaimRequest{Queue: queue.DefaultQueue, LeaseFor: time.Minute}, t0)
				if err != nil {
					t.Error(err)
				}
				done <- cs
			}()
			<-gate.held
			if err := write(); err != nil {
				close(gate.release)
				t.Fatal(err)
			}
			close(gate.release)
			first := <-done
			got := map[string]int{}
			for _, c := range first {
				got[c.Task.ID]++
			}
			second, err := q.Claim(ctx, queue.ClaimRequest{LeaseFor: time.Minute, MaxTasks: 10}, t0)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range second {
				got[c.Task.ID]++
			}
			id := want()
			for gid, n := range got {
				if n > 1 || gid != id {
					t.Fatalf("claims got %v, want only %q once", got, id)
				}
			}
			if id != "" && got[id] != 1 {
				t.Fatalf("this process's own %s was not seen by its next claim (got %v)", w.name, got)
			}
		})
	}
}

// runFastIndexCases are the index cases of runFast (groups.go).
func runFastIndexCases(t *testing.T, f Factory) {

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
}

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

// The claim-index marker and its queue's wake-up (side_marker.go).
func runSideMarker(t *testing.T, f Factory) {
	t.Run("a_task_has_exactly_the_marker_its_record_names_while_it_is_pending_or_running_and_none_once_finished", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		wantKeys(t, "markers before the submit", e.markers())
		task := e.submit(queue.SubmitRequest{}, t0)
		wantKeys(t, "markers after the submit", e.markers(), task.IndexKey)
		c := e.claimOne(t0)
		wantKeys(t, "markers while it runs", e.markers(), task.IndexKey)
		retried, err := e.q.Fail(ctx, queue.FailRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token, Error: "x"}, t0)
		if err != nil {
			t.Fatal(err)
		}
		if retried.IndexKey == task.IndexKey {
			t.Fatalf("the retry kept marker %s", task.IndexKey)
		}
		wantKeys(t, "markers after a fail with retries left", e.markers(), retried.IndexKey)
		c = e.claimOne(t0.Add(time.Hour))
		if _, err := e.q.Complete(ctx, queue.CompleteRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token}, t0.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		wantKeys(t, "markers after the complete", e.markers())
		e.consistent()
	})

	t.Run("a_deadline_marker_comes_with_its_queues_wake_up_for_that_minute", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		task := e.submit(queue.SubmitRequest{TTL: check.Dur("1h")}, t0)
		if !strings.Contains(task.IndexKey, "/index/deadline/") {
			t.Fatalf("marker %s, want one under deadline/", task.IndexKey)
		}
		wantKeys(t, "markers", e.markers(), task.IndexKey)
		w := e.wakeups()
		wantKeyCount(t, "wake-ups", w, 1)
		if !strings.HasSuffix(w[0], "_default") {
			t.Fatalf("wake-up %s is not the default queue's", w[0])
		}
	})

	t.Run("a_fail_whose_record_write_fails_leaves_the_task_running_and_its_new_marker_a_stale_hint_that_a_claim_deletes", func(t *testing.T) {
		t.Parallel()
		e, fs := newLossEnv(t, f)
		task := e.submit(queue.SubmitRequest{}, t0)
		c := e.claim(queue.ClaimRequest{LeaseFor: crashLease}, t0)[0]
		recordWriteFails(t, e, fs, "default", task.Ref(), func() error {
			_, err := e.q.Fail(ctx, queue.FailRequest{ID: task.Ref(), LeaseToken: c.Lease.Token, Error: "x"}, t0.Add(time.Second))
			return err
		})
		if m := e.markers(); len(m) != 2 {
			t.Fatalf("markers %v, want the record's and the failed write's", m)
		}
		wantStatus(t, e.get(task.Ref()), queue.StatusRunning)
		// Nothing starts it while its lease is valid.
		if cs, err := e.reopen().Claim(ctx, queue.ClaimRequest{}, t0.Add(30*time.Second)); err != nil || len(cs) != 0 {
			t.Fatalf("claim during the lease: %d tasks, %v", len(cs), err)
		}
		recoverAll(t, e, t0)
		wantStatus(t, e.get(task.Ref()), queue.StatusCompleted)
		wantKeys(t, "markers after recovery", e.markers())
	})

	t.Run("a_fail_whose_marker_answer_was_lost_writes_one_marker_and_the_task_runs_again_once", func(t *testing.T) {
		t.Parallel()
		e, fs := newLossEnv(t, f)
		task := e.submit(queue.SubmitRequest{}, t0)
		c := e.claimOne(t0)
		lose(fs, storefault.OpPut, "q/default/index/ready/")
		got, err := e.q.Fail(ctx, queue.FailRequest{ID: task.Ref(), LeaseToken: c.Lease.Token, Error: "x"}, t0)
		if err != nil {
			t.Fatal(err)
		}
		wantHits(t, fs, 1)
		wantKeys(t, "markers", e.markers(), got.IndexKey)
		e.consistent()
		again := e.claimOne(t0.Add(time.Hour))
		if again.Task.ID != task.ID || again.Task.Attempt != 2 {
			t.Fatalf("claimed %s attempt %d, want %s attempt 2", again.Task.ID, again.Task.Attempt, task.ID)
		}
		e.claimNone(t0.Add(time.Hour))
	})

	t.Run("a_deadline_marker_whose_answer_was_lost_still_lets_the_sweep_find_the_task", func(t *testing.T) {
		t.Parallel()
		e, fs := newLossEnv(t, f)
		lose(fs, storefault.OpPut, "q/default/index/deadline/")
		res, err := e.q.Submit(ctx, queue.SubmitRequest{TaskType: "email.send", TTL: check.Dur("1m")}, t0)
		if err != nil {
			t.Fatal(err)
		}
		wantHits(t, fs, 1)
		e.consistent()
		rep := e.sweep(t0.Add(2*time.Minute), nil)
		if rep.Expired != 1 {
			t.Fatalf("sweep expired %d, want 1", rep.Expired)
		}
		wantStatus(t, e.get(res.Task.Ref()), queue.StatusExpired)
	})

	t.Run("a_complete_and_a_fail_racing_from_one_version_leave_one_winner_with_its_marker", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		task := e.submit(queue.SubmitRequest{}, t0)
		c := e.claim(queue.ClaimRequest{LeaseFor: crashLease}, t0)[0]
		p1, p2 := e.cached(task.Ref()), e.cached(task.Ref())
		now := t0.Add(time.Second)
		errs := race(
			func() error {
				_, err := p1.Complete(ctx, queue.CompleteRequest{ID: task.Ref(), LeaseToken: c.Lease.Token}, now)
				return err
			},
			func() error {
				_, err := p2.Fail(ctx, queue.FailRequest{ID: task.Ref(), LeaseToken: c.Lease.Token, Error: "x"}, now)
				return err
			},
		)
		win := oneWinner(t, errs)
		got := e.get(task.Ref())
		want := []queue.Status{queue.StatusCompleted, queue.StatusPending}[win]
		wantStatus(t, got, want)
		// The winner's marker is there (a loser's is a stale hint).
		if got.IndexKey != "" && !slices.Contains(e.markers(), got.IndexKey) {
			t.Fatalf("the winner names marker %s, which is missing: %v", got.IndexKey, e.markers())
		}
		recoverAll(t, e, now)
		wantKeys(t, "markers after recovery", e.markers())
	})
}
