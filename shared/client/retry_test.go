package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/api"
	"github.com/s3q/s3q/shared/client"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/store/memstore"
	"github.com/s3q/s3q/shared/wire"
)

// flaky is an API behind a front that spoils the first answers: each
// fault in plan applies to one request, in order, and then requests pass.
type flaky struct {
	t      *testing.T
	api    http.Handler
	q      *queue.Queue
	mu     sync.Mutex
	plan   []string // "503" (not forwarded), "lost" (forwarded, then 502), "reset" (forwarded, then the connection drops)
	bodies []string // every request body seen, in order
}

func newFlaky(t *testing.T, plan ...string) (*flaky, *client.Client) {
	t.Helper()
	q, decls := queues.New(memstore.New(), queues.Options{Core: queue.Options{ListCacheFor: -1}})
	f := &flaky{t: t, q: q, api: api.New(q, decls, api.Options{Logger: slog.New(slog.DiscardHandler)}), plan: plan}
	ts := httptest.NewServer(f)
	t.Cleanup(ts.Close)
	c, err := client.New(ctx, ts.URL, client.Options{RetryBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return f, c
}

func (f *flaky) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	f.mu.Lock()
	f.bodies = append(f.bodies, string(body))
	fault := ""
	if len(f.plan) > 0 {
		fault, f.plan = f.plan[0], f.plan[1:]
	}
	f.mu.Unlock()
	switch fault {
	case "503":
		w.Header().Set("Retry-After", "0")
		http.Error(w, `{"error":{"code":"throttled","message":"slow down"}}`, http.StatusServiceUnavailable)
		return
	case "lost", "reset":
		f.api.ServeHTTP(httptest.NewRecorder(), r) // it lands; its answer is lost
		if fault == "lost" {
			http.Error(w, "bad gateway", http.StatusBadGateway)
			return
		}
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			f.t.Error(err)
			return
		}
		_ = conn.Close()
		return
	}
	f.api.ServeHTTP(w, r)
}

func (f *flaky) seen() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.bodies...)
}

// ids returns the "id" of each body, or of each of its tasks for a batch.
func ids(t *testing.T, bodies []string) []string {
	t.Helper()
	var out []string
	for _, b := range bodies {
		var v struct {
			ID    string `json:"id"`
			Tasks []struct {
				ID string `json:"id"`
			} `json:"tasks"`
		}
		if err := json.Unmarshal([]byte(b), &v); err != nil {
			t.Fatalf("body %s: %v", b, err)
		}
		if v.ID != "" {
			out = append(out, v.ID)
		}
		for _, task := range v.Tasks {
			out = append(out, task.ID)
		}
	}
	return out
}

