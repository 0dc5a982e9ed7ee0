package main

import (
	"context"
	"fmt"
	"time"

	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/s3local"
	"github.com/s3q/s3q/shared/store"
)

// benchList prints what one listing call and one history page cost:
//
//	bench list stored=N status=S queue=Q limit=1 tasks=T requests=R list=L get=G
//	bench history versions=V limit=100 requests=R list=L get=G
//
// The bucket holds n pending tasks and one task each failed, cancelled
// and completed (the completed one submitted last). The history is that
// of a task with 400 heartbeats.
func benchList(ctx context.Context, srv *s3local.Server, n int) error {
	s := srv.Store(prefix())
	q := queues.NewQueue(s, queues.Options{})
	now := time.Now().UTC()
	for i := 0; i < n; i++ {
		if _, err := q.Submit(ctx, queue.SubmitRequest{TaskType: "bench", Queue: "bulk"}, now); err != nil {
			return err
		}
	}
	one := func(queueName string, then func(queue.Claimed) error) error {
		if _, err := q.Submit(ctx, queue.SubmitRequest{TaskType: "bench", Queue: queueName, MaxAttempts: 1}, now); err != nil {
			return err
		}
		cs, err := q.Claim(ctx, queue.ClaimRequest{Queue: queueName}, now)
		if err != nil || len(cs) != 1 {
			return fmt.Errorf("list: claim in %s: %d tasks, %v", queueName, len(cs), err)
		}
		return then(cs[0])
	}
	no := false
	if err := one("f", func(c queue.Claimed) error {
		_, err := q.Fail(ctx, queue.FailRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token, Error: "x", Retryable: &no}, now)
		return err
	}); err != nil {
		return err
	}
	hb := func(c queue.Claimed) error {
		for i := 0; i < 400; i++ {
			if _, err := q.Heartbeat(ctx, queue.HeartbeatRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token, LeaseFor: time.Hour}, now.Add(time.Duration(i)*time.Millisecond)); err != nil {
				return err
			}
		}
		_, err := q.Complete(ctx, queue.CompleteRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token}, now.Add(time.Second))
		return err
	}
	var done string
	if err := one("h", func(c queue.Claimed) error { done = c.Task.Ref(); return hb(c) }); err != nil {
		return err
	}
	for _, req := range []queue.ListRequest{
		{Status: queue.StatusFailed, Limit: 1},
		{Status: queue.StatusCompleted, Limit: 1},
		{Status: queue.StatusPending, Queue: "bulk", Limit: 1},
		{Status: queue.StatusPending, Limit: 1},
	} {
		c := store.NewCounting(s)
		res, err := queues.NewQueue(c, queues.Options{}).List(ctx, req)
		if err != nil {
			return err
		}
		k := c.Counts()
		fmt.Printf("bench list stored=%d status=%s queue=%s limit=1 tasks=%d requests=%d list=%d get=%d\n",
			n+2, req.Status, or(req.Queue, "any"), len(res.Tasks), k.Total(), k.List, k.Get+k.Head)
	}
	c := store.NewCounting(s)
	h, err := queues.NewQueue(c, queues.Options{}).History(ctx, queue.HistoryRequest{ID: done})
	if err != nil {
		return err
	}
	k := c.Counts()
	fmt.Printf("bench history versions=%d limit=100 returned=%d requests=%d list=%d get=%d\n", 402, len(h.Versions), k.Total(), k.List, k.Get)
	return nil
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
