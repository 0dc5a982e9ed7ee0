package faultrun_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/api"
	"github.com/s3q/s3q/shared/client"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/s3local"
	"github.com/s3q/s3q/shared/s3local/faultproxy"
	"github.com/s3q/s3q/shared/wire"
)

// apiEnv is one run of an API case: the HTTP API over a queue whose store
// goes through a proxy, on a clock the case sets, and a client that never
// retries (so the test sees each answer).
type apiEnv struct {
	p     *faultproxy.Proxy
	cl    *client.Client
	mu    sync.Mutex
	now   time.Time
	lease client.Lease
}

func (e *apiEnv) at(t time.Time) {
	e.mu.Lock()
	e.now = t
	e.mu.Unlock()
}

func newAPIEnv(t *testing.T, srv *s3local.Server) *apiEnv {
	t.Helper()
	p, st, err := faultproxy.Front(t.Context(), srv, "api-"+rand.Text()+"/", faultproxy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	e := &apiEnv{p: p, now: t0}
	q, decls := queues.New(st, queues.Options{Core: queue.Options{Backoff: func(attempt int) time.Duration { return 10 * time.Second << (attempt - 1) }}})
	h := api.New(q, decls, api.Options{
		Now:    func() time.Time { e.mu.Lock(); defer e.mu.Unlock(); return e.now },
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	if e.cl, err = client.New(t.Context(), hs.URL, client.Options{MaxRetries: -1}); err != nil {
		t.Fatal(err)
	}
	return e
}

// apiCase is an operation made through the HTTP API.
type apiCase struct {
	name  string
	setup func(ctx context.Context, e *apiEnv) error
	// op makes the request and describes the answer: its status and the
	// task it names.
	op func(ctx context.Context, e *apiEnv) (string, error)
}

func answered(status int, t client.Task, err error) (string, error) {
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%d task %s %s attempt=%d", status, t.ID, t.Status, t.Attempt), nil
}

func apiSubmitA(ctx context.Context, e *apiEnv) error {
	_, err := e.cl.Submit(ctx, client.SubmitRequest{SubmitRequest: wire.SubmitRequest{ID: idA, TaskType: "t"}})
	return err
}

func apiSubmitAndClaim(ctx context.Context, e *apiEnv) error {
	if err := apiSubmitA(ctx, e); err != nil {
		return err
	}
	e.at(t0.Add(time.Second))
	c, err := e.cl.Claim(ctx, client.ClaimRequest{LeaseFor: 10 * time.Minute})
	if err == nil && len(c) != 1 {
		err = fmt.Errorf("claimed %d tasks", len(c))
	}
	if err == nil {
		e.lease = c[0].Lease
	}
	e.at(t0.Add(2 * time.Second))
	return err
}

var apiCases = []apiCase{
	{name: "submit", op: func(ctx context.Context, e *apiEnv) (string, error) {
		r, err := e.cl.Submit(ctx, client.SubmitRequest{SubmitRequest: wire.SubmitRequest{ID: idA, TaskType: "t"}})
		return answered(r.Status, r.Task, err)
	}},
	{name: "submit_with_dedup_key", op: func(ctx context.Context, e *apiEnv) (string, error) {
		r, err := e.cl.Submit(ctx, client.SubmitRequest{SubmitRequest: wire.SubmitRequest{ID: idA, TaskType: "t", DedupKey: "k"}})
		return answered(r.Status, r.Task, err)
	}},
	{name: "claim", setup: func(ctx context.Context, e *apiEnv) error {
		err := apiSubmitA(ctx, e)
		e.at(t0.Add(time.Second))
		return err
	}, op: func(ctx context.Context, e *apiEnv) (string, error) {
		c, err := e.cl.Claim(ctx, client.ClaimRequest{LeaseFor: 10 * time.Minute})
		if err != nil || len(c) != 1 {
			return fmt.Sprintf("%d tasks", len(c)), err
		}
		return answered(200, c[0].Task, nil)
	}},
	{name: "heartbeat", setup: apiSubmitAndClaim, op: func(ctx context.Context, e *apiEnv) (string, error) {
		c, err := e.cl.Heartbeat(ctx, client.HeartbeatRequest{Lease: e.lease, LeaseFor: 20 * time.Minute})
		return answered(200, c.Task, err)
	}},
	{name: "complete", setup: apiSubmitAndClaim, op: func(ctx context.Context, e *apiEnv) (string, error) {
		t, err := e.cl.Complete(ctx, client.CompleteRequest{Lease: e.lease, Output: json.RawMessage(`{"ok":true}`)})
		return answered(200, t, err)
	}},
	{name: "fail", setup: apiSubmitAndClaim, op: func(ctx context.Context, e *apiEnv) (string, error) {
		t, err := e.cl.Fail(ctx, client.FailRequest{Lease: e.lease, Error: "boom"})
		return answered(200, t, err)
	}},
	{name: "cancel", setup: apiSubmitA, op: func(ctx context.Context, e *apiEnv) (string, error) {
		t, err := e.cl.Cancel(ctx, idA)
		return answered(200, t, err)
	}},
	{name: "expire", setup: apiSubmitA, op: func(ctx context.Context, e *apiEnv) (string, error) {
		t, err := e.cl.Expire(ctx, idA)
		return answered(200, t, err)
	}},
}

// TestLostAnswersThroughTheAPI loses the answer of each write an API
// request makes, one per run, and checks that the caller gets the same
// HTTP answer as without the fault, on its first try: never a 503 it must
// retry, nor a 500.
func TestLostAnswersThroughTheAPI(t *testing.T) {
	onEachServer(t, apiCases, func(c apiCase) string { return c.name }, runAPICase)
}

func runAPICase(t *testing.T, srv *s3local.Server, c apiCase) {
	ctx := t.Context()
	fresh := func(t *testing.T) (*apiEnv, *faultproxy.Proxy) {
		e := newAPIEnv(t, srv)
		if c.setup != nil {
			if err := c.setup(ctx, e); err != nil {
				t.Fatalf("setup: %v", err)
			}
		}
		return e, e.p
	}
	var want string
	loseEachWrite(t, fresh, func(s string) string { return s }, func(e *apiEnv) {
		var err error
		if want, err = c.op(ctx, e); err != nil {
			t.Fatalf("without faults: %v", err)
		}
	}, func(t *testing.T, e *apiEnv) func() {
		got, err := c.op(ctx, e)
		return func() {
			var ce *client.Error
			if errors.As(err, &ce) {
				t.Fatalf("the caller got %d %s (%s), want %q", ce.Status, ce.Code, ce.Message, want)
			}
			if err != nil || got != want {
				t.Errorf("the caller got %q, %v; want %q", got, err, want)
			}
		}
	})
}
