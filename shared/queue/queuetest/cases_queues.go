package queuetest

import (
	"bytes"
	"context"
	"fmt"
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

// typeDefaults is a fixed DefaultsSource.
type typeDefaults map[string]queue.TypeDefaults

func (d typeDefaults) TaskTypeDefaults(_ context.Context, taskType string, _ time.Time) (queue.TypeDefaults, bool, error) {
	v, ok := d[taskType]
	return v, ok, nil
}

func (e *env) declare(d queues.Declaration, now time.Time) queues.Declaration {
	e.t.Helper()
	out, _, err := e.decls.Declare(ctx, d, now)
	if err != nil {
		e.t.Fatalf("declare %s: %v", d.Name, err)
	}
	return out
}

func runQueues(t *testing.T, f Factory) {
	t.Run("a_queue_with_a_target_has_an_entry_in_the_push_queues_index_while_it_has_one", func(t *testing.T) {
		t.Parallel()
		e := newDeclEnv(t, f, queues.Options{AllowInsecureTargets: true})
		target := &queues.Target{URL: "http://127.0.0.1:1/", Secret: "s"}
		e.declare(queues.Declaration{Name: "pull"}, t0)
		e.declare(queues.Declaration{Name: "push", Target: target}, t0)
		wantKeys(t, "push index", e.keys(queue.PrefixTargets), queue.TargetKey("push"))
		e.declare(queues.Declaration{Name: "pull", Target: target}, t0.Add(time.Second))
		e.declare(queues.Declaration{Name: "push"}, t0.Add(time.Second)) // target removed
		wantKeys(t, "push index", e.keys(queue.PrefixTargets), queue.TargetKey("pull"))
		if err := e.decls.Delete(ctx, "pull", t0.Add(2*time.Second)); err != nil {
			t.Fatal(err)
		}
		wantKeys(t, "push index", e.keys(queue.PrefixTargets))
	})

	t.Run("a_queue_is_declared_read_changed_listed_and_deleted", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		d, created, err := e.decls.Declare(ctx, queues.Declaration{Name: "emails", TTL: check.Dur("1h"), MaxAttempts: 5, Timeout: check.Dur("2m"), MaxConcurrency: 4,
			Target: &queues.Target{URL: "https://example.com/hook", Secret: "/s3q/hook"}}, t0)
		if err != nil || !created || d.Shards != 1 || !d.CreatedAt.Equal(t0) {
			t.Fatalf("declare: %+v %v %v", d, created, err)
		}
		got, err := e.decls.Get(ctx, "emails", t0)
		if err != nil || got.MaxConcurrency != 4 || got.Target == nil || got.Target.Secret != "/s3q/hook" || got.TTL.Std() != time.Hour {
			t.Fatalf("get: %+v %v", got, err)
		}
		d2, created, err := e.decls.Declare(ctx, queues.Declaration{Name: "emails", MaxAttempts: 2}, t0.Add(time.Minute))
		if err != nil || created || d2.TTL != nil || d2.Target != nil || d2.MaxAttempts != 2 || !d2.CreatedAt.Equal(t0) || !d2.UpdatedAt.Equal(t0.Add(time.Minute)) {
			t.Fatalf("replace: %+v %v %v", d2, created, err)
		}
		e.declare(queues.Declaration{Name: "a-first"}, t0)
		list, err := e.decls.List(ctx, queues.ListRequest{Limit: 1})
		if err != nil || len(list.Queues) != 1 || list.Queues[0].Name != "a-first" || list.NextCursor != "a-first" {
			t.Fatalf("list page 1: %+v %v", list, err)
		}
		list, err = e.decls.List(ctx, queues.ListRequest{Limit: 1, Cursor: list.NextCursor})
		if err != nil || len(list.Queues) != 1 || list.Queues[0].Name != "emails" {
			t.Fatalf("list page 2: %+v %v", list, err)
		}
		if err := e.decls.Delete(ctx, "emails", t0); err != nil {
			t.Fatal(err)
		}
		_, err = e.decls.Get(ctx, "emails", t0)
		check.Err(t, err, queue.ErrQueueNotFound)
		check.Err(t, e.decls.Delete(ctx, "emails", t0), queue.ErrQueueNotFound)
		list, err = e.decls.List(ctx, queues.ListRequest{})
		if err != nil || len(list.Queues) != 1 || list.Queues[0].Name != "a-first" {
			t.Fatalf("list after the delete: %+v %v", list, err)
		}
		// Declared again, by hand and by a submit (the key is never
		// deleted: versitygw refuses If-None-Match over a delete marker).
		if d, created, err := e.decls.Declare(ctx, queues.Declaration{Name: "emails", MaxAttempts: 4}, t0.Add(time.Hour)); err != nil || !created || !d.CreatedAt.Equal(t0.Add(time.Hour)) {
			t.Fatalf("declare again: %+v %v %v", d, created, err)
		}
		if err := e.decls.Delete(ctx, "a-first", t0); err != nil {
			t.Fatal(err)
		}
		e.reopen().Submit(ctx, queue.SubmitRequest{TaskType: "t", Queue: "a-first"}, t0)
		if d, err := e.decls.Get(ctx, "a-first", t0); err != nil || !d.AutoDeclared {
			t.Fatalf("auto-declared again: %+v %v", d, err)
		}
	})

	t.Run("a_bad_declaration_names_its_field_and_writes_nothing", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		web := func(url, secret string) *queues.Target { return &queues.Target{URL: url, Secret: secret} }
		for _, c := range []struct {
			d     queues.Declaration
			field string
		}{
			{queues.Declaration{Name: "a/b"}, "queue"},
			{queues.Declaration{Name: ".."}, "queue"},
			{queues.Declaration{Name: "q", TTL: check.Dur("0s")}, "ttl"},
			{queues.Declaration{Name: "q", TTLFrom: "later"}, "ttl_from"},
			{queues.Declaration{Name: "q", MaxAttempts: -1}, "max_attempts"},
			{queues.Declaration{Name: "q", MaxAttempts: 1001}, "max_attempts"},
			{queues.Declaration{Name: "q", Timeout: check.Dur("13h")}, "timeout"},
			{queues.Declaration{Name: "q", Shards: 257}, "shards"},
			{queues.Declaration{Name: "q", Shards: queue.MaxShards + 1}, "shards"},
			{queues.Declaration{Name: "q", MaxConcurrency: -2}, "max_concurrency"},
			{queues.Declaration{Name: "q", MaxConcurrency: 1001}, "max_concurrency"},
			{queues.Declaration{Name: "q", Target: &queues.Target{}}, "target"},
			{queues.Declaration{Name: "q", Target: &queues.Target{Lambda: "f", URL: "https://x.example", Secret: "s"}}, "target.url"},
			{queues.Declaration{Name: "q", Target: &queues.Target{Lambda: "not a function"}}, "target.lambda"},
			{queues.Declaration{Name: "q", Target: &queues.Target{Lambda: "arn:aws:s3:::bucket"}}, "target.lambda"},
			{queues.Declaration{Name: "q", Target: &queues.Target{Lambda: "f", Secret: "/s"}}, "target.secret"},
			{queues.Declaration{Name: "q", Target: web("http://x.example/hook", "/s")}, "target.url"},
			{queues.Declaration{Name: "q", Target: web("ftp://x.example/hook", "/s")}, "target.url"},
			{queues.Declaration{Name: "q", Target: web("/relative", "/s")}, "target.url"},
			{queues.Declaration{Name: "q", Target: web("https://user:pw@x.example/", "/s")}, "target.url"},
			{queues.Declaration{Name: "q", Target: web("https://x.example/hook", "")}, "target.secret"},
			{queues.Declaration{Name: "q", Target: web("https://x.example/hook", "a secret")}, "target.secret"},
		} {
			_, _, err := e.decls.Declare(ctx, c.d, t0)
			check.Field(t, err, c.field)
			check.Err(t, err, queue.ErrInvalidInput)
		}
		if keys := e.allKeys(); len(keys) != 0 {
			t.Fatalf("bad declarations wrote %v", keys)
		}
		// The good targets pass: a name, an ARN with an alias, https.
		for i, tg := range []*queues.Target{
			{Lambda: "thumbs"},
			{Lambda: "arn:aws:lambda:eu-west-1:123456789012:function:thumbs:live"},
			web("https://x.example/hook?a=1", "/s3q/hook-secret"),
		} {
			if _, _, err := e.decls.Declare(ctx, queues.Declaration{Name: "ok" + string(rune('a'+i)), Target: tg}, t0); err != nil {
				t.Errorf("target %+v: %v", tg, err)
			}
		}
		// http only where the deployment allows insecure targets.
		dev := newDeclEnv(t, f, queues.Options{AllowInsecureTargets: true})
		if _, _, err := dev.decls.Declare(ctx, queues.Declaration{Name: "local", Target: web("http://127.0.0.1:9000/", "/s")}, t0); err != nil {
			t.Errorf("http target with insecure targets allowed: %v", err)
		}
	})

	t.Run("a_process_that_never_read_the_declaration_fails_and_reschedules_without_reading_it", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f) // the deployment's shards: 1
		e.declare(queues.Declaration{Name: "wide", Shards: 4}, t0)
		task := e.submit(queue.SubmitRequest{Queue: "wide"}, t0)
		now := t0
		claim := func() queue.Lease {
			t.Helper()
			cs, err := e.reopen().Claim(ctx, queue.ClaimRequest{Queue: "wide", LeaseFor: time.Minute}, now)
			if err != nil || len(cs) != 1 || cs[0].Task.ID != task.ID {
				t.Fatalf("claim at %s: %d tasks, %v", now.Format(time.RFC3339), len(cs), err)
			}
			return cs[0].Lease
		}
		for i, op := range []func(q *queue.Queue, tok string) (queue.Task, error){
			func(q *queue.Queue, tok string) (queue.Task, error) {
				return q.Fail(ctx, queue.FailRequest{ID: task.Ref(), LeaseToken: tok, Error: "again"}, now)
			},
			func(q *queue.Queue, tok string) (queue.Task, error) {
				return q.Reschedule(ctx, queue.RescheduleRequest{ID: task.Ref(), LeaseToken: tok}, now)
			},
		} {
			tok := claim()
			c := store.NewCounting(e.s)
			got, err := op(e.open(c), tok.Token) // another process: nothing cached
			if err != nil || got.Status != queue.StatusPending {
				t.Fatalf("op %d: %s, %v", i, got.Status, err)
			}
			// One GET, of the record: the marker goes to the deployment's
			// shards, which claims of the queue read as well.
			if n := c.Counts(); n.Get != 1 || !strings.HasPrefix(got.IndexKey, "q/wide/index/ready/0/") {
				t.Fatalf("op %d made %v and put its marker at %s; want one GET (the record) and the deployment's shard 0", i, n, got.IndexKey)
			}
			now = got.AvailableAt
		}
		claim()
	})

	t.Run("shards_are_fixed_at_creation", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		e.declare(queues.Declaration{Name: "wide", Shards: 4}, t0)
		_, _, err := e.decls.Declare(ctx, queues.Declaration{Name: "wide", Shards: 2}, t0)
		check.Field(t, err, "shards")
		if d := e.declare(queues.Declaration{Name: "wide", MaxAttempts: 2}, t0); d.Shards != 4 {
			t.Fatalf("shards = %d after an update that gave none, want 4", d.Shards)
		}
		// Its tasks spread over its 4 shards and are all claimed.
		for i := 0; i < 12; i++ {
			e.submit(queue.SubmitRequest{Queue: "wide"}, t0)
		}
		shards := map[string]bool{}
		for _, k := range e.keys("q/wide/index/ready/") {
			shards[k[:len("q/wide/index/ready/0/")]] = true
		}
		if len(shards) < 2 {
			t.Errorf("12 tasks used shards %v, want several of 4", shards)
		}
		got := e.claim(queue.ClaimRequest{Queue: "wide", MaxTasks: 12}, t0)
		if len(got) != 12 {
			t.Fatalf("claimed %d of 12", len(got))
		}
	})

	t.Run("an_undeclared_queue_is_queue_not_found_when_declarations_are_required", func(t *testing.T) {
		t.Parallel()
		e := newDeclEnv(t, f, queues.Options{RequireDeclared: true})
		_, err := e.q.Submit(ctx, queue.SubmitRequest{TaskType: "t", Queue: "ghost"}, t0)
		check.Err(t, err, queue.ErrQueueNotFound)
		_, err = e.q.Claim(ctx, queue.ClaimRequest{Queue: "ghost"}, t0)
		check.Err(t, err, queue.ErrQueueNotFound)
		_, err = e.q.Submit(ctx, queue.SubmitRequest{TaskType: "t"}, t0) // "default" too
		check.Err(t, err, queue.ErrQueueNotFound)
		if keys := e.allKeys(); len(keys) != 0 {
			t.Fatalf("a submit to an undeclared queue wrote %v", keys)
		}
		e.declare(queues.Declaration{Name: "ghost"}, t0)
		task := e.submit(queue.SubmitRequest{Queue: "ghost"}, t0)
		if cs := e.claim(queue.ClaimRequest{Queue: "ghost"}, t0); len(cs) != 1 || cs[0].Task.ID != task.ID {
			t.Fatalf("claim after declaring: %+v", cs)
		}
	})

	t.Run("auto_declare_declares_a_queue_on_its_first_submit_and_not_on_bad_input", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		_, err := e.q.Submit(ctx, queue.SubmitRequest{TaskType: "t", Queue: "fresh", TTL: check.Dur("-1s")}, t0)
		check.Field(t, err, "ttl")
		if keys := e.inQueues("/queue.json"); len(keys) != 0 {
			t.Fatalf("a bad submit declared %v", keys)
		}
		e.submit(queue.SubmitRequest{Queue: "fresh"}, t0)
		d, err := e.decls.Get(ctx, "fresh", t0)
		if err != nil || !d.AutoDeclared || d.Shards != 1 {
			t.Fatalf("auto-declared queue: %+v %v", d, err)
		}
		// A claim of a queue nobody submitted to finds nothing and declares nothing.
		if cs := e.claim(queue.ClaimRequest{Queue: "never"}, t0); len(cs) != 0 {
			t.Fatal("claimed from an empty queue")
		}
		if _, err := e.decls.Get(ctx, "never", t0); err == nil {
			t.Fatal("a claim declared a queue")
		}
	})

	t.Run("max_queues_bounds_declarations_by_hand_and_on_submit", func(t *testing.T) {
		t.Parallel()
		e := newDeclEnv(t, f, queues.Options{MaxQueues: 2})
		e.declare(queues.Declaration{Name: "a"}, t0)
		e.submit(queue.SubmitRequest{Queue: "b"}, t0)
		_, _, err := e.decls.Declare(ctx, queues.Declaration{Name: "c"}, t0)
		check.Err(t, err, queue.ErrTooManyQueues)
		_, err = e.q.Submit(ctx, queue.SubmitRequest{TaskType: "t", Queue: "d"}, t0)
		check.Err(t, err, queue.ErrTooManyQueues)
		e.declare(queues.Declaration{Name: "a", MaxAttempts: 9}, t0) // changing one still works
		if n := len(e.inQueues("/queue.json")); n != 2 {
			t.Fatalf("%d queues, want 2", n)
		}
		if n := len(e.inQueues("/tasks/")); n != 1 {
			t.Fatalf("%d tasks, want only b's", n)
		}
		// A deleted queue makes room.
		if err := e.decls.Delete(ctx, "a", t0); err != nil {
			t.Fatal(err)
		}
		e.declare(queues.Declaration{Name: "c"}, t0)
	})

	t.Run("a_queue_with_live_tasks_is_not_deleted", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		e.declare(queues.Declaration{Name: "busy"}, t0)
		e.submit(queue.SubmitRequest{Queue: "busy", Delay: check.Dur("1h")}, t0)
		check.Err(t, e.decls.Delete(ctx, "busy", t0), queue.ErrQueueNotEmpty)
		task := e.submit(queue.SubmitRequest{Queue: "busy", TTL: check.Dur("1d")}, t0)
		c := e.claim(queue.ClaimRequest{Queue: "busy"}, t0)
		if len(c) != 1 || c[0].Task.ID != task.ID {
			t.Fatalf("claim: %+v", c)
		}
		check.Err(t, e.decls.Delete(ctx, "busy", t0), queue.ErrQueueNotEmpty)
		if _, err := e.q.Complete(ctx, queue.CompleteRequest{ID: task.Ref(), LeaseToken: c[0].Lease.Token}, t0); err != nil {
			t.Fatal(err)
		}
		for _, tk := range e.list(queue.ListRequest{Queue: "busy", Status: queue.StatusPending}) {
			if _, err := e.q.Cancel(ctx, tk.Ref(), t0); err != nil {
				t.Fatal(err)
			}
		}
		if err := e.decls.Delete(ctx, "busy", t0); err != nil {
			t.Fatalf("delete once its tasks are done: %v", err)
		}
	})

	t.Run("defaults_resolve_request_then_task_type_then_queue_then_global", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f, func(o *queue.Options) {
			o.DefaultTTL = 10 * time.Hour
			o.TypeDefaults = typeDefaults{"typed": {MaxAttempts: 7, Timeout: 7 * time.Minute}}
		})
		e.declare(queues.Declaration{Name: "q", TTL: check.Dur("2h"), MaxAttempts: 5, Timeout: check.Dur("3m")}, t0)
		e.declare(queues.Declaration{Name: "firsts", TTL: check.Dur("30m"), TTLFrom: queue.TTLFromFirstAttempt}, t0)
		wantDefaults := func(name string, task queue.Task, ttl time.Duration, attempts int, timeout time.Duration) {
			t.Helper()
			if task.ExpiresAt == nil || task.ExpiresAt.Sub(task.CreatedAt) != ttl || task.MaxAttempts != attempts || task.Timeout.Std() != timeout {
				t.Errorf("%s: expires_at %v, max_attempts %d, timeout %s; want ttl %s, %d, %s",
					name, task.ExpiresAt, task.MaxAttempts, task.Timeout, ttl, attempts, timeout)
			}
		}
		wantDefaults("queue defaults", e.submit(queue.SubmitRequest{TaskType: "plain", Queue: "q"}, t0), 2*time.Hour, 5, 3*time.Minute)
		wantDefaults("task type over queue", e.submit(queue.SubmitRequest{TaskType: "typed", Queue: "q"}, t0), 2*time.Hour, 7, 7*time.Minute)
		wantDefaults("request over all", e.submit(queue.SubmitRequest{TaskType: "typed", Queue: "q", TTL: check.Dur("1m"), MaxAttempts: 2, Timeout: check.Dur("1m")}, t0),
			time.Minute, 2, time.Minute)
		wantDefaults("global without queue defaults", e.submit(queue.SubmitRequest{TaskType: "plain", Queue: "bare"}, t0), 10*time.Hour, 3, queue.DefaultTimeout)
		ff := e.submit(queue.SubmitRequest{TaskType: "plain", Queue: "firsts"}, t0)
		if ff.ExpiresAt != nil || ff.TTLFrom != queue.TTLFromFirstAttempt || ff.TTL == nil || ff.TTL.Std() != 30*time.Minute {
			t.Errorf("queue ttl_from first_attempt: %+v", ff)
		}
	})

	t.Run("a_view_of_one_queue_finds_no_task_of_another_and_changes_nothing", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		task := e.submit(queue.SubmitRequest{Queue: "a"}, t0)
		other := e.q.In("b")
		c := e.claim(queue.ClaimRequest{Queue: "a", LeaseFor: time.Minute}, t0)[0]
		before := e.raw(task.Ref())
		_, err := other.Get(ctx, task.Ref())
		check.Err(t, err, queue.ErrNotFound)
		_, err = allHistory(other, task.Ref())
		check.Err(t, err, queue.ErrNotFound)
		// Nor does a page after its last version (which reads no version).
		if h, err := e.q.In("a").History(ctx, queue.HistoryRequest{ID: task.ID}); err != nil {
			t.Fatal(err)
		} else {
			_, err = other.History(ctx, queue.HistoryRequest{ID: task.Ref(), Cursor: h.Versions[len(h.Versions)-1].VersionID})
			check.Err(t, err, queue.ErrNotFound)
		}
		_, err = other.Heartbeat(ctx, queue.HeartbeatRequest{ID: task.Ref(), LeaseToken: c.Lease.Token}, t0)
		check.Err(t, err, queue.ErrNotFound)
		_, err = other.Complete(ctx, queue.CompleteRequest{ID: task.Ref(), LeaseToken: c.Lease.Token}, t0)
		check.Err(t, err, queue.ErrNotFound)
		_, err = other.Fail(ctx, queue.FailRequest{ID: task.Ref(), LeaseToken: c.Lease.Token, Error: "x"}, t0)
		check.Err(t, err, queue.ErrNotFound)
		_, err = other.Reschedule(ctx, queue.RescheduleRequest{ID: task.Ref(), LeaseToken: c.Lease.Token}, t0)
		check.Err(t, err, queue.ErrNotFound)
		_, err = other.AckCancel(ctx, queue.AckCancelRequest{ID: task.Ref(), LeaseToken: c.Lease.Token}, t0)
		check.Err(t, err, queue.ErrNotFound)
		for _, op := range []func(context.Context, string, time.Time) (queue.Task, error){other.Cancel, other.Retry, other.Expire} {
			_, err := op(ctx, task.ID, t0)
			check.Err(t, err, queue.ErrNotFound)
		}
		if !bytes.Equal(before, e.raw(task.Ref())) {
			t.Fatal("an operation under another queue changed the record")
		}
		_, err = other.Submit(ctx, queue.SubmitRequest{TaskType: "t", Queue: "a"}, t0)
		check.Field(t, err, "queue")
		if res, err := other.List(ctx, queue.ListRequest{}); err != nil || len(res.Tasks) != 0 {
			t.Fatalf("list under b: %+v %v", res, err)
		}
		if got, err := e.q.In("a").Get(ctx, task.ID); err != nil || got.ID != task.ID {
			t.Fatalf("get under a: %v", err)
		}
	})

	t.Run("counts_come_from_the_index_markers", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		d := e.declare(queues.Declaration{Name: "c", MaxConcurrency: 2}, t0)
		e.submit(queue.SubmitRequest{Queue: "c"}, t0)
		e.submit(queue.SubmitRequest{Queue: "c", TTL: check.Dur("1h")}, t0)
		e.submit(queue.SubmitRequest{Queue: "c", Delay: check.Dur("1h")}, t0)
		e.claim(queue.ClaimRequest{Queue: "c"}, t0)
		got, err := e.q.CountQueue(ctx, d.Settings(), t0)
		if err != nil || got.Live != 3 || got.Delayed != 1 || got.Running == nil || *got.Running != 1 {
			t.Fatalf("counts: %+v %v", got, err)
		}
	})

	runConcurrency(t, f)
}

