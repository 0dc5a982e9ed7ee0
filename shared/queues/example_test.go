package queues_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/store/memstore"
)

// A declared queue: its defaults apply to the tasks
// submitted to it, at most max_concurrency of them run at once, and a view
// of another queue does not see them.
func ExampleRegistry_Declare() {
	ctx := context.Background()
	now := time.Date(2026, 1, 28, 9, 0, 0, 0, time.UTC)
	q, decls, err := queues.Open(ctx, memstore.New(), queues.Options{RequireDeclared: true}, now)
	if err != nil {
		panic(err)
	}

	_, err = q.Submit(ctx, queue.SubmitRequest{TaskType: "email.send", Queue: "emails"}, now)
	fmt.Println(err)

	ttl := queue.Duration(time.Hour)
	d, created, _ := decls.Declare(ctx, queues.Declaration{Name: "emails", TTL: &ttl, MaxAttempts: 5, MaxConcurrency: 1}, now)
	fmt.Println(d.Name, "created", created)

	for i := 0; i < 2; i++ {
		res, _ := q.Submit(ctx, queue.SubmitRequest{TaskType: "email.send", Queue: "emails"}, now)
		fmt.Println(res.Task.Status, "expires", res.Task.ExpiresAt.Format(time.RFC3339), "max_attempts", res.Task.MaxAttempts)
	}
	claimed, _ := q.Claim(ctx, queue.ClaimRequest{Queue: "emails", MaxTasks: 2}, now)
	fmt.Println("claimed", len(claimed), "of 2: max_concurrency 1")

	_, err = q.In("other").Get(ctx, claimed[0].Task.ID)
	fmt.Println(errors.Is(err, queue.ErrNotFound))
	// Output:
	// queue emails: queue: queue not found
	// emails created true
	// pending expires 2026-01-28T10:00:00Z max_attempts 5
	// pending expires 2026-01-28T10:00:00Z max_attempts 5
	// claimed 1 of 2: max_concurrency 1
	// true
}
