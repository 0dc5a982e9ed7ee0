package queuetest

import (
	"bytes"
	"context"
	"encoding/json"
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

// runCancelRulesLeaseCases are the lease cases of runCancelRules (groups.go).
func runCancelRulesLeaseCases(t *testing.T, f Factory) {

	t.Run("a_retry_with_the_default_backoff_is_available_at_a_whole_microsecond", func(t *testing.T) {
		t.Parallel()
		// The default backoff has jitter; a time off the microsecond would
		// make the record and its index key disagree.
		e := newEnv(t, f, func(o *queue.Options) { o.Backoff = nil })
		for i := 0; i < 20; i++ {
			e.submit(queue.SubmitRequest{}, t0)
		}
		for _, c := range e.claim(queue.ClaimRequest{MaxTasks: 20}, t0) {
			got, err := e.q.Fail(ctx, queue.FailRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token, Error: "x"}, t0)
			if err != nil {
				t.Fatal(err)
			}
			if got.AvailableAt.Nanosecond()%1000 != 0 {
				t.Fatalf("a retry is available at %s (index key %s): not a whole microsecond", got.AvailableAt.Format(time.RFC3339Nano), got.IndexKey)
			}
		}
	})
}

// runFastLeaseCases are the lease cases of runFast (groups.go).
func runFastLeaseCases(t *testing.T, f Factory) {
	t.Run("a_complete_after_this_processes_claim_is_one_write_and_no_read", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		id := e.submit(queue.SubmitRequest{}, t0).Ref()
		c := store.NewCounting(e.s)
		worker, cl := e.claimedOver(c)
		c.Reset()
		done, err := worker.Complete(ctx, queue.CompleteRequest{ID: id, LeaseToken: cl.Lease.Token, Output: []byte(`1`)}, t0.Add(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		wantStatus(t, done, queue.StatusCompleted)
		if got := c.Counts(); got.Get != 0 || got.Put != 1 || got.Delete != 1 {
			t.Fatalf("complete made %v, want one PUT and the marker's DELETE, no GET", got)
		}
		if m := e.markers(); len(m) != 0 {
			t.Fatalf("markers left: %v", m)
		}
	})

	t.Run("a_complete_on_a_stale_cached_record_reads_it_once_and_lands", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		id := e.submit(queue.SubmitRequest{}, t0).Ref()
		c := store.NewCounting(e.s)
		worker, cl := e.claimedOver(c)
		// Another process (another Lambda container) heartbeats: the
		// worker's cached version is stale, and its lease looks lapsed
		// by then while it is not.
		if _, err := e.reopen().Heartbeat(ctx, queue.HeartbeatRequest{ID: id, LeaseToken: cl.Lease.Token, LeaseFor: time.Minute}, t0.Add(50*time.Second)); err != nil {
			t.Fatal(err)
		}
		c.Reset()
		done, err := worker.Complete(ctx, queue.CompleteRequest{ID: id, LeaseToken: cl.Lease.Token, Output: []byte(`{"ok":true}`)}, t0.Add(90*time.Second))
		if err != nil {
			t.Fatalf("complete under the extended lease: %v", err)
		}
		if done.Status != queue.StatusCompleted || string(done.Output) != `{"ok":true}` {
			t.Fatalf("task %s output %s", done.Status, done.Output)
		}
		if got := c.Counts(); got.Get != 1 || got.Put != 1 {
			t.Fatalf("complete made %v, want one GET (the cached version was refused) and one PUT", got)
		}
	})

	t.Run("a_heartbeat_on_a_stale_cached_record_retries_after_the_precondition", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		id := e.submit(queue.SubmitRequest{}, t0).Ref()
		c := store.NewCounting(e.s)
		worker, cl := e.claimedOver(c)
		if _, err := e.reopen().Cancel(ctx, id, t0.Add(time.Second)); err != nil { // a cancel request
			t.Fatal(err)
		}
		c.Reset()
		hb, err := worker.Heartbeat(ctx, queue.HeartbeatRequest{ID: id, LeaseToken: cl.Lease.Token, LeaseFor: time.Minute}, t0.Add(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if !hb.Task.CancelRequested {
			t.Fatal("the heartbeat did not see the cancel request another process wrote")
		}
		if got := c.Counts(); got.Get != 1 || got.Put != 2 {
			t.Fatalf("heartbeat made %v, want a refused PUT, a GET and a PUT", got)
		}
	})

	t.Run("with_background_cleanup_a_complete_answers_before_its_marker_delete", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f, func(o *queue.Options) { o.BackgroundCleanup = true })
		id := e.submit(queue.SubmitRequest{}, t0).Ref()
		c := e.claimOne(t0)
		answered := make(chan struct{})
		gated := &deleteGate{Store: e.s, open: answered}
		worker := e.open(gated)
		// The worker's cache holds the claimed record, as e.q's does.
		if _, err := worker.Heartbeat(ctx, queue.HeartbeatRequest{ID: id, LeaseToken: c.Lease.Token, LeaseFor: time.Minute}, t0); err != nil {
			t.Fatal(err)
		}
		returned := make(chan error, 1)
		go func() {
			_, err := worker.Complete(ctx, queue.CompleteRequest{ID: id, LeaseToken: c.Lease.Token}, t0.Add(time.Second))
			returned <- err
		}()
		select {
		case err := <-returned:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(time.Minute):
			t.Fatal("complete waited for its marker delete")
		}
		close(answered) // only now may the delete run
		worker.Flush()
		if m := e.markers(); len(m) != 0 {
			t.Fatalf("markers left after Flush: %v", m)
		}
		wantStatus(t, e.get(id), queue.StatusCompleted)
	})
}

