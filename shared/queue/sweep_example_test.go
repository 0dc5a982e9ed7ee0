package queue_test

import (
	"context"
	"fmt"
	"time"

	"github.com/s3q/s3q/shared/events"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/store/memstore"
)

// The sweep of sweep-expired, a minute after a task's one-minute TTL ran
// out: it expires the task and publishes its Task Expired event (here to
// an in-memory ring; on AWS to EventBridge with events.NewEventBridge).
func ExampleQueue_Sweep() {
	ctx := context.Background()
	q := queues.NewQueue(memstore.New(), queues.Options{})
	now := time.Date(2026, 1, 28, 9, 0, 0, 0, time.UTC)

	ttl := queue.Duration(time.Minute)
	res, _ := q.Submit(ctx, queue.SubmitRequest{TaskType: "email.send", TTL: &ttl}, now)

	ring := events.NewRing(100)
	rep, err := q.Sweep(ctx, now.Add(time.Minute), queue.SweepOptions{Publisher: ring})
	if err != nil {
		panic(err)
	}
	fmt.Println("expired", rep.Expired, "events", rep.EventsSent, "lists", rep.Requests.List)
	task, _ := q.Get(ctx, res.Task.ID)
	fmt.Println(task.Status, task.ExpiryReason, "event sent", task.ExpiryEventSentAt != nil)
	ev := ring.Recent(1)[0]
	fmt.Println(ev.Source, ev.DetailType)
	// Output:
	// expired 1 events 1 lists 2
	// expired ttl event sent true
	// s3q Task Expired
}
