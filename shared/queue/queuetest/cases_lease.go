package queuetest

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/internal/check"
	"github.com/s3q/s3q/shared/queue"
)

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