// deleteGate holds every Delete until open is closed.
type deleteGate struct {
	store.Store
	open chan struct{}
}

func (g *deleteGate) Delete(ctx context.Context, key string) error {
	<-g.open
	return g.Store.Delete(ctx, key)
}

func runLease(t *testing.T, f Factory) {
	t.Run("heartbeat_extends_the_lease_and_keeps_the_token", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		e.submit(queue.SubmitRequest{}, t0)
		c := e.claim(queue.ClaimRequest{LeaseFor: time.Minute}, t0)[0]
		hb, err := e.q.Heartbeat(ctx, queue.HeartbeatRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token, LeaseFor: 2 * time.Minute}, t0.Add(50*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if hb.Lease.Token != c.Lease.Token || !hb.Lease.ExpiresAt.Equal(t0.Add(170*time.Second)) {
			t.Fatalf("heartbeat lease %+v", hb.Lease)
		}
		// Past the original expiry, the extended lease still holds.
		other := e.reopen()
		if cs, _ := other.Claim(ctx, queue.ClaimRequest{}, t0.Add(2*time.Minute)); len(cs) != 0 {
			t.Fatal("claimed a task whose lease was extended")
		}
		if _, err := e.q.Complete(ctx, queue.CompleteRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token}, t0.Add(2*time.Minute)); err != nil {
			t.Fatalf("complete under the extended lease: %v", err)
		}
	})

	t.Run("complete_stores_the_output_and_drops_the_marker", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		e.submit(queue.SubmitRequest{TTL: check.Dur("1h")}, t0)
		c := e.claimOne(t0)
		done, err := e.q.Complete(ctx, queue.CompleteRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token, Output: []byte(`{"sent":true}`)}, t0.Add(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		wantStatus(t, done, queue.StatusCompleted)
		got := e.get(c.Task.Ref())
		wantStatus(t, got, queue.StatusCompleted)
		wantTime(t, "completed_at", got.CompletedAt, t0.Add(time.Second))
		wantTime(t, "expires_at", got.ExpiresAt, t0.Add(time.Hour)) // still reported
		if string(got.Output) != `{"sent":true}` || got.LeaseToken != "" || got.IndexKey != "" {
			t.Fatalf("completed record: output=%s token=%q index=%q", got.Output, got.LeaseToken, got.IndexKey)
		}
		if m := e.markers(); len(m) != 0 {
			t.Fatalf("markers left: %v", m)
		}
		e.claimNone(t0.Add(time.Hour))
	})

	t.Run("every_lease_error_leaves_the_record_byte_for_byte_unchanged", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		a := e.submit(queue.SubmitRequest{}, t0)
		b := e.submit(queue.SubmitRequest{}, t0)
		c := e.claimOne(t0)
		runID, pendID := c.Task.Ref(), b.Ref()
		if runID == b.Ref() {
			pendID = a.Ref()
		}
		type op struct {
			name string
			call func(id, token string, now time.Time) error
		}
		ops := []op{
			{"heartbeat", func(id, tok string, now time.Time) error {
				_, err := e.q.Heartbeat(ctx, queue.HeartbeatRequest{ID: id, LeaseToken: tok, LeaseFor: time.Minute}, now)
				return err
			}},
			{"complete", func(id, tok string, now time.Time) error {
				_, err := e.q.Complete(ctx, queue.CompleteRequest{ID: id, LeaseToken: tok, Output: []byte(`1`)}, now)
				return err
			}},
			{"fail", func(id, tok string, now time.Time) error {
				_, err := e.q.Fail(ctx, queue.FailRequest{ID: id, LeaseToken: tok, Error: "x"}, now)
				return err
			}},
			{"reschedule", func(id, tok string, now time.Time) error {
				_, err := e.q.Reschedule(ctx, queue.RescheduleRequest{ID: id, LeaseToken: tok, Delay: queue.Duration(time.Minute)}, now)
				return err
			}},
			{"ack_cancel", func(id, tok string, now time.Time) error {
				_, err := e.q.AckCancel(ctx, queue.AckCancelRequest{ID: id, LeaseToken: tok}, now)
				return err
			}},
		}
		lease := c.Task.Timeout.Std()
		for _, o := range ops {
			cases := []struct {
				what  string
				id    string
				token string
				now   time.Time
				want  error
			}{
				{"not running", pendID, c.Lease.Token, t0, queue.ErrNotRunning},
				{"wrong token", runID, "not-the-token", t0, queue.ErrLeaseMismatch},
				{"empty token", runID, "", t0, queue.ErrLeaseMismatch},
				{"expired lease", runID, c.Lease.Token, t0.Add(lease), queue.ErrLeaseExpired},
			}
			for _, tc := range cases {
				before := map[string][]byte{runID: e.raw(runID), pendID: e.raw(pendID)}
				keys := e.allKeys()
				err := o.call(tc.id, tc.token, tc.now)
				if err == nil {
					t.Fatalf("%s with %s: no error", o.name, tc.what)
				}
				check.Err(t, err, tc.want)
				for id, b := range before {
					if after := e.raw(id); !bytes.Equal(after, b) {
						t.Fatalf("%s with %s changed task %s:\nbefore %s\nafter  %s", o.name, tc.what, id, b, after)
					}
				}
				if after := e.allKeys(); strings.Join(after, "\n") != strings.Join(keys, "\n") {
					t.Fatalf("%s with %s changed the keys: %v -> %v", o.name, tc.what, keys, after)
				}
			}
		}
		_, err := e.q.Heartbeat(ctx, queue.HeartbeatRequest{ID: runID, LeaseToken: c.Lease.Token, LeaseFor: -time.Second}, t0)
		check.Err(t, err, queue.ErrInvalidLeaseDuration)
		_, err = e.q.Heartbeat(ctx, queue.HeartbeatRequest{ID: "../../etc/passwd", LeaseToken: c.Lease.Token, LeaseFor: time.Second}, t0)
		check.Field(t, err, "id")
		_, err = e.q.Complete(ctx, queue.CompleteRequest{ID: queue.Ref(queue.DefaultQueue, queue.NewID(t0)), LeaseToken: "tok"}, t0)
		check.Err(t, err, queue.ErrNotFound)
	})

	// A lease's task is always in a named queue. A bare id used to mean
	// queue default, so a task claimed from another queue and completed
	// by its id answered not found; it is refused naming queue, outside a
	// queue's view, whatever queue the task is in.
	t.Run("a_lease_call_with_a_bare_id_outside_a_view_is_refused_naming_queue", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		e.submit(queue.SubmitRequest{Queue: "mail", TaskType: "x"}, t0)
		e.submit(queue.SubmitRequest{TaskType: "x"}, t0)
		inMail := e.claim(queue.ClaimRequest{Queue: "mail", LeaseFor: time.Minute}, t0)[0]
		inDefault := e.claimOne(t0)
		calls := map[string]func(q *queue.Queue, id, tok string) error{
			"heartbeat": func(q *queue.Queue, id, tok string) error {
				_, err := q.Heartbeat(ctx, queue.HeartbeatRequest{ID: id, LeaseToken: tok, LeaseFor: time.Minute}, t0)
				return err
			},
			"complete": func(q *queue.Queue, id, tok string) error {
				_, err := q.Complete(ctx, queue.CompleteRequest{ID: id, LeaseToken: tok}, t0)
				return err
			},
			"fail": func(q *queue.Queue, id, tok string) error {
				_, err := q.Fail(ctx, queue.FailRequest{ID: id, LeaseToken: tok, Error: "x"}, t0)
				return err
			},
			"reschedule": func(q *queue.Queue, id, tok string) error {
				_, err := q.Reschedule(ctx, queue.RescheduleRequest{ID: id, LeaseToken: tok}, t0)
				return err
			},
			"ack_cancel": func(q *queue.Queue, id, tok string) error {
				_, err := q.AckCancel(ctx, queue.AckCancelRequest{ID: id, LeaseToken: tok}, t0)
				return err
			},
		}
		keys := e.allKeys()
		before := map[string][]byte{inMail.Task.Ref(): e.raw(inMail.Task.Ref()), inDefault.Task.Ref(): e.raw(inDefault.Task.Ref())}
		for name, call := range calls {
			for _, c := range []queue.Claimed{inMail, inDefault} {
				err := call(e.q, c.Task.ID, c.Lease.Token)
				if err == nil {
					t.Fatalf("%s of %s by its bare id: no error", name, c.Task.Ref())
				}
				check.Field(t, err, "queue")
			}
		}
		for ref, b := range before {
			if !bytes.Equal(e.raw(ref), b) {
				t.Fatalf("a refused call changed task %s", ref)
			}
		}
		if after := e.allKeys(); strings.Join(after, "\n") != strings.Join(keys, "\n") {
			t.Fatalf("a refused call changed the keys: %v -> %v", keys, after)
		}
		// Its reference, or its bare id on its queue's view, names it.
		if err := calls["heartbeat"](e.q.In("mail"), inMail.Task.ID, inMail.Lease.Token); err != nil {
			t.Fatalf("heartbeat by bare id on the queue's view: %v", err)
		}
		if err := calls["complete"](e.q, inDefault.Task.Ref(), inDefault.Lease.Token); err != nil {
			t.Fatalf("complete by reference: %v", err)
		}
	})

	t.Run("fail_retries_with_backoff_and_keeps_expires_at", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		task := e.submit(queue.SubmitRequest{TTL: check.Dur("1h"), MaxAttempts: 3}, t0)
		c := e.claimOne(t0)
		failedAt := t0.Add(time.Second)
		got, err := e.q.Fail(ctx, queue.FailRequest{ID: task.Ref(), LeaseToken: c.Lease.Token, Error: "smtp 451"}, failedAt)
		if err != nil {
			t.Fatal(err)
		}
		wantStatus(t, got, queue.StatusPending)
		if !got.AvailableAt.Equal(failedAt.Add(10*time.Second)) || got.LastError != "smtp 451" || got.Attempt != 1 {
			t.Fatalf("retry: available_at=%s last_error=%q attempt=%d", got.AvailableAt, got.LastError, got.Attempt)
		}
		wantTime(t, "expires_at", got.ExpiresAt, t0.Add(time.Hour))
		e.claimNone(failedAt.Add(10*time.Second - time.Microsecond))
		c2 := e.claimOne(failedAt.Add(10 * time.Second))
		got, err = e.q.Fail(ctx, queue.FailRequest{ID: task.Ref(), LeaseToken: c2.Lease.Token, Error: "again"}, failedAt.Add(11*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if !got.AvailableAt.Equal(failedAt.Add(31 * time.Second)) {
			t.Fatalf("second backoff: available_at %s, want +20s", got.AvailableAt)
		}
		if m := e.markers(); len(m) != 1 || m[0] != got.IndexKey {
			t.Fatalf("markers %v, index_key %s", m, got.IndexKey)
		}
	})

	t.Run("fail_with_attempts_spent_dead_letters_the_task", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		task := e.submit(queue.SubmitRequest{MaxAttempts: 2}, t0)
		now := t0
		for i := 1; i <= 2; i++ {
			c := e.claimOne(now)
			got, err := e.q.Fail(ctx, queue.FailRequest{ID: task.Ref(), LeaseToken: c.Lease.Token, Error: "boom"}, now)
			if err != nil {
				t.Fatal(err)
			}
			now = now.Add(time.Hour)
			if i == 2 {
				wantStatus(t, got, queue.StatusFailed)
				wantTime(t, "failed_at", got.FailedAt, now.Add(-time.Hour))
			}
		}
		e.claimNone(now)
		if m := e.markers(); len(m) != 0 {
			t.Fatalf("markers left: %v", m)
		}
		if res, _ := e.q.List(ctx, queue.ListRequest{Status: queue.StatusFailed}); len(res.Tasks) != 1 {
			t.Fatalf("dead-lettered task not listable: %+v", res)
		}
	})

	t.Run("fail_with_a_permanent_error_dead_letters_at_once", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		task := e.submit(queue.SubmitRequest{MaxAttempts: 5}, t0)
		c := e.claimOne(t0)
		no := false
		got, err := e.q.Fail(ctx, queue.FailRequest{ID: task.Ref(), LeaseToken: c.Lease.Token, Error: "bad address", Retryable: &no}, t0)
		if err != nil {
			t.Fatal(err)
		}
		wantStatus(t, got, queue.StatusFailed)
		if got.Attempt != 1 || got.LastError != "bad address" {
			t.Fatalf("attempt %d last_error %q", got.Attempt, got.LastError)
		}
	})

	t.Run("a_retry_whose_backoff_lands_past_the_deadline_expires", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		task := e.submit(queue.SubmitRequest{TTL: check.Dur("5s")}, t0)
		c := e.claimOne(t0)
		if _, err := e.q.Fail(ctx, queue.FailRequest{ID: task.Ref(), LeaseToken: c.Lease.Token, Error: "x"}, t0.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		e.claimNone(t0.Add(11 * time.Second)) // available again, but past expires_at
		got := e.get(task.Ref())
		wantStatus(t, got, queue.StatusExpired)
		if got.Attempt != 1 {
			t.Fatalf("attempt = %d", got.Attempt)
		}
	})

	t.Run("reschedule_delays_without_using_an_attempt_and_may_extend_the_deadline", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		task := e.submit(queue.SubmitRequest{TTL: check.Dur("10m"), MaxAttempts: 1}, t0)
		c := e.claimOne(t0)
		got, err := e.q.Reschedule(ctx, queue.RescheduleRequest{
			ID: task.Ref(), LeaseToken: c.Lease.Token,
			Delay: queue.Duration(15 * time.Minute), ExtendExpiration: queue.Duration(20 * time.Minute),
		}, t0.Add(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		wantStatus(t, got, queue.StatusPending)
		wantTime(t, "expires_at", got.ExpiresAt, t0.Add(30*time.Minute))
		if got.Attempt != 0 || !got.AvailableAt.Equal(t0.Add(16*time.Minute)) {
			t.Fatalf("attempt %d available_at %s", got.Attempt, got.AvailableAt)
		}
		e.claimNone(t0.Add(15 * time.Minute))
		c2 := e.claimOne(t0.Add(16 * time.Minute))
		if c2.Task.Attempt != 1 {
			t.Fatalf("attempt after reschedule = %d, want 1 (max_attempts 1 still allows it)", c2.Task.Attempt)
		}
	})
}

