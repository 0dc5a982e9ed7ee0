package client_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/s3q/s3q/shared/api"
	"github.com/s3q/s3q/shared/api/openapitest"
	"github.com/s3q/s3q/shared/client"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/s3local"
	"github.com/s3q/s3q/shared/s3local/s3localtest"
	"github.com/s3q/s3q/shared/wire"
)

var servers s3localtest.Servers

func TestMain(m *testing.M) { os.Exit(s3localtest.Main(m, &servers)) }

var ctx = context.Background()

// newAPI serves the real API over a queue on srv and returns a client and
// the queue behind it.
func newAPI(t *testing.T, srv *s3local.Server) (*client.Client, *queue.Queue) {
	t.Helper()
	q, decls := queues.New(s3localtest.NewStore(t, srv), queues.Options{})
	ts := httptest.NewServer(api.New(q, decls, api.Options{Logger: slog.New(slog.DiscardHandler)}))
	t.Cleanup(ts.Close)
	c, err := client.New(ctx, ts.URL, client.Options{HTTPClient: checked(t)})
	if err != nil {
		t.Fatal(err)
	}
	return c, q
}

// checked is an HTTP client whose every answer from the API is validated
// against the OpenAPI document.
func checked(t *testing.T) *http.Client {
	return &http.Client{Timeout: time.Minute, Transport: &openapitest.Transport{T: t}}
}

