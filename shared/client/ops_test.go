package client_test

import (
	"errors"
	"testing"

	"github.com/s3q/s3q/shared/client"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/s3local"
	"github.com/s3q/s3q/shared/wire"
)

// The queue operations through the client, against the API on each server.
func TestClientQueueOperations(t *testing.T) {
	for name, srv := range map[string]*s3local.Server{"gofakes3": servers.GoFakeS3, "versitygw": servers.VersityGW} {
		t.Run(name, func(t *testing.T) {
			c, _ := newAPI(t, srv)
			c = c.In("ops")
			var ids []string
			for i := 0; i < 5; i++ {
				res, err := c.Submit(ctx, client.SubmitRequest{SubmitRequest: wire.SubmitRequest{TaskType: "o", Queue: "ops"}})
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, res.Task.ID)
			}
			q, err := c.PauseQueue(ctx, "ops")
			if err != nil || !q.Paused {
				t.Fatalf("pause: %+v, %v", q, err)
			}
			if cs, err := c.Claim(ctx, client.ClaimRequest{Queue: "ops"}); err != nil || len(cs) != 0 {
				t.Fatalf("claim of a paused queue: %d tasks, %v", len(cs), err)
			}
			st, err := c.QueueStats(ctx, "ops")
			if err != nil || !st.Paused || st.Counts.Live != 5 || st.OldestPendingAt == nil {
				t.Fatalf("stats: %+v, %v", st, err)
			}
			res, err := c.Bulk(ctx, queue.OpCancel, queue.BulkRequest{Limit: 2})
			if err != nil || res.Changed != 2 || res.NextCursor == "" {
				t.Fatalf("bulk cancel of 2: %+v, %v", res, err)
			}
			dry, err := c.Purge(ctx, queue.BulkRequest{Status: queue.StatusPending, DryRun: true})
			if err != nil || dry.Changed != 3 {
				t.Fatalf("dry purge: %+v, %v", dry, err)
			}
			purged, err := c.Purge(ctx, queue.BulkRequest{Status: queue.StatusPending})
			if err != nil || purged.Changed != 3 {
				t.Fatalf("purge: %+v, %v", purged, err)
			}
			retried, err := c.Bulk(ctx, queue.OpRetry, queue.BulkRequest{Status: queue.StatusCancelled})
			if err != nil || retried.Changed != 2 {
				t.Fatalf("retry cancelled: %+v, %v", retried, err)
			}
			if q, err = c.ResumeQueue(ctx, "ops"); err != nil || q.Paused {
				t.Fatalf("resume: %+v, %v", q, err)
			}
			if cs, err := c.Claim(ctx, client.ClaimRequest{Queue: "ops", MaxTasks: 5}); err != nil || len(cs) != 2 {
				t.Fatalf("claim after resume: %d tasks, %v; want the 2 retried", len(cs), err)
			}
			_, err = c.Purge(ctx, queue.BulkRequest{})
			var apiErr *client.Error
			if !errors.As(err, &apiErr) || apiErr.Field != "status" || !errors.Is(err, queue.ErrInvalidInput) {
				t.Fatalf("purge without a status: %v", err)
			}
			if _, err := c.QueueStats(ctx, "nope"); !errors.Is(err, queue.ErrQueueNotFound) {
				t.Fatalf("stats of an undeclared queue: %v", err)
			}
		})
	}
}