func runLostLease(t *testing.T, f Factory) {
	t.Run("a_claim_whose_answer_was_lost_still_leases_the_task", func(t *testing.T) {
		t.Parallel()
		e, fs := newLossEnv(t, f)
		a := e.submit(queue.SubmitRequest{}, t0)
		lose(fs, storefault.OpPutIfMatch, "q/default/tasks/")
		c := e.claimOne(t0)
		wantHits(t, fs, 1)
		got := e.get(a.Ref())
		if got.Status != queue.StatusRunning || got.LeaseToken != c.Lease.Token {
			t.Fatalf("record: %s token %q, want running under %q", got.Status, got.LeaseToken, c.Lease.Token)
		}
		e.claimNone(t0)
		e.consistent()
	})

	t.Run("a_heartbeat_whose_answer_was_lost_extends_the_lease_and_its_retry_answers_the_same", func(t *testing.T) {
		t.Parallel()
		e, fs := newLossEnv(t, f)
		e.submit(queue.SubmitRequest{}, t0)
		c := e.claimOne(t0)
		lose(fs, storefault.OpPutIfMatch, "q/default/tasks/")
		hb, err := e.q.Heartbeat(ctx, queue.HeartbeatRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token, LeaseFor: 10 * time.Minute}, t0.Add(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		wantHits(t, fs, 1)
		wantTime(t, "lease expiry", &hb.Lease.ExpiresAt, t0.Add(11*time.Minute))
		again, err := e.q.Heartbeat(ctx, queue.HeartbeatRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token, LeaseFor: 10 * time.Minute}, t0.Add(time.Minute))
		if err != nil || again.Lease.Token != c.Lease.Token || !again.Lease.ExpiresAt.Equal(hb.Lease.ExpiresAt) {
			t.Fatalf("retry: %+v, %v", again.Lease, err)
		}
		e.consistent()
	})

	type op struct {
		name string
		do   func(q *queue.Queue, c queue.Claimed, now time.Time) (queue.Task, error)
		want queue.Status
	}
	ops := []op{
		{"complete", func(q *queue.Queue, c queue.Claimed, now time.Time) (queue.Task, error) {
			return q.Complete(ctx, queue.CompleteRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token, Output: []byte(`{"ok":true}`)}, now)
		}, queue.StatusCompleted},
		{"fail", func(q *queue.Queue, c queue.Claimed, now time.Time) (queue.Task, error) {
			return q.Fail(ctx, queue.FailRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token, Error: "boom"}, now)
		}, queue.StatusPending},
		{"fail_for_good", func(q *queue.Queue, c queue.Claimed, now time.Time) (queue.Task, error) {
			no := false
			return q.Fail(ctx, queue.FailRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token, Error: "boom", Retryable: &no}, now)
		}, queue.StatusFailed},
		{"reschedule", func(q *queue.Queue, c queue.Claimed, now time.Time) (queue.Task, error) {
			return q.Reschedule(ctx, queue.RescheduleRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token, Delay: queue.Duration(time.Minute)}, now)
		}, queue.StatusPending},
		{"cancel_acknowledgement", func(q *queue.Queue, c queue.Claimed, now time.Time) (queue.Task, error) {
			return q.AckCancel(ctx, queue.AckCancelRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token}, now)
		}, queue.StatusCancelled},
	}
	for _, o := range ops {
		t.Run("a_"+o.name+"_whose_answer_was_lost_lands_once_and_its_retry_answers_the_same", func(t *testing.T) {
			e, fs := newLossEnv(t, f)
			e.submit(queue.SubmitRequest{DedupKey: "k"}, t0)
			c := e.claimOne(t0)
			lose(fs, storefault.OpPutIfMatch, "q/default/tasks/")
			first, err := o.do(e.q, c, t0.Add(time.Second))
			if err != nil {
				t.Fatal(err)
			}
			wantHits(t, fs, 1)
			wantStatus(t, first, o.want)
			raw := string(e.raw(c.Task.Ref()))
			// The client never saw that answer and retries, in a fresh process.
			again, err := o.do(e.reopen(), c, t0.Add(2*time.Second))
			if err != nil {
				t.Fatalf("retry: %v", err)
			}
			if again.Status != first.Status || again.Attempt != first.Attempt || !again.UpdatedAt.Equal(first.UpdatedAt) {
				t.Fatalf("retry answered %s attempt %d, want %s attempt %d", again.Status, again.Attempt, first.Status, first.Attempt)
			}
			if string(e.raw(c.Task.Ref())) != raw {
				t.Fatal("the retry wrote the record again")
			}
			e.consistent()
		})
	}

	t.Run("a_lease_operation_retried_as_another_operation_is_still_refused", func(t *testing.T) {
		t.Parallel()
		e, _ := newLossEnv(t, f)
		e.submit(queue.SubmitRequest{}, t0)
		c := e.claimOne(t0)
		if _, err := e.q.Complete(ctx, queue.CompleteRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token}, t0); err != nil {
			t.Fatal(err)
		}
		// Another operation with the ended token did not happen: a
		// conflict naming the token, never a replay of the completion.
		_, err := e.q.Fail(ctx, queue.FailRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token, Error: "x"}, t0)
		wantLeaseConflict(t, "a fail with the token a completion ended", err)
		_, err = e.q.Complete(ctx, queue.CompleteRequest{ID: c.Task.Ref(), LeaseToken: "not-the-token"}, t0)
		check.Err(t, err, queue.ErrNotRunning)
	})

	t.Run("a_fail_retried_after_the_task_was_claimed_again_does_not_fail_the_new_attempt", func(t *testing.T) {
		t.Parallel()
		e, _ := newLossEnv(t, f)
		a := e.submit(queue.SubmitRequest{}, t0)
		c := e.claimOne(t0)
		if _, err := e.q.Fail(ctx, queue.FailRequest{ID: a.Ref(), LeaseToken: c.Lease.Token, Error: "x"}, t0); err != nil {
			t.Fatal(err)
		}
		c2 := e.claimOne(t0.Add(time.Hour))
		// The first worker's token is older than the task's latest claim:
		// a mismatch, never a 200 showing the new attempt running.
		_, err := e.q.Fail(ctx, queue.FailRequest{ID: a.Ref(), LeaseToken: c.Lease.Token, Error: "x"}, t0.Add(time.Hour))
		check.Err(t, err, queue.ErrLeaseMismatch)
		if got := e.get(a.ID); got.Status != queue.StatusRunning || got.LeaseToken != c2.Lease.Token {
			t.Fatalf("after the retried fail: %s", got.Status)
		}
		if _, err := e.q.Complete(ctx, queue.CompleteRequest{ID: a.Ref(), LeaseToken: c2.Lease.Token}, t0.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	})
}