func countTasks(t *testing.T, q *queue.Queue) int {
	t.Helper()
	res, err := q.List(ctx, queue.ListRequest{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return len(res.Tasks)
}

func TestClientRetriesSubmitsWithTheSameID(t *testing.T) {
	for _, plan := range [][]string{{"503", "503"}, {"lost"}, {"reset"}, {"503", "lost", "reset"}} {
		t.Run("a_submit_whose_first_attempts_meet_"+strings.Join(plan, "_then_")+"_makes_one_task", func(t *testing.T) {
			f, c := newFlaky(t, plan...)
			res, err := c.Submit(ctx, client.SubmitRequest{SubmitRequest: wire.SubmitRequest{TaskType: "t", Input: []byte(`{"n":1}`)}})
			if err != nil {
				t.Fatal(err)
			}
			sent := ids(t, f.seen())
			if len(sent) != len(plan)+1 {
				t.Fatalf("%d attempts, want %d", len(sent), len(plan)+1)
			}
			for _, id := range sent {
				if id != sent[0] || queue.ValidateID(id) != nil {
					t.Fatalf("attempts sent ids %v, want one UUIDv7", sent)
				}
			}
			landed := plan[len(plan)-1] != "503"
			if res.Task.ID != sent[0] || res.Replayed != landed || (landed && res.Status != http.StatusOK) || (!landed && res.Status != http.StatusCreated) {
				t.Fatalf("answer: id %s replayed %v status %d", res.Task.ID, res.Replayed, res.Status)
			}
			if n := countTasks(t, f.q); n != 1 {
				t.Fatalf("%d tasks", n)
			}
		})
	}

	t.Run("a_caller_given_id_is_kept", func(t *testing.T) {
		f, c := newFlaky(t, "lost")
		id := queue.NewID(time.Now())
		res, err := c.Submit(ctx, client.SubmitRequest{SubmitRequest: wire.SubmitRequest{ID: id, TaskType: "t"}})
		if err != nil || res.Task.ID != id || !res.Replayed {
			t.Fatalf("%+v %v", res, err)
		}
		if got := ids(t, f.seen()); len(got) != 2 || got[0] != id || got[1] != id {
			t.Fatalf("sent %v", got)
		}
	})

	t.Run("a_4xx_is_not_retried", func(t *testing.T) {
		f, c := newFlaky(t)
		_, err := c.Submit(ctx, client.SubmitRequest{SubmitRequest: wire.SubmitRequest{TaskType: "bad type"}})
		if !errors.Is(err, queue.ErrInvalidInput) || len(f.seen()) != 1 {
			t.Fatalf("err %v after %d attempts", err, len(f.seen()))
		}
	})

	t.Run("retries_give_up_after_max_retries", func(t *testing.T) {
		q, decls := queues.New(memstore.New(), queues.Options{})
		f := &flaky{t: t, q: q, api: api.New(q, decls, api.Options{Logger: slog.New(slog.DiscardHandler)}), plan: []string{"503", "503", "503"}}
		ts := httptest.NewServer(f)
		defer ts.Close()
		c, _ := client.New(ctx, ts.URL, client.Options{MaxRetries: 2, RetryBackoff: time.Millisecond})
		var e *client.Error
		_, err := c.Submit(ctx, client.SubmitRequest{SubmitRequest: wire.SubmitRequest{TaskType: "t"}})
		if !errors.As(err, &e) || e.Status != http.StatusServiceUnavailable || len(f.seen()) != 3 {
			t.Fatalf("err %v after %d attempts, want a 503 after 3", err, len(f.seen()))
		}
	})
}

func TestClientRetriesBatchesWithTheSameIDs(t *testing.T) {
	t.Run("a_batch_whose_answer_was_lost_is_replayed_item_by_item", func(t *testing.T) {
		f, c := newFlaky(t, "lost")
		items, err := c.SubmitBatch(ctx, []wire.SubmitRequest{{TaskType: "t"}, {TaskType: "t", Input: []byte(`2`)}, {TaskType: "bad type"}})
		if err != nil || len(items) != 3 {
			t.Fatalf("%v %v", items, err)
		}
		if !items[0].Replayed || !items[1].Replayed || items[2].Error == nil || !errors.Is(items[2].Error, queue.ErrInvalidInput) {
			t.Fatalf("items: %+v %+v %+v", items[0], items[1], items[2])
		}
		sent := ids(t, f.seen())
		if len(sent) != 6 || sent[0] != sent[3] || sent[1] != sent[4] || sent[2] != sent[5] || sent[0] == sent[1] {
			t.Fatalf("ids sent: %v", sent)
		}
		if n := countTasks(t, f.q); n != 2 {
			t.Fatalf("%d tasks", n)
		}
	})

	t.Run("items_that_failed_on_their_own_are_sent_again_with_their_ids", func(t *testing.T) {
		var mu sync.Mutex
		var bodies []string
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			mu.Lock()
			bodies = append(bodies, string(b))
			n := len(bodies)
			mu.Unlock()
			var v struct {
				Tasks []wire.SubmitRequest `json:"tasks"`
			}
			_ = json.Unmarshal(b, &v)
			var results []map[string]any
			for i, req := range v.Tasks {
				if n == 1 && i == 1 {
					results = append(results, map[string]any{"error": map[string]any{"code": "throttled", "message": "slow down"}})
					continue
				}
				results = append(results, map[string]any{"task": map[string]any{"id": req.ID}, "replayed": false})
			}
			_ = json.NewEncoder(w).Encode(map[string]any{"results": results})
		}))
		defer ts.Close()
		c, _ := client.New(ctx, ts.URL, client.Options{RetryBackoff: time.Millisecond})
		items, err := c.SubmitBatch(ctx, []wire.SubmitRequest{{TaskType: "t"}, {TaskType: "t"}, {TaskType: "t"}})
		if err != nil || len(items) != 3 {
			t.Fatalf("%v %v", items, err)
		}
		for i, it := range items {
			if it.Error != nil || it.Task == nil {
				t.Fatalf("item %d: %+v", i, it)
			}
		}
		sent := ids(t, bodies)
		if len(bodies) != 2 || len(sent) != 4 || sent[3] != sent[1] || items[1].Task.ID != sent[1] {
			t.Fatalf("sent %d requests with ids %v", len(bodies), sent)
		}
	})
}

