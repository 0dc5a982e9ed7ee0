package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/api"
	"github.com/s3q/s3q/shared/api/openapitest"
	"github.com/s3q/s3q/shared/client"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/store/memstore"
	"github.com/s3q/s3q/shared/worker"
)

// A worker on a queue that is not declared, where the deployment requires
// declarations, stops at its first claim naming the queue, instead of
// idling forever.
func TestRunStopsOnAnUndeclaredQueue(t *testing.T) {
	q, decls := queues.New(memstore.New(), queues.Options{RequireDeclared: true})
	ts := httptest.NewServer(openapitest.Handler(t, api.New(q, decls, api.Options{Logger: slog.New(slog.DiscardHandler)})))
	defer ts.Close()
	c, err := client.New(bg, ts.URL, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w := worker.New(c, worker.Options{Queue: "emials", Logger: slog.New(slog.DiscardHandler)})
	w.Handle("email.send", func(context.Context, *worker.Task) (json.RawMessage, error) { return nil, nil })
	ctx, cancel := context.WithTimeout(bg, 20*time.Second)
	defer cancel()
	err = w.Run(ctx)
	if !errors.Is(err, queue.ErrQueueNotFound) || !strings.Contains(err.Error(), `"emials"`) || ctx.Err() != nil {
		t.Fatalf("Run = %v (ctx %v); want a queue_not_found error naming the queue, at once", err, ctx.Err())
	}
}