// runRaceLeaseCases are the lease cases of runRace (groups.go).
func runRaceLeaseCases(t *testing.T, f Factory) {

	t.Run("sixteen_workers_complete_every_task_exactly_once", func(t *testing.T) {
		e := newEnv(t, f)
		n := 300
		if f.Real {
			n = 200
		}
		for i := 0; i < n; i++ {
			req := queue.SubmitRequest{TaskType: "job", Input: jsonOf(i)}
			if i%3 == 0 {
				req.TTL = check.Dur("1h")
			}
			e.submit(req, t0)
		}
		// Half the workers are processes of their own, half share one
		// Queue (one process running 8 claim loops).
		shared := e.reopen()
		// A clock the test controls: it moves a second whenever a worker
		// finds nothing (so cached listings refresh), and never while a
		// worker is between its claim and its complete (they hold held),
		// so no machine, however slow, can lapse a lease in use.
		var elapsed atomic.Int64
		var held sync.RWMutex
		clock := func() time.Time { return t0.Add(time.Duration(elapsed.Load())) }

		var mu sync.Mutex
		holder := map[string]queue.Lease{} // task -> current lease
		completed := map[string]int{}
		var violations []string
		var done atomic.Int32
		var wg sync.WaitGroup
		errs := make(chan error, Workers)
		for w := 0; w < Workers; w++ {
			q := shared
			if w%2 == 0 {
				q = e.reopen()
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				// A guard against a livelock, not a timing check.
				deadline := time.Now().Add(5 * time.Minute)
				for int(done.Load()) < n {
					if time.Now().After(deadline) {
						errs <- fmt.Errorf("worker gave up with %d of %d done", done.Load(), n)
						return
					}
					held.RLock()
					now := clock()
					cs, err := q.Claim(ctx, queue.ClaimRequest{LeaseFor: 10 * time.Minute, WorkerID: fmt.Sprint(w)}, now)
					if err != nil {
						held.RUnlock()
						errs <- err
						return
					}
					for _, c := range cs {
						mu.Lock()
						if prev, ok := holder[c.Task.ID]; ok && now.Before(prev.ExpiresAt) {
							violations = append(violations, fmt.Sprintf("task %s claimed while lease %s was valid", c.Task.ID, prev.Token))
						}
						holder[c.Task.ID] = c.Lease
						mu.Unlock()
						_, err := q.Complete(ctx, queue.CompleteRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token, Output: jsonOf(w)}, clock())
						mu.Lock()
						if err == nil {
							completed[c.Task.ID]++
							delete(holder, c.Task.ID)
							done.Add(1)
						} else {
							violations = append(violations, fmt.Sprintf("complete %s: %v", c.Task.ID, err))
						}
						mu.Unlock()
					}
					held.RUnlock()
					if len(cs) == 0 {
						held.Lock()
						elapsed.Add(int64(time.Second))
						held.Unlock()
						time.Sleep(time.Millisecond)
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if len(violations) > 0 {
			t.Fatalf("%d violations, first: %s", len(violations), violations[0])
		}
		if len(completed) != n {
			t.Fatalf("%d tasks completed, want %d", len(completed), n)
		}
		for id, c := range completed {
			if c != 1 {
				t.Fatalf("task %s completed %d times", id, c)
			}
			if got := e.get(id); got.Status != queue.StatusCompleted || got.Attempt != 1 {
				t.Fatalf("task %s: status %s attempt %d", id, got.Status, got.Attempt)
			}
		}
		if m := e.markers(); len(m) != 0 {
			t.Fatalf("%d markers left, e.g. %s", len(m), m[0])
		}
	})
}

// Replays that match the request (issue 16, item 5): a lease operation
// retried with the same token replays only when it is the same operation
// with the same request; a submit's identity compares its input by value;
// a create whose answer was lost is recognised by its writer, not by the
// record's bytes.

// wantLeaseConflict fails unless err is a *queue.ConflictError naming
// lease_token that is queue.ErrLeaseEnded, and not queue.ErrConflict
// (which says retrying later is safe: with this token it never is).
func wantLeaseConflict(t testing.TB, what string, err error) {
	t.Helper()
	var ce *queue.ConflictError
	if !errors.As(err, &ce) || ce.Field != "lease_token" {
		t.Fatalf("%s: err = %v, want a conflict naming lease_token", what, err)
	}
	if !errors.Is(err, queue.ErrLeaseEnded) || errors.Is(err, queue.ErrConflict) {
		t.Fatalf("%s: err = %v, want queue.ErrLeaseEnded and not queue.ErrConflict", what, err)
	}
}

// runReplayLeaseCases are the lease cases of runReplay (groups.go).
func runReplayLeaseCases(t *testing.T, f Factory) {
	t.Run("a_permanent_fail_after_a_retryable_fail_with_the_same_token_is_a_conflict_not_a_replay", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		task := e.submit(queue.SubmitRequest{}, t0)
		c := e.claimOne(t0)
		first, err := e.q.Fail(ctx, queue.FailRequest{ID: task.Ref(), LeaseToken: c.Lease.Token, Error: "try again"}, t0.Add(time.Second))
		if err != nil || first.Status != queue.StatusPending {
			t.Fatalf("retryable fail: %s %v", first.Status, err)
		}
		// The same fail again (its answer was lost) replays it.
		again, err := e.q.Fail(ctx, queue.FailRequest{ID: task.Ref(), LeaseToken: c.Lease.Token, Error: "try again", Retryable: ptrTo(true)}, t0.Add(2*time.Second))
		if err != nil || again.Status != queue.StatusPending || !again.UpdatedAt.Equal(first.UpdatedAt) {
			t.Fatalf("the same fail again: %s %v", again.Status, err)
		}
		before := e.raw(task.ID)
		_, err = e.q.Fail(ctx, queue.FailRequest{ID: task.Ref(), LeaseToken: c.Lease.Token, Error: "give up", Retryable: ptrTo(false)}, t0.Add(3*time.Second))
		wantLeaseConflict(t, "a permanent fail with the token of a retryable one", err)
		if string(e.raw(task.ID)) != string(before) {
			t.Fatal("the refused fail changed the record")
		}
		wantStatus(t, e.get(task.ID), queue.StatusPending)
	})

	t.Run("a_fail_with_retry_after_repeated_at_another_now_replays_it", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		task := e.submit(queue.SubmitRequest{}, t0)
		c := e.claimOne(t0)
		// A push target said "retry at t0+31s": the first call's
		// RetryAfter is 30s; its answer was lost, and the repeat, a
		// second later, says 29s for the same moment.
		first, err := e.q.Fail(ctx, queue.FailRequest{ID: task.Ref(), LeaseToken: c.Lease.Token, Error: "503", RetryAfter: 30 * time.Second}, t0.Add(time.Second))
		if err != nil || first.Status != queue.StatusPending {
			t.Fatalf("fail: %s %v", first.Status, err)
		}
		again, err := e.q.Fail(ctx, queue.FailRequest{ID: task.Ref(), LeaseToken: c.Lease.Token, Error: "503", RetryAfter: 29 * time.Second}, t0.Add(2*time.Second))
		if err != nil || !again.UpdatedAt.Equal(first.UpdatedAt) || !again.AvailableAt.Equal(t0.Add(31*time.Second)) {
			t.Fatalf("the repeat at another now: %+v %v, want the first fail replayed", again, err)
		}
	})

	t.Run("another_lease_operation_with_an_ended_token_is_a_conflict_naming_lease_token", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		task := e.submit(queue.SubmitRequest{}, t0)
		c := e.claimOne(t0)
		if _, err := e.q.Complete(ctx, queue.CompleteRequest{ID: task.Ref(), LeaseToken: c.Lease.Token, Output: []byte(`{"a":1,"b":[1,2]}`)}, t0.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		// The same output spelled otherwise is the same request.
		again, err := e.q.Complete(ctx, queue.CompleteRequest{ID: task.Ref(), LeaseToken: c.Lease.Token, Output: []byte(`{ "b": [1.0, 2], "a": 1e0 }`)}, t0.Add(2*time.Second))
		if err != nil || again.Status != queue.StatusCompleted {
			t.Fatalf("the same completion, spelled otherwise: %s %v", again.Status, err)
		}
		_, err = e.q.Complete(ctx, queue.CompleteRequest{ID: task.Ref(), LeaseToken: c.Lease.Token, Output: []byte(`{"a":2}`)}, t0.Add(2*time.Second))
		wantLeaseConflict(t, "a completion with another output", err)
		_, err = e.q.Fail(ctx, queue.FailRequest{ID: task.Ref(), LeaseToken: c.Lease.Token, Error: "x"}, t0.Add(2*time.Second))
		wantLeaseConflict(t, "a fail after the completion", err)
		_, err = e.q.Heartbeat(ctx, queue.HeartbeatRequest{ID: task.Ref(), LeaseToken: c.Lease.Token}, t0.Add(2*time.Second))
		wantLeaseConflict(t, "a heartbeat after the completion", err)
		_, err = e.q.AckCancel(ctx, queue.AckCancelRequest{ID: task.Ref(), LeaseToken: c.Lease.Token}, t0.Add(2*time.Second))
		wantLeaseConflict(t, "a cancel acknowledgement after the completion", err)
		_, err = e.q.Reschedule(ctx, queue.RescheduleRequest{ID: task.Ref(), LeaseToken: c.Lease.Token}, t0.Add(2*time.Second))
		wantLeaseConflict(t, "a reschedule after the completion", err)
		// A token that never held the lease is still a mismatch.
		_, err = e.q.Complete(ctx, queue.CompleteRequest{ID: task.Ref(), LeaseToken: "not-a-token"}, t0.Add(2*time.Second))
		if !errors.Is(err, queue.ErrNotRunning) {
			t.Fatalf("another token: %v", err)
		}
		got := e.get(task.ID)
		if got.Status != queue.StatusCompleted || string(got.Output) != `{"a":1,"b":[1,2]}` {
			t.Fatalf("record after the refused requests: %s %s", got.Status, got.Output)
		}
	})

	t.Run("a_reschedule_retried_with_other_arguments_is_a_conflict", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		task := e.submit(queue.SubmitRequest{}, t0)
		c := e.claimOne(t0)
		req := queue.RescheduleRequest{ID: task.Ref(), LeaseToken: c.Lease.Token, Delay: queue.Duration(time.Minute)}
		if _, err := e.q.Reschedule(ctx, req, t0.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		if _, err := e.q.Reschedule(ctx, req, t0.Add(2*time.Second)); err != nil {
			t.Fatalf("the same reschedule again: %v", err)
		}
		_, err := e.q.Reschedule(ctx, queue.RescheduleRequest{ID: task.Ref(), LeaseToken: c.Lease.Token, Delay: queue.Duration(time.Hour)}, t0.Add(2*time.Second))
		wantLeaseConflict(t, "a reschedule with another delay", err)
	})

	t.Run("an_old_token_after_a_reclaim_is_lease_mismatch_never_a_replay", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		task := e.submit(queue.SubmitRequest{MaxAttempts: 5}, t0)
		c1 := e.claimOne(t0)
		if _, err := e.q.Fail(ctx, queue.FailRequest{ID: task.Ref(), LeaseToken: c1.Lease.Token, Error: "flaky"}, t0.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		// Backoff is 10s: another worker claims the retry.
		c2 := e.claimOne(t0.Add(time.Minute))
		if c2.Lease.Token == c1.Lease.Token {
			t.Fatal("the reclaim kept the token")
		}
		for _, retry := range []func() error{
			func() error {
				_, err := e.q.Fail(ctx, queue.FailRequest{ID: task.Ref(), LeaseToken: c1.Lease.Token, Error: "flaky"}, t0.Add(time.Minute+time.Second))
				return err
			},
			func() error {
				_, err := e.q.Complete(ctx, queue.CompleteRequest{ID: task.Ref(), LeaseToken: c1.Lease.Token}, t0.Add(time.Minute+time.Second))
				return err
			},
		} {
			if err := retry(); !errors.Is(err, queue.ErrLeaseMismatch) {
				t.Fatalf("the first worker's retry after the reclaim: %v, want lease_mismatch", err)
			}
		}
		got := e.get(task.ID)
		if got.Status != queue.StatusRunning || got.LeaseToken != c2.Lease.Token {
			t.Fatalf("the second claim's lease was touched: %s %s", got.Status, got.LeaseToken)
		}
		if _, err := e.q.Complete(ctx, queue.CompleteRequest{ID: task.Ref(), LeaseToken: c2.Lease.Token}, t0.Add(time.Minute+2*time.Second)); err != nil {
			t.Fatalf("the second worker's completion: %v", err)
		}
	})

	t.Run("heartbeats_are_bounded_per_attempt_and_a_new_claim_starts_again", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		task := e.submit(queue.SubmitRequest{MaxAttempts: 2}, t0)
		c := e.claimOne(t0)
		if _, err := e.q.Heartbeat(ctx, queue.HeartbeatRequest{ID: task.Ref(), LeaseToken: c.Lease.Token}, t0.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		if got := e.get(task.ID); got.Heartbeats != 1 {
			t.Fatalf("heartbeats = %d after one", got.Heartbeats)
		}
		// Skip to the last heartbeat allowed: rewrite the count in place.
		obj, err := e.s.Get(ctx, queue.TaskKey(task.Queue, task.ID))
		if err != nil {
			t.Fatal(err)
		}
		var rec map[string]any
		if err := json.Unmarshal(obj.Body, &rec); err != nil {
			t.Fatal(err)
		}
		rec["heartbeats"] = queue.MaxHeartbeats - 1
		body, _ := json.Marshal(rec)
		if _, err := e.s.PutIfMatch(ctx, queue.TaskKey(task.Queue, task.ID), body, obj.ETag); err != nil {
			t.Fatal(err)
		}
		if _, err := e.q.Heartbeat(ctx, queue.HeartbeatRequest{ID: task.Ref(), LeaseToken: c.Lease.Token}, t0.Add(2*time.Second)); err != nil {
			t.Fatalf("the last heartbeat allowed: %v", err)
		}
		before := e.raw(task.ID)
		_, err = e.q.Heartbeat(ctx, queue.HeartbeatRequest{ID: task.Ref(), LeaseToken: c.Lease.Token}, t0.Add(3*time.Second))
		var se *queue.StateError
		if !errors.As(err, &se) {
			t.Fatalf("heartbeat past the bound: %v, want a state error", err)
		}
		if string(e.raw(task.ID)) != string(before) {
			t.Fatal("the refused heartbeat wrote the record")
		}
		// The worker can still finish the attempt, and the next claim
		// counts from zero.
		if _, err := e.q.Fail(ctx, queue.FailRequest{ID: task.Ref(), LeaseToken: c.Lease.Token, Error: "x"}, t0.Add(4*time.Second)); err != nil {
			t.Fatal(err)
		}
		c2 := e.claimOne(t0.Add(time.Hour))
		if c2.Task.Heartbeats != 0 {
			t.Fatalf("a new claim has %d heartbeats", c2.Task.Heartbeats)
		}
		if _, err := e.q.Heartbeat(ctx, queue.HeartbeatRequest{ID: task.Ref(), LeaseToken: c2.Lease.Token}, t0.Add(time.Hour+time.Second)); err != nil {
			t.Fatalf("a heartbeat of the next attempt: %v", err)
		}
	})
}

// runRetryWaitLeaseCases are the lease cases of runRetryWait (groups.go).
func runRetryWaitLeaseCases(t *testing.T, f Factory) {
	// A failure with RetryAfter (a push target's Retry-After) is retried
	// at exactly now + RetryAfter, using up an attempt; past the deadline
	// the task expires instead of running.
	t.Run("a_fail_with_retry_after_is_retried_at_that_time_and_expires_past_its_deadline", func(t *testing.T) {
		now := t0
		e := newEnv(t, f)
		q := e.q
		exp := now.Add(time.Minute)
		task := e.submit(queue.SubmitRequest{TaskType: "t", ExpiresAt: &exp}, now)
		claim := func(at time.Time) []queue.Claimed {
			c, err := q.Claim(ctx, queue.ClaimRequest{}, at)
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
		c := claim(now)
		got, err := q.Fail(ctx, queue.FailRequest{ID: task.Ref(), LeaseToken: c[0].Lease.Token, Error: "503", RetryAfter: 30 * time.Second}, now)
		if err != nil || got.Status != queue.StatusPending || !got.AvailableAt.Equal(now.Add(30*time.Second)) || got.Attempt != 1 {
			t.Fatalf("after fail: %s available %s attempt %d, %v", got.Status, got.AvailableAt, got.Attempt, err)
		}
		if len(claim(now.Add(29*time.Second))) != 0 {
			t.Fatal("claimed before Retry-After")
		}
		c = claim(now.Add(30 * time.Second))
		if len(c) != 1 || c[0].Task.Attempt != 2 {
			t.Fatalf("claim at Retry-After: %+v", c)
		}
		later := now.Add(30 * time.Second)
		if _, err := q.Fail(ctx, queue.FailRequest{ID: task.Ref(), LeaseToken: c[0].Lease.Token, Error: "503", RetryAfter: time.Hour}, later); err != nil {
			t.Fatal(err)
		}
		if c := claim(later.Add(2 * time.Hour)); len(c) != 0 {
			t.Fatalf("ran past its deadline: %+v", c)
		}
		if got, _ := q.Get(ctx, task.Ref()); got.Status != queue.StatusExpired {
			t.Fatalf("past the deadline: %s", got.Status)
		}
		if _, err := q.Fail(ctx, queue.FailRequest{ID: task.Ref(), LeaseToken: "x", RetryAfter: 1 << 62}, now); err == nil {
			t.Error("an out-of-range RetryAfter was accepted")
		}
	})
}