func TestClientRetriesLeaseOperations(t *testing.T) {
	for _, op := range []string{"complete", "fail", "heartbeat", "reschedule"} {
		t.Run("a_"+op+"_whose_answer_was_lost_answers_as_the_first_attempt_did", func(t *testing.T) {
			f, c := newFlaky(t)
			if _, err := c.Submit(ctx, client.SubmitRequest{SubmitRequest: wire.SubmitRequest{TaskType: "t"}}); err != nil {
				t.Fatal(err)
			}
			cs, err := c.Claim(ctx, client.ClaimRequest{LeaseFor: time.Minute})
			if err != nil || len(cs) != 1 {
				t.Fatalf("claim: %v %v", cs, err)
			}
			f.mu.Lock()
			f.plan = []string{"lost", "reset"}
			f.mu.Unlock()
			var status queue.Status
			switch op {
			case "complete":
				task, err := c.Complete(ctx, client.CompleteRequest{Lease: cs[0].Lease, Output: []byte(`{"ok":true}`)})
				status = task.Status
				if err != nil || status != queue.StatusCompleted {
					t.Fatalf("%s: %s %v", op, status, err)
				}
			case "fail":
				task, err := c.Fail(ctx, client.FailRequest{Lease: cs[0].Lease, Error: "boom"})
				if err != nil || task.Status != queue.StatusPending || task.Attempt != 1 {
					t.Fatalf("%s: %s attempt %d %v", op, task.Status, task.Attempt, err)
				}
			case "heartbeat":
				hb, err := c.Heartbeat(ctx, client.HeartbeatRequest{Lease: cs[0].Lease, LeaseFor: 5 * time.Minute})
				if err != nil || hb.Lease.Token != cs[0].Lease.Token {
					t.Fatalf("%s: %+v %v", op, hb, err)
				}
			case "reschedule":
				task, err := c.Reschedule(ctx, client.RescheduleRequest{Lease: cs[0].Lease, Delay: time.Minute})
				if err != nil || task.Status != queue.StatusPending {
					t.Fatalf("%s: %s %v", op, task.Status, err)
				}
			}
			if n := len(f.seen()); n != 5 { // submit, claim, three tries
				t.Fatalf("%d requests, want 5", n)
			}
		})
	}

	for _, op := range []struct {
		name string
		call func(*client.Client, context.Context, string) (client.Task, error)
	}{
		{"cancel", (*client.Client).Cancel},
		{"retry", (*client.Client).Retry},
		{"expire", (*client.Client).Expire},
	} {
		t.Run("a_"+op.name+"_is_not_retried", func(t *testing.T) {
			f, c := newFlaky(t)
			res, err := c.Submit(ctx, client.SubmitRequest{SubmitRequest: wire.SubmitRequest{TaskType: "t"}})
			if err != nil {
				t.Fatal(err)
			}
			f.mu.Lock()
			f.plan = []string{"503"}
			f.mu.Unlock()
			if _, err := op.call(c, ctx, res.Task.ID); err == nil {
				t.Fatalf("a 503 %s succeeded", op.name)
			}
			if n := len(f.seen()); n != 2 {
				t.Fatalf("%d requests, want 2", n)
			}
		})
	}
}

func TestErrorMatchesInvalidState(t *testing.T) {
	e := &client.Error{Status: http.StatusConflict, Code: "invalid_state"}
	if !errors.Is(e, queue.ErrInvalidState) || errors.Is(e, queue.ErrConflict) {
		t.Fatal("invalid_state does not match queue.ErrInvalidState alone")
	}
	var se error = &queue.StateError{ID: "x", Op: "retry", Status: queue.StatusExpired}
	if !errors.Is(se, queue.ErrInvalidState) {
		t.Fatal("a *queue.StateError does not wrap ErrInvalidState")
	}
}
