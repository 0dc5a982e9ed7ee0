package queue_test

import (
	"context"
	"fmt"
	"time"

	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/store/memstore"
)

// A task with a one-hour TTL, claimed and completed. queues.Open is the
// one entry point: it checks the bucket's layout and returns the queue
// (and the registry of declared queues), tuned by one options value. On
// AWS the store is s3store.New(client, bucket, "") instead of the
// in-memory one.
func ExampleQueue_Submit() {
	ctx := context.Background()
	now := time.Date(2026, 1, 28, 9, 0, 0, 0, time.UTC)
	q, _, err := queues.Open(ctx, memstore.New(), queues.Options{Core: queue.Options{DefaultTTL: 24 * time.Hour}}, now)
	if err != nil {
		panic(err) // a bucket of another layout: queue.ErrLayout
	}

	ttl := queue.Duration(time.Hour)
	res, err := q.Submit(ctx, queue.SubmitRequest{TaskType: "email.send", Input: []byte(`{"to":"a@example.com"}`), TTL: &ttl}, now)
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Task.Status, "expires", res.Task.ExpiresAt.Format(time.RFC3339))

	claimed, _ := q.Claim(ctx, queue.ClaimRequest{WorkerID: "w1", LeaseFor: time.Minute}, now.Add(time.Second))
	c := claimed[0]
	left, _ := c.Task.Remaining(now.Add(time.Second))
	fmt.Println(c.Task.Status, "attempt", c.Task.Attempt, "time left", queue.FormatDuration(left))

	done, _ := q.Complete(ctx, queue.CompleteRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token, Output: []byte(`{"sent":true}`)}, now.Add(2*time.Second))
	fmt.Println(done.Status, string(done.Output))
	// Output:
	// pending expires 2026-01-28T10:00:00Z
	// running attempt 1 time left 59m59s
	// completed {"sent":true}
}