func TestClientAgainstTheAPI(t *testing.T) {
	for name, srv := range map[string]*s3local.Server{"gofakes3": servers.GoFakeS3, "versitygw": servers.VersityGW} {
		t.Run(name, func(t *testing.T) {
			c, q := newAPI(t, srv)

			t.Run("a_claim_held_back_by_the_rate_limit_says_when_to_claim_again", func(t *testing.T) {
				rate, burst := 0.01, 1 // one task per 100s
				info, _, err := c.DeclareQueue(ctx, "paced", client.QueueRequest{MaxPerSecond: &rate, Burst: &burst})
				if err != nil || info.MaxPerSecond == nil || *info.MaxPerSecond != rate || *info.Burst != 1 {
					t.Fatalf("declare: %+v %v", info, err)
				}
				c := c.In("paced")
				for range 2 {
					if _, err := c.Submit(ctx, client.SubmitRequest{SubmitRequest: wire.SubmitRequest{TaskType: "c.paced", Queue: "paced"}}); err != nil {
						t.Fatal(err)
					}
				}
				if cs, err := c.Claim(ctx, client.ClaimRequest{Queue: "paced", MaxTasks: 2}); err != nil || len(cs) != 1 {
					t.Fatalf("first claim: %d tasks, %v; want 1", len(cs), err)
				}
				cs, err := c.Claim(ctx, client.ClaimRequest{Queue: "paced"})
				var rl *wire.RateLimitedError
				if len(cs) != 0 || !errors.As(err, &rl) || !errors.Is(err, queue.ErrRateLimited) || rl.Queue != "paced" ||
					rl.RetryAfter <= 90*time.Second || rl.RetryAfter > 100*time.Second {
					t.Fatalf("second claim: %d tasks, %v; want held back about 100s", len(cs), err)
				}
				got, err := c.GetQueue(ctx, "paced")
				if err != nil || got.MaxPerSecond == nil || *got.MaxPerSecond != rate {
					t.Fatalf("get: %+v %v", got, err)
				}
			})

			t.Run("a_task_goes_through_submit_claim_heartbeat_and_complete", func(t *testing.T) {
				c := c.In("lifecycle")
				ttl := queue.Duration(time.Hour)
				res, err := c.Submit(ctx, client.SubmitRequest{SubmitRequest: wire.SubmitRequest{TaskType: "c.one", Queue: "lifecycle", Input: []byte(`{"n":1}`), TTL: &ttl}})
				if err != nil || res.Status != http.StatusCreated || res.Task.ID == "" {
					t.Fatalf("submit: %+v %v", res, err)
				}
				if res.Task.ExpiresInSeconds == nil || *res.Task.ExpiresInSeconds < 3590 {
					t.Fatalf("submit answer: expires_in_seconds %v", res.Task.ExpiresInSeconds)
				}
				cs, err := c.Claim(ctx, client.ClaimRequest{Queue: "lifecycle", LeaseFor: time.Minute, WorkerID: "w"})
				if err != nil || len(cs) != 1 || cs[0].Task.ID != res.Task.ID || cs[0].Lease.Token == "" {
					t.Fatalf("claim: %+v %v", cs, err)
				}
				hb, err := c.Heartbeat(ctx, client.HeartbeatRequest{Lease: cs[0].Lease, LeaseFor: 2 * time.Minute})
				if err != nil || !hb.Lease.ExpiresAt.After(cs[0].Lease.ExpiresAt) {
					t.Fatalf("heartbeat: %+v %v", hb, err)
				}
				done, err := c.Complete(ctx, client.CompleteRequest{Lease: hb.Lease, Output: []byte(`{"ok":true}`)})
				if err != nil || done.Status != queue.StatusCompleted || string(done.Output) != `{"ok":true}` {
					t.Fatalf("complete: %+v %v", done, err)
				}
				got, err := c.Get(ctx, res.Task.ID)
				if err != nil || got.Status != queue.StatusCompleted {
					t.Fatalf("get: %+v %v", got, err)
				}
				h, err := c.History(ctx, res.Task.ID, client.HistoryRequest{})
				vs := h.Versions
				// Newest first.
				if err != nil || len(vs) != 4 || vs[0].Task.Status != queue.StatusCompleted || vs[1].Task.Status != queue.StatusRunning || vs[3].Task.Status != queue.StatusPending || h.NextCursor != "" {
					t.Fatalf("history: %d versions %v", len(vs), err)
				}
				// In pages of 3: the cursor carries on where the page ended.
				p1, err := c.History(ctx, res.Task.ID, client.HistoryRequest{Limit: 3})
				if err != nil || len(p1.Versions) != 3 || p1.NextCursor != vs[2].VersionID {
					t.Fatalf("first page: %+v %v", p1, err)
				}
				p2, err := c.History(ctx, res.Task.ID, client.HistoryRequest{Limit: 3, Cursor: p1.NextCursor})
				if err != nil || len(p2.Versions) != 1 || p2.Versions[0].VersionID != vs[3].VersionID || p2.NextCursor != "" {
					t.Fatalf("second page: %+v %v", p2, err)
				}
			})

			t.Run("an_empty_claim_returns_no_tasks_and_no_error", func(t *testing.T) {
				cs, err := c.Claim(ctx, client.ClaimRequest{Queue: "empty"})
				if err != nil || len(cs) != 0 {
					t.Fatalf("claim: %+v %v", cs, err)
				}
			})

			t.Run("api_errors_match_the_queue_sentinels", func(t *testing.T) {
				c := c.In("errs")
				_, err := c.Submit(ctx, client.SubmitRequest{SubmitRequest: wire.SubmitRequest{TaskType: "bad/type"}})
				var apiErr *client.Error
				if !errors.As(err, &apiErr) || apiErr.Status != 400 || apiErr.Field != "task_type" || !errors.Is(err, queue.ErrInvalidInput) {
					t.Fatalf("bad submit: %v", err)
				}
				_, err = c.Get(ctx, queue.NewID(time.Now()))
				if !errors.Is(err, queue.ErrNotFound) {
					t.Fatalf("get unknown: %v", err)
				}
				res, _ := c.Submit(ctx, client.SubmitRequest{SubmitRequest: wire.SubmitRequest{TaskType: "c.err", Queue: "errs"}})
				cs, _ := c.Claim(ctx, client.ClaimRequest{Queue: "errs"})
				if len(cs) != 1 {
					t.Fatal("no claim")
				}
				bad := cs[0].Lease
				bad.Token = "nope"
				if _, err := c.Complete(ctx, client.CompleteRequest{Lease: bad}); !errors.Is(err, queue.ErrLeaseMismatch) {
					t.Fatalf("wrong token: %v", err)
				}
				if _, err := c.Fail(ctx, client.FailRequest{Lease: cs[0].Lease, Error: "boom", Permanent: true}); err != nil {
					t.Fatal(err)
				}
				if _, err := c.Complete(ctx, client.CompleteRequest{Lease: bad}); !errors.Is(err, queue.ErrNotRunning) {
					t.Fatalf("complete a failed task: %v", err)
				}
				// The token that failed it cannot complete it: a conflict
				// naming the token, not a replay.
				if _, err := c.Complete(ctx, client.CompleteRequest{Lease: cs[0].Lease}); !errors.As(err, &apiErr) || apiErr.Code != "conflict" || apiErr.Field != "lease_token" {
					t.Fatalf("complete with the token that failed the task: %v", err)
				}
				if _, err := c.Retry(ctx, res.Task.ID); !errors.As(err, &apiErr) || apiErr.Code != "invalid_state" {
					t.Fatalf("retry while the dead-letter event is owed: %v, want 409 invalid_state", err)
				}
				if _, err := q.Sweep(ctx, time.Now(), queue.SweepOptions{}); err != nil { // the deployment's sweep-expired
					t.Fatal(err)
				}
				if tk, err := c.Retry(ctx, res.Task.ID); err != nil || tk.Status != queue.StatusPending {
					t.Fatalf("retry: %v %v", tk.Status, err)
				}
				if tk, err := c.Expire(ctx, res.Task.ID); err != nil || tk.Status != queue.StatusExpired {
					t.Fatalf("expire: %v %v", tk.Status, err)
				}
			})

			t.Run("batch_and_list_page_through_tasks", func(t *testing.T) {
				reqs := []wire.SubmitRequest{{TaskType: "b", Queue: "batch"}, {TaskType: "b/../x", Queue: "batch"}, {TaskType: "b", Queue: "batch"}}
				items, err := c.SubmitBatch(ctx, reqs)
				if err != nil || len(items) != 3 || items[0].Task == nil || items[1].Error == nil || items[1].Error.Field != "tasks[1].task_type" || items[2].Task == nil {
					t.Fatalf("batch: %+v %v", items, err)
				}
				res, err := c.List(ctx, client.ListRequest{Queue: "batch", Status: queue.StatusPending, Limit: 1})
				if err != nil || len(res.Tasks) != 1 || res.NextCursor == "" {
					t.Fatalf("list page 1: %+v %v", res, err)
				}
				res2, err := c.List(ctx, client.ListRequest{Queue: "batch", Status: queue.StatusPending, Limit: 1, Cursor: res.NextCursor})
				if err != nil || len(res2.Tasks) != 1 || res2.Tasks[0].ID == res.Tasks[0].ID {
					t.Fatalf("list page 2: %+v %v", res2, err)
				}
			})

			t.Run("a_task_of_another_queue_is_404_and_queue_calls_work", func(t *testing.T) {
				res, err := c.In("qa").Submit(ctx, client.SubmitRequest{SubmitRequest: wire.SubmitRequest{TaskType: "c"}})
				if err != nil || res.Task.Queue != "qa" {
					t.Fatalf("submit: %+v %v", res, err)
				}
				if _, err := c.In("qb").Get(ctx, res.Task.ID); !errors.Is(err, queue.ErrNotFound) {
					t.Errorf("get under qb: %v, want not found", err)
				}
				if _, err := c.In("qa").Get(ctx, res.Task.ID); err != nil {
					t.Errorf("get under qa: %v", err)
				}
				ttl := queue.Duration(time.Hour)
				info, created, err := c.DeclareQueue(ctx, "qc", client.QueueRequest{TTL: &ttl, MaxConcurrency: 2})
				if err != nil || !created || info.MaxConcurrency != 2 {
					t.Fatalf("declare: %+v %v %v", info, created, err)
				}
				if _, created, err := c.DeclareQueue(ctx, "qc", client.QueueRequest{MaxConcurrency: 3}); err != nil || created {
					t.Fatalf("redeclare: %v %v", created, err)
				}
				if got, err := c.GetQueue(ctx, "qa"); err != nil || got.Counts == nil || got.Counts.Live != 1 {
					t.Errorf("get queue: %+v %v", got, err)
				}
				if _, err := c.GetQueue(ctx, "nope"); !errors.Is(err, queue.ErrQueueNotFound) {
					t.Errorf("get undeclared queue: %v", err)
				}
				if err := c.DeleteQueue(ctx, "qa"); !errors.Is(err, queue.ErrQueueNotEmpty) {
					t.Errorf("delete a queue with a task: %v", err)
				}
				list, err := c.ListQueues(ctx, client.ListQueuesRequest{NoCounts: true})
				if err != nil || len(list.Queues) < 2 || list.Queues[0].Counts != nil {
					t.Errorf("list queues: %+v %v", list, err)
				}
				if err := c.DeleteQueue(ctx, "qc"); err != nil {
					t.Errorf("delete qc: %v", err)
				}
			})

			t.Run("cancel_of_a_running_task_is_seen_on_heartbeat_and_acknowledged", func(t *testing.T) {
				c := c.In("cancel")
				res, _ := c.Submit(ctx, client.SubmitRequest{SubmitRequest: wire.SubmitRequest{TaskType: "c", Queue: "cancel"}})
				cs, _ := c.Claim(ctx, client.ClaimRequest{Queue: "cancel", LeaseFor: time.Minute})
				if len(cs) != 1 {
					t.Fatal("no claim")
				}
				if tk, err := c.Cancel(ctx, res.Task.ID); err != nil || !tk.CancelRequested {
					t.Fatalf("cancel: %+v %v", tk, err)
				}
				hb, err := c.Heartbeat(ctx, client.HeartbeatRequest{Lease: cs[0].Lease})
				if err != nil || !hb.Task.CancelRequested {
					t.Fatalf("heartbeat: %v %v", hb.Task.CancelRequested, err)
				}
				if tk, err := c.AckCancel(ctx, client.AckCancelRequest{Lease: cs[0].Lease}); err != nil || tk.Status != queue.StatusCancelled {
					t.Fatalf("ack: %v %v", tk.Status, err)
				}
			})
		})
	}
}

func TestSigV4SignsRequestsForExecuteAPI(t *testing.T) {
	var auth, date string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth, date = r.Header.Get("Authorization"), r.Header.Get("X-Amz-Date")
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"task":{"id":"x","status":"pending"}}`))
	}))
	defer ts.Close()
	yes := true
	c, err := client.New(ctx, ts.URL, client.Options{
		SigV4: &yes, Region: "eu-west-1",
		Credentials: aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", "")),
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/") || !strings.Contains(auth, "/eu-west-1/execute-api/aws4_request") || date == "" {
		t.Fatalf("Authorization = %q, X-Amz-Date = %q", auth, date)
	}
	unsigned, _ := client.New(ctx, ts.URL, client.Options{})
	if _, err := unsigned.Get(ctx, "x"); err != nil || auth != "" {
		t.Fatalf("a localhost client signed its request: %q %v", auth, err)
	}
}

func TestNewRejectsABadURL(t *testing.T) {
	for _, u := range []string{"", "localhost:8080", "ftp://x", "http://"} {
		if _, err := client.New(ctx, u, client.Options{}); err == nil {
			t.Errorf("New(%q) accepted", u)
		}
	}
}
