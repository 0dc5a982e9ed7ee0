package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"time"

	"github.com/s3q/s3q/shared/api"
	"github.com/s3q/s3q/shared/client"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/store/memstore"
	"github.com/s3q/s3q/shared/wire"
	"github.com/s3q/s3q/shared/worker"
)

// The README's Go snippets are the bodies of submitWelcome and
// runWorker below, word for word (scripts/readme checks it): a producer
// submits with the client, a worker runs a handler per task type.

// submitWelcome submits one task to queue emails of the API at url.
func submitWelcome(ctx context.Context, url string) (string, error) {
	c, err := client.New(ctx, url, client.Options{Queue: "emails"})
	if err != nil {
		return "", err
	}
	ttl := client.Duration(time.Hour)
	res, err := c.Submit(ctx, client.SubmitRequest{SubmitRequest: wire.SubmitRequest{
		TaskType: "email.send",
		Input:    json.RawMessage(`{"to":"a@example.com"}`),
		TTL:      &ttl, // not started within an hour: expired, never run
	}})
	if err != nil {
		return "", err // retried already: a 5xx or network error, same task id
	}
	return res.Task.ID, nil
}

// runWorker works queue emails of the API at url until ctx ends.
func runWorker(ctx context.Context, url string) error {
	c, err := client.New(ctx, url, client.Options{})
	if err != nil {
		return err
	}
	w := worker.New(c, worker.Options{Queue: "emails", Concurrency: 4})
	w.Handle("email.send", func(ctx context.Context, t *worker.Task) (json.RawMessage, error) {
		var in struct{ To string }
		if err := json.Unmarshal(t.Input, &in); err != nil {
			return nil, worker.Permanent(err) // bad input: no retry
		}
		// ... send the mail; ctx ends if the lease is lost or a cancel is asked
		return json.Marshal(map[string]string{"sent_to": in.To})
	})
	return w.Run(ctx) // claims, heartbeats, completes or fails each task
}

// Example submits a task and works it, against the API served over an
// in-memory store.
func Example() {
	q, decls := queues.New(memstore.New(), queues.Options{})
	ts := httptest.NewServer(api.New(q, decls, api.Options{Logger: slog.New(slog.DiscardHandler)}))
	defer ts.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	id, err := submitWelcome(ctx, ts.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- runWorker(wctx, ts.URL) }()
	c, _ := client.New(ctx, ts.URL, client.Options{Queue: "emails"})
	for ctx.Err() == nil {
		if t, err := c.Get(ctx, id); err == nil && t.Status == queue.StatusCompleted {
			fmt.Println(t.Status, string(t.Output))
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	stop()
	<-done
	// Output: completed {"sent_to":"a@example.com"}
}