// runConcurrency proves max_concurrency: however many claimers race, at
// most max_concurrency tasks of the queue hold a valid lease at once.
func runConcurrency(t *testing.T, f Factory) {
	t.Run("racing_claimers_never_start_more_than_max_concurrency", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		const limit = 3
		e.declare(queues.Declaration{Name: "mc", MaxConcurrency: limit}, t0)
		for i := 0; i < 10; i++ {
			e.submit(queue.SubmitRequest{Queue: "mc"}, t0)
		}
		remaining := 10
		for round := 0; remaining > 0; round++ {
			now := t0.Add(time.Duration(round) * time.Second)
			var won []queue.Claimed
			var mu sync.Mutex
			var wg sync.WaitGroup
			var failed atomic.Value
			start := make(chan struct{})
			for w := 0; w < Workers; w++ {
				q := e.reopen() // each claimer its own process
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					cs, err := q.Claim(ctx, queue.ClaimRequest{Queue: "mc", LeaseFor: time.Minute, MaxTasks: 2}, now)
					if err != nil {
						failed.Store(err)
					}
					mu.Lock()
					won = append(won, cs...)
					mu.Unlock()
				}()
			}
			close(start)
			wg.Wait()
			if err, _ := failed.Load().(error); err != nil {
				t.Fatalf("round %d: claim: %v", round, err)
			}
			if len(won) > limit {
				t.Fatalf("round %d: %d tasks started at once, max_concurrency is %d", round, len(won), limit)
			}
			if len(won) == 0 {
				t.Fatalf("round %d: nothing claimed with %d tasks left and every slot free", round, remaining)
			}
			d, _ := e.decls.Get(ctx, "mc", now)
			if c, err := e.q.CountQueue(ctx, d.Settings(), now); err != nil || *c.Running != len(won) {
				t.Fatalf("round %d: %v slots held for %d running tasks (%v)", round, c.Running, len(won), err)
			}
			for _, c := range won {
				if _, err := e.q.Complete(ctx, queue.CompleteRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token}, now); err != nil {
					t.Fatal(err)
				}
			}
			remaining -= len(won)
			if round > 20 {
				t.Fatal("the queue does not drain")
			}
		}
		d, _ := e.decls.Get(ctx, "mc", t0)
		if c, _ := e.q.CountQueue(ctx, d.Settings(), t0); *c.Running != 0 {
			t.Fatalf("%d slots held after every task completed", *c.Running)
		}
	})

	t.Run("workers_claiming_and_completing_at_once_never_run_more_than_max_concurrency", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		const limit, tasks = 2, 24
		e.declare(queues.Declaration{Name: "steady", MaxConcurrency: limit}, t0)
		for i := 0; i < tasks; i++ {
			e.submit(queue.SubmitRequest{Queue: "steady"}, t0)
		}
		var running, most, done atomic.Int32
		var wg sync.WaitGroup
		errs := make(chan error, Workers)
		for w := 0; w < Workers/2; w++ {
			q := e.reopen() // each worker its own process, with its own cached listings
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; done.Load() < tasks && i < 40*tasks; i++ {
					now := t0.Add(time.Duration(i) * 100 * time.Millisecond)
					cs, err := q.Claim(ctx, queue.ClaimRequest{Queue: "steady", LeaseFor: time.Hour}, now)
					if err != nil {
						errs <- err
						return
					}
					for _, c := range cs {
						// Counted from the claim until before the complete: a
						// window inside the one the slot is held in, so more
						// than max_concurrency counted at once is a real breach.
						n := running.Add(1)
						for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
						}
						time.Sleep(time.Millisecond) // the work (wall time; the clock is now)
						running.Add(-1)
						if _, err := q.Complete(ctx, queue.CompleteRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token}, now); err != nil {
							errs <- err
							return
						}
						done.Add(1)
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if done.Load() != tasks {
			t.Fatalf("%d of %d tasks done", done.Load(), tasks)
		}
		if m := most.Load(); m > limit {
			t.Fatalf("%d tasks ran at once, max_concurrency is %d", m, limit)
		}
	})

	t.Run("every_way_out_of_running_gives_the_slot_back", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		e.declare(queues.Declaration{Name: "one", MaxConcurrency: 1}, t0)
		for i := 0; i < 5; i++ {
			e.submit(queue.SubmitRequest{Queue: "one", MaxAttempts: 5}, t0)
		}
		next := func(now time.Time) queue.Claimed {
			t.Helper()
			cs := e.claim(queue.ClaimRequest{Queue: "one", LeaseFor: time.Minute}, now)
			if len(cs) != 1 {
				t.Fatalf("claim at %s: %d tasks, want 1", now.Format(time.TimeOnly), len(cs))
			}
			if more := e.claim(queue.ClaimRequest{Queue: "one"}, now); len(more) != 0 {
				t.Fatalf("a second task started with max_concurrency 1")
			}
			return cs[0]
		}
		c := next(t0)
		if _, err := e.q.Fail(ctx, queue.FailRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token, Error: "x", Retryable: ptrBool(true)}, t0); err != nil {
			t.Fatal(err)
		}
		c = next(t0)
		if _, err := e.q.Reschedule(ctx, queue.RescheduleRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token, Delay: *check.Dur("1h")}, t0); err != nil {
			t.Fatal(err)
		}
		c = next(t0)
		if _, err := e.q.Cancel(ctx, c.Task.Ref(), t0); err != nil {
			t.Fatal(err)
		}
		if _, err := e.q.AckCancel(ctx, queue.AckCancelRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token}, t0); err != nil {
			t.Fatal(err)
		}
		c = next(t0)
		if _, err := e.q.Complete(ctx, queue.CompleteRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token}, t0); err != nil {
			t.Fatal(err)
		}
		next(t0)
	})

	t.Run("a_slot_of_a_dead_worker_is_taken_over_once_its_lease_lapses", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		e.declare(queues.Declaration{Name: "dead", MaxConcurrency: 2}, t0)
		for i := 0; i < 4; i++ {
			e.submit(queue.SubmitRequest{Queue: "dead"}, t0)
		}
		first := e.claim(queue.ClaimRequest{Queue: "dead", LeaseFor: time.Minute, MaxTasks: 4}, t0)
		if len(first) != 2 {
			t.Fatalf("claimed %d, want 2", len(first))
		}
		// One worker heartbeats, the other dies. Fresh processes find no
		// slot while the leases are valid, and the dead one's after.
		hb, err := e.q.Heartbeat(ctx, queue.HeartbeatRequest{ID: first[0].Task.Ref(), LeaseToken: first[0].Lease.Token, LeaseFor: 10 * time.Minute}, t0.Add(50*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if cs, err := e.reopen().Claim(ctx, queue.ClaimRequest{Queue: "dead", LeaseFor: time.Minute, MaxTasks: 4}, t0.Add(30*time.Second)); err != nil || len(cs) != 0 {
			t.Fatalf("claim while both leases are valid: %d tasks, %v", len(cs), err)
		}
		later := t0.Add(time.Minute + time.Second)
		got, err := e.reopen().Claim(ctx, queue.ClaimRequest{Queue: "dead", LeaseFor: time.Minute, MaxTasks: 4}, later)
		if err != nil || len(got) != 1 {
			t.Fatalf("claim after one lease lapsed: %d tasks, %v; want 1 (the other is heartbeating)", len(got), err)
		}
		// The heartbeating task still holds its slot and gives it back.
		if _, err := e.q.Complete(ctx, queue.CompleteRequest{ID: hb.Task.Ref(), LeaseToken: hb.Lease.Token}, later); err != nil {
			t.Fatal(err)
		}
		if cs := e.claim(queue.ClaimRequest{Queue: "dead", LeaseFor: time.Minute, MaxTasks: 4}, later); len(cs) != 1 {
			t.Fatalf("claim after the complete: %d tasks, want 1", len(cs))
		}
		if keys := e.keys("q/dead/slots/"); len(keys) != 2 {
			t.Fatalf("slots %v, want 2", keys)
		}
	})

	t.Run("max_concurrency_costs_a_list_and_two_puts_per_task", func(t *testing.T) {
		t.Parallel()
		perTask := func(mc int) store.Counts {
			t.Helper()
			c := store.NewCounting(f.New(t))
			q, decls := queues.New(c, queues.Options{})
			name := "cost"
			if _, _, err := decls.Declare(ctx, queues.Declaration{Name: name, MaxConcurrency: mc}, t0); err != nil {
				t.Fatal(err)
			}
			const n = 50
			c.Reset()
			for i := 0; i < n; i++ {
				// 20 ms apart: a LIST serves the claims of a second, as in
				// a busy worker process (Options.ListCacheFor).
				now := t0.Add(time.Duration(i) * 20 * time.Millisecond)
				if _, err := q.Submit(ctx, queue.SubmitRequest{TaskType: "t", Queue: name}, now); err != nil {
					t.Fatal(err)
				}
				cs, err := q.Claim(ctx, queue.ClaimRequest{Queue: name, LeaseFor: time.Minute}, now)
				if err != nil || len(cs) != 1 {
					t.Fatalf("claim: %d %v", len(cs), err)
				}
				if _, err := q.Complete(ctx, queue.CompleteRequest{ID: cs[0].Task.Ref(), LeaseToken: cs[0].Lease.Token}, now); err != nil {
					t.Fatal(err)
				}
			}
			return c.Counts()
		}
		const n = 50
		without, with := perTask(0), perTask(5)
		per := func(c store.Counts) string {
			return fmt.Sprintf("put=%.2f list=%.2f get=%.2f delete=%.2f", float64(c.Put)/n, float64(c.List)/n, float64(c.Get)/n, float64(c.Delete)/n)
		}
		t.Logf("requests per task (submit, claim, complete): without max_concurrency %s; with %s", per(without), per(with))
		if d := with.Sub(without); d.Put != 2*n || d.List > n/10 || d.Delete != 0 || d.Get != 0 {
			t.Errorf("max_concurrency adds %s per task, want 2 PUTs, an amortised LIST, no GET or DELETE", per(d))
		}
	})
}

func ptrBool(b bool) *bool { return &b }

func (e *env) list(req queue.ListRequest) []queue.Task {
	e.t.Helper()
	res, err := e.q.List(ctx, req)
	if err != nil {
		e.t.Fatalf("list: %v", err)
	}
	return res.Tasks
}

// listIDs lists every page of req, following its cursors, and returns the
// ids in the order listed. A listing still going after 20 pages fails.
func (e *env) listIDs(req queue.ListRequest) []string {
	e.t.Helper()
	var ids []string
	for pages := 1; ; pages++ {
		if pages > 20 {
			e.t.Fatalf("still listing after 20 pages: %v", ids)
		}
		res, err := e.q.List(ctx, req)
		if err != nil {
			e.t.Fatalf("list: %v", err)
		}
		for _, task := range res.Tasks {
			ids = append(ids, task.ID)
		}
		if req.Cursor = res.NextCursor; req.Cursor == "" {
			return ids
		}
	}
}
