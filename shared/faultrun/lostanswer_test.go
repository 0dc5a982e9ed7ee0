package faultrun_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/s3local"
	"github.com/s3q/s3q/shared/s3local/faultproxy"
	"github.com/s3q/s3q/shared/s3local/s3localtest"
	"github.com/s3q/s3q/shared/schedule"
	"github.com/s3q/s3q/shared/store"
)

var servers s3localtest.Servers

func TestMain(m *testing.M) { os.Exit(s3localtest.Main(m, &servers)) }

// t0 is the fixed clock of every lost-answer case: keys are made from
// times and ids, so a fixed clock and fixed ids make every run of a case
// send the same requests, and a shot can name one of them.
var t0 = time.Date(2026, 1, 28, 9, 0, 0, 0, time.UTC)

// ids are the fixed task ids of the cases.
var (
	idA = queue.DerivedID(t0, "a")
	idB = queue.DerivedID(t0, "b")
)

// lenv is one run of a case: a queue and a scheduler over a store whose
// every request goes through a proxy.
type lenv struct {
	p     *faultproxy.Proxy
	st    store.Store
	q     *queue.Queue
	decls *queues.Registry
	sched *schedule.Scheduler
	lease queue.Lease // the lease a setup's claim took
}

func newLenv(t *testing.T, srv *s3local.Server) *lenv {
	t.Helper()
	p, st, err := faultproxy.Front(t.Context(), srv, "la-"+rand.Text()+"/", faultproxy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	q, decls := queues.New(st, queues.Options{Core: queue.Options{Backoff: func(attempt int) time.Duration { return 10 * time.Second << (attempt - 1) }}})
	return &lenv{p: p, st: st, q: q, decls: decls, sched: schedule.New(st, q, schedule.Options{})}
}

func (e *lenv) submit(ctx context.Context, req queue.SubmitRequest) error {
	_, err := e.q.Submit(ctx, req, t0)
	return err
}

func (e *lenv) claim(ctx context.Context) error {
	c, err := e.q.Claim(ctx, queue.ClaimRequest{LeaseFor: 10 * time.Minute}, t0.Add(time.Second))
	if err == nil && len(c) != 1 {
		err = fmt.Errorf("claimed %d tasks, want 1", len(c))
	}
	if err == nil {
		e.lease = c[0].Lease
	}
	return err
}

// lostCase is one operation of the core whose conditional writes each
// lose their answer in turn.
type lostCase struct {
	name string
	// setup makes the state the operation starts from.
	setup func(ctx context.Context, e *lenv) error
	// op runs the operation once and describes what the caller got; an
	// error wrapping store.ErrRetryable is retried by the caller (a 503).
	op func(ctx context.Context, e *lenv) (string, error)
	// edge names the fix of issue 9 (branch edge) the case needed to
	// pass, if any: it shows in failures.
	edge string
	// replay is true when the operation, repeated with the same arguments
	// after it succeeded (a client whose answer from the API was lost),
	// must answer as the first did and change nothing.
	replay bool
	// randomIDs is true when the operation makes ids of its own (a fire's
	// id comes from the schedule's secret, new in each run): requests
	// are then matched, and states compared, with every id as "*".
	randomIDs bool
}

func task(t queue.Task, err error) (string, error) {
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("task %s %s attempt=%d", t.ID, t.Status, t.Attempt), nil
}

func submitted(r queue.SubmitResult, err error) (string, error) { return task(r.Task, err) }

var lostCases = []lostCase{
	{name: "submit", edge: lostCreates, replay: true, op: func(ctx context.Context, e *lenv) (string, error) {
		return submitted(e.q.Submit(ctx, queue.SubmitRequest{ID: idA, TaskType: "t", Input: json.RawMessage(`{"n":1}`)}, t0))
	}},
	{name: "submit_without_id", randomIDs: true, op: func(ctx context.Context, e *lenv) (string, error) {
		return submitted(e.q.Submit(ctx, queue.SubmitRequest{TaskType: "t"}, t0))
	}, edge: lostCreates},
	{name: "submit_without_id_with_dedup_key", randomIDs: true, op: func(ctx context.Context, e *lenv) (string, error) {
		return submitted(e.q.Submit(ctx, queue.SubmitRequest{TaskType: "t", DedupKey: "k"}, t0))
	}, edge: lostCreates},
	{name: "submit_with_ttl", edge: lostCreates, replay: true, op: func(ctx context.Context, e *lenv) (string, error) {
		return submitted(e.q.Submit(ctx, queue.SubmitRequest{ID: idA, TaskType: "t", TTL: ptr(queue.Duration(time.Hour))}, t0))
	}},
	{name: "submit_with_dedup_key", edge: lostCreates, replay: true, op: func(ctx context.Context, e *lenv) (string, error) {
		return submitted(e.q.Submit(ctx, queue.SubmitRequest{ID: idA, TaskType: "t", DedupKey: "k"}, t0))
	}},
	{name: "dedup_hit", edge: lostCreates, replay: true, setup: func(ctx context.Context, e *lenv) error {
		return e.submit(ctx, queue.SubmitRequest{ID: idA, TaskType: "t", DedupKey: "k"})
	}, op: func(ctx context.Context, e *lenv) (string, error) {
		r, err := e.q.Submit(ctx, queue.SubmitRequest{ID: idB, TaskType: "t", DedupKey: "k"}, t0.Add(time.Second))
		s, err := submitted(r, err)
		return fmt.Sprintf("%s deduplicated=%v", s, r.Deduplicated), err
	}},
	{name: "dedup_takeover_after_completion", edge: lostCreates, setup: func(ctx context.Context, e *lenv) error {
		if err := e.submit(ctx, queue.SubmitRequest{ID: idA, TaskType: "t", DedupKey: "k"}); err != nil {
			return err
		}
		if err := e.claim(ctx); err != nil {
			return err
		}
		_, err := e.q.Complete(ctx, queue.CompleteRequest{ID: queue.Ref(queue.DefaultQueue, idA), LeaseToken: e.lease.Token}, t0.Add(2*time.Second))
		return err
	}, op: func(ctx context.Context, e *lenv) (string, error) {
		r, err := e.q.Submit(ctx, queue.SubmitRequest{ID: idB, TaskType: "t", DedupKey: "k"}, t0.Add(3*time.Second))
		s, err := submitted(r, err)
		return fmt.Sprintf("%s deduplicated=%v", s, r.Deduplicated), err
	}},
	{name: "claim", setup: submitA, op: func(ctx context.Context, e *lenv) (string, error) {
		c, err := e.q.Claim(ctx, queue.ClaimRequest{LeaseFor: 10 * time.Minute}, t0.Add(time.Second))
		if err != nil || len(c) != 1 {
			return fmt.Sprintf("%d tasks", len(c)), err
		}
		return task(c[0].Task, nil)
	}},
	{name: "heartbeat", replay: true, setup: submitAndClaim, op: func(ctx context.Context, e *lenv) (string, error) {
		c, err := e.q.Heartbeat(ctx, queue.HeartbeatRequest{ID: queue.Ref(queue.DefaultQueue, idA), LeaseToken: e.lease.Token, LeaseFor: 20 * time.Minute}, t0.Add(2*time.Second))
		s, err := task(c.Task, err)
		return s + " lease_until=" + c.Lease.ExpiresAt.Format(time.RFC3339), err
	}},
	{name: "complete", replay: true, setup: submitAndClaim, op: func(ctx context.Context, e *lenv) (string, error) {
		return task(e.q.Complete(ctx, queue.CompleteRequest{ID: queue.Ref(queue.DefaultQueue, idA), LeaseToken: e.lease.Token, Output: json.RawMessage(`{"ok":true}`)}, t0.Add(2*time.Second)))
	}, edge: leaseReplay},
	{name: "fail_with_a_retry_left", replay: true, setup: submitAndClaim, op: func(ctx context.Context, e *lenv) (string, error) {
		return task(e.q.Fail(ctx, queue.FailRequest{ID: queue.Ref(queue.DefaultQueue, idA), LeaseToken: e.lease.Token, Error: "boom"}, t0.Add(2*time.Second)))
	}, edge: leaseReplay},
	{name: "fail_to_dead_letter", replay: true, setup: func(ctx context.Context, e *lenv) error {
		if err := e.submit(ctx, queue.SubmitRequest{ID: idA, TaskType: "t", MaxAttempts: 1}); err != nil {
			return err
		}
		return e.claim(ctx)
	}, op: func(ctx context.Context, e *lenv) (string, error) {
		return task(e.q.Fail(ctx, queue.FailRequest{ID: queue.Ref(queue.DefaultQueue, idA), LeaseToken: e.lease.Token, Error: "boom"}, t0.Add(2*time.Second)))
	}, edge: leaseReplay},
	{name: "reschedule", setup: submitAndClaim, op: func(ctx context.Context, e *lenv) (string, error) {
		return task(e.q.Reschedule(ctx, queue.RescheduleRequest{ID: queue.Ref(queue.DefaultQueue, idA), LeaseToken: e.lease.Token, Delay: queue.Duration(time.Minute)}, t0.Add(2*time.Second)))
	}},
	{name: "acknowledge_cancel", setup: func(ctx context.Context, e *lenv) error {
		if err := submitAndClaim(ctx, e); err != nil {
			return err
		}
		_, err := e.q.Cancel(ctx, idA, t0.Add(2*time.Second))
		return err
	}, op: func(ctx context.Context, e *lenv) (string, error) {
		return task(e.q.AckCancel(ctx, queue.AckCancelRequest{ID: queue.Ref(queue.DefaultQueue, idA), LeaseToken: e.lease.Token}, t0.Add(3*time.Second)))
	}},
	{name: "submit_expired_on_arrival", replay: true, op: func(ctx context.Context, e *lenv) (string, error) {
		return submitted(e.q.Submit(ctx, queue.SubmitRequest{ID: idA, TaskType: "t", TTL: ptr(queue.Duration(0))}, t0))
	}},
	{name: "submit_child", replay: true, setup: func(ctx context.Context, e *lenv) error {
		return e.submit(ctx, queue.SubmitRequest{ID: idA, TaskType: "t", TTL: ptr(queue.Duration(time.Hour))})
	}, op: func(ctx context.Context, e *lenv) (string, error) {
		return submitted(e.q.Submit(ctx, queue.SubmitRequest{ID: idB, TaskType: "t", ParentID: idA}, t0.Add(time.Second)))
	}},
	{name: "submit_batch", replay: true, op: func(ctx context.Context, e *lenv) (string, error) {
		rs, err := e.q.SubmitBatch(ctx, []queue.SubmitRequest{{ID: idA, TaskType: "t"}, {ID: idB, TaskType: "t", DedupKey: "k"}}, t0)
		if err != nil {
			return "", err
		}
		var out []string
		for _, r := range rs {
			s, err := submitted(r.Result, r.Err)
			if err != nil {
				return "", err
			}
			out = append(out, s)
		}
		return strings.Join(out, "; "), nil
	}},
	{name: "sweep_publishes_a_dead_letter", setup: func(ctx context.Context, e *lenv) error {
		if err := e.submit(ctx, queue.SubmitRequest{ID: idA, TaskType: "t", MaxAttempts: 1}); err != nil {
			return err
		}
		if err := e.claim(ctx); err != nil {
			return err
		}
		_, err := e.q.Fail(ctx, queue.FailRequest{ID: queue.Ref(queue.DefaultQueue, idA), LeaseToken: e.lease.Token, Error: "boom"}, t0.Add(2*time.Second))
		return err
	}, op: func(ctx context.Context, e *lenv) (string, error) {
		return timer(func() (string, error) {
			r, err := e.q.Sweep(ctx, t0.Add(time.Minute), queue.SweepOptions{})
			return fmt.Sprintf("events_sent=%d", r.EventsSent), err
		})
	}},
	{name: "claim_restarts_a_lapsed_lease", setup: submitAndClaim, op: func(ctx context.Context, e *lenv) (string, error) {
		c, err := e.q.Claim(ctx, queue.ClaimRequest{LeaseFor: 10 * time.Minute}, t0.Add(time.Hour))
		if err != nil || len(c) != 1 {
			return fmt.Sprintf("%d tasks", len(c)), err
		}
		return task(c[0].Task, nil)
	}},
	{name: "cancel_pending", setup: submitA, op: func(ctx context.Context, e *lenv) (string, error) {
		return task(e.q.Cancel(ctx, idA, t0.Add(time.Second)))
	}},
	{name: "cancel_running", setup: submitAndClaim, op: func(ctx context.Context, e *lenv) (string, error) {
		return task(e.q.Cancel(ctx, idA, t0.Add(2*time.Second)))
	}},
	{name: "retry", setup: func(ctx context.Context, e *lenv) error {
		if err := submitA(ctx, e); err != nil {
			return err
		}
		_, err := e.q.Cancel(ctx, idA, t0.Add(time.Second))
		return err
	}, op: func(ctx context.Context, e *lenv) (string, error) {
		return task(e.q.Retry(ctx, idA, t0.Add(2*time.Second)))
	}},
	{name: "expire", setup: submitA, op: func(ctx context.Context, e *lenv) (string, error) {
		return task(e.q.Expire(ctx, idA, t0.Add(time.Second)))
	}},
	{name: "sweep", setup: func(ctx context.Context, e *lenv) error {
		return e.submit(ctx, queue.SubmitRequest{ID: idA, TaskType: "t", TTL: ptr(queue.Duration(time.Minute))})
	}, op: func(ctx context.Context, e *lenv) (string, error) {
		// The sweep runs every minute: the caller is the next run.
		return timer(func() (string, error) {
			r, err := e.q.Sweep(ctx, t0.Add(2*time.Minute), queue.SweepOptions{})
			return fmt.Sprintf("expired=%d", r.Expired), err
		})
	}},
	{name: "schedule_create", edge: lostCreates, op: func(ctx context.Context, e *lenv) (string, error) {
		s, err := e.sched.Create(ctx, schedule.Request{ID: "s1", TaskType: "t", Cron: "*/5 * * * *"}, t0)
		return "schedule " + s.ID, err
	}},
	{name: "schedule_trigger", randomIDs: true, setup: createS1, op: func(ctx context.Context, e *lenv) (string, error) {
		f, err := e.sched.Trigger(ctx, "s1", t0.Add(time.Minute))
		return "fired " + f.TaskID, err
	}},
	{name: "schedule_pause", setup: createS1, op: func(ctx context.Context, e *lenv) (string, error) {
		s, err := e.sched.Pause(ctx, "s1", t0.Add(time.Minute))
		return "schedule " + s.ID, err
	}},
	{name: "tick_fire", randomIDs: true, setup: createS1, op: func(ctx context.Context, e *lenv) (string, error) {
		return timer(func() (string, error) {
			r, err := e.sched.Tick(ctx, t0.Add(5*time.Minute+time.Second))
			if err == nil && r.Errors > 0 {
				err = store.Retryable(fmt.Errorf("tick: %d errors", r.Errors))
			}
			return fmt.Sprintf("fired=%d", r.Fired), err
		})
	}},
}

// The fixes of issue 9 the cases needed.
const (
	lostCreates = "lost answers recognised on create-only writes"
	leaseReplay = "a repeated lease operation answering as the first did"
)

// createS1 creates schedule s1, every five minutes.
func createS1(ctx context.Context, e *lenv) error {
	_, err := e.sched.Create(ctx, schedule.Request{ID: "s1", TaskType: "t", Cron: "*/5 * * * *"}, t0)
	return err
}

func submitA(ctx context.Context, e *lenv) error {
	return e.submit(ctx, queue.SubmitRequest{ID: idA, TaskType: "t"})
}

func submitAndClaim(ctx context.Context, e *lenv) error {
	if err := submitA(ctx, e); err != nil {
		return err
	}
	return e.claim(ctx)
}

// timer runs a timer function as its schedule would: a failed run is
// followed by the next one, and a caller sees the last.
func timer(run func() (string, error)) (string, error) {
	s, err := run()
	if err != nil {
		if s, err = run(); err != nil {
			return s, err
		}
	}
	return run()
}

// callerRetries is how many times a caller repeats an operation that
// failed with a retryable error (an API client seeing 503).
const callerRetries = 3

// call runs the operation as a caller does: again, with the same
// arguments, while it fails retryably.
func (c lostCase) call(ctx context.Context, e *lenv) (got string, first error, err error) {
	got, err = c.op(ctx, e)
	first = err
	for i := 0; i < callerRetries && errors.Is(err, store.ErrRetryable); i++ {
		got, err = c.op(ctx, e)
	}
	return got, first, err
}

// TestLostAnswers loses the answer of each create-only and
// compare-and-swap write of each operation of the core, one write per
// run, through the real s3store over HTTP, and checks that the caller,
// retrying as a client does, gets what it would have got without the
// fault, and that the state left behind is the same.
func TestLostAnswers(t *testing.T) {
	onEachServer(t, lostCases, func(c lostCase) string { return c.name }, runLostCase)
}

func runLostCase(t *testing.T, srv *s3local.Server, c lostCase) {
	ctx := t.Context()
	fresh := func(t *testing.T) (*lenv, *faultproxy.Proxy) {
		e := newLenv(t, srv)
		if c.setup != nil {
			if err := c.setup(ctx, e); err != nil {
				t.Fatalf("setup: %v", err)
			}
		}
		return e, e.p
	}
	var want string
	var wantState map[string]string
	loseEachWrite(t, fresh, c.norm, func(e *lenv) {
		got, err := c.op(ctx, e)
		if err != nil {
			t.Fatalf("without faults: %v", err)
		}
		want = c.norm(got)
		t.Logf("without faults: %s", want)
		wantState = c.snapshot(t, e.st)
	}, func(t *testing.T, e *lenv) func() {
		got, first, err := c.call(ctx, e)
		return func() {
			if err != nil {
				t.Fatalf("the caller got %v (first %v), want %q%s", err, first, want, edgeNote(c))
			}
			if first != nil {
				t.Errorf("the core did not recognise its own write: the caller got %v and had to retry%s", first, edgeNote(c))
			}
			if got = c.norm(got); got != want {
				t.Errorf("the caller got %q, want %q%s", got, want, edgeNote(c))
			}
			if diff := diffState(wantState, c.snapshot(t, e.st)); diff != "" {
				t.Errorf("state left behind differs from a run without faults%s:\n%s", edgeNote(c), diff)
			}
			if !c.replay {
				return
			}
			again, err := c.op(ctx, e)
			if err != nil || c.norm(again) != want {
				t.Errorf("repeated after its success: %q, %v; want %q as the first time", again, err, want)
			}
			if diff := diffState(wantState, c.snapshot(t, e.st)); diff != "" {
				t.Errorf("state after a repeat differs from a run without faults:\n%s", diff)
			}
		}
	})
}

func edgeNote(c lostCase) string {
	if c.edge == "" {
		return ""
	}
	return " (needs " + c.edge + ")"
}

// uuid matches a task id.
var uuid = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// recordShard matches the record shard of a task key (one hex digit, a
// hash of the id).
var recordShard = regexp.MustCompile(`/tasks/[0-9a-f]/\*`)

// norm replaces every id in s by "*" when the case makes random ids, and
// with it the record shard the id picks.
func (c lostCase) norm(s string) string {
	if !c.randomIDs {
		return s
	}
	return recordShard.ReplaceAllString(uuid.ReplaceAllString(s, "*"), "/tasks/*/*")
}

// snapshot describes the state under a store: every record (task,
// schedule) by its fields that do not vary between runs, each dedup
// pointer by its holder, and every other key (markers, hints, history) by
// its presence. Keys that norm makes equal are told apart by a count
// ("tasks/*.json#2"), so a second task shows.
func (c lostCase) snapshot(t *testing.T, st store.Store) map[string]string {
	t.Helper()
	out := map[string]string{}
	for info, err := range store.All(t.Context(), st, "") {
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		switch {
		case strings.HasPrefix(info.Key, "tasks/"):
			obj, err := st.Get(t.Context(), info.Key)
			if err != nil {
				t.Fatalf("get %s: %v", info.Key, err)
			}
			// Lease tokens are random: only whether there is one counts.
			var tk map[string]any
			if err := json.Unmarshal(obj.Body, &tk); err != nil {
				t.Fatalf("%s: %v", info.Key, err)
			}
			for _, f := range []string{"lease_token", "ended_lease_token"} {
				if _, ok := tk[f]; ok {
					tk[f] = "(token)"
				}
			}
			b, _ := json.Marshal(tk)
			put(out, c.norm(info.Key), c.norm(string(b)))
		case strings.HasPrefix(info.Key, "dedup/"):
			obj, err := st.Get(t.Context(), info.Key)
			if err != nil {
				t.Fatalf("get %s: %v", info.Key, err)
			}
			var p struct {
				TaskID string `json:"task_id"`
			}
			_ = json.Unmarshal(obj.Body, &p)
			put(out, c.norm(info.Key), c.norm("held by "+p.TaskID))
		default:
			put(out, c.norm(info.Key), "present")
		}
	}
	return out
}

// put sets out[k] = v, or out[k#n] for the nth key equal to k.
func put(out map[string]string, k, v string) {
	key := k
	for n := 2; ; n++ {
		if _, ok := out[key]; !ok {
			out[key] = v
			return
		}
		key = fmt.Sprintf("%s#%d", k, n)
	}
}

// diffState lists the keys whose descriptions differ.
func diffState(want, got map[string]string) string {
	var lines []string
	for k, w := range want {
		if g, ok := got[k]; !ok {
			lines = append(lines, "missing "+k+": "+w)
		} else if g != w {
			lines = append(lines, "changed "+k+":\n  want "+w+"\n  got  "+g)
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			lines = append(lines, "extra "+k+": "+g)
		}
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

func ptr[T any](v T) *T { return &v }
