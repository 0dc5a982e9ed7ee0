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

// benchPriority prints
//
//	bench priority tasks=N high=H claim_order_violations=V requests_per_claim=R list_per_claim=L
//	bench lifecycle ttl=no priority=yes requests=N put=N list=N get=N delete=N usd_per_million=X
//
// The first: N tasks of the default priority with H of priority 1 spread
// among them (submitted in one order, every one due), then claimed one at
// a time by a worker process; a violation is a claim that took a task
// while one of a higher priority was still unclaimed. The second is the
// lifecycle figure (main.go) with every task given a priority, 1 to 5 in
// turn: what priorities cost a task.
func benchPriority(ctx context.Context, srv *s3local.Server, n, high int) error {
	counting := store.NewCounting(srv.Store(prefix()))
	submitter := queues.NewQueue(counting, queues.Options{})
	now := time.Now()
	every := n / high
	highLeft := 0
	for i := range n {
		req := queue.SubmitRequest{ID: queue.NewID(now), TaskType: "bench"}
		if i%every == every-1 && highLeft < high {
			req.Priority = queue.MinPriority
			highLeft++
		}
		if _, err := submitter.Submit(ctx, req, now); err != nil {
			return err
		}
	}
	worker := queues.NewQueue(counting, queues.Options{})
	counting.Reset()
	violations, claims := 0, 0
	for done := 0; done < n; {
		cs, err := worker.Claim(ctx, queue.ClaimRequest{LeaseFor: time.Hour}, time.Now())
		if err != nil {
			return err
		}
		if len(cs) == 0 {
			return fmt.Errorf("priority: nothing to claim after %d of %d", done, n)
		}
		claims++
		for _, c := range cs {
			if c.Task.Priority == queue.MinPriority {
				highLeft--
			} else if highLeft > 0 {
				violations++
			}
			done++
		}
	}
	c := counting.Counts()
	fmt.Printf("bench priority tasks=%d high=%d claim_order_violations=%d requests_per_claim=%.2f list_per_claim=%.3f\n",
		n, high, violations, float64(c.Total())/float64(claims), float64(c.List)/float64(claims))

	// The lifecycle, every task with a priority.
	counting = store.NewCounting(srv.Store(prefix()))
	submitter = queues.NewQueue(counting, queues.Options{})
	for i := range n {
		req := queue.SubmitRequest{ID: queue.NewID(time.Now()), TaskType: "bench", Input: []byte(`{"n":1}`), Priority: 1 + i%queue.MaxPriority}
		if _, err := submitter.Submit(ctx, req, time.Now()); err != nil {
			return err
		}
	}
	worker = queues.NewQueue(counting, queues.Options{})
	for done := 0; done < n; {
		cs, err := worker.Claim(ctx, queue.ClaimRequest{LeaseFor: time.Minute}, time.Now())
		if err != nil {
			return err
		}
		if len(cs) == 0 {
			return fmt.Errorf("lifecycle priority: nothing to claim after %d of %d", done, n)
		}
		for _, cl := range cs {
			if _, err := worker.Complete(ctx, queue.CompleteRequest{ID: cl.Task.Ref(), LeaseToken: cl.Lease.Token, Output: []byte(`{"ok":true}`)}, time.Now()); err != nil {
				return err
			}
			done++
		}
	}
	c = counting.Counts()
	f := float64(n)
	fmt.Printf("bench lifecycle ttl=no priority=yes requests=%.2f put=%.2f list=%.3f get=%.2f delete=%.2f usd_per_million=%.2f\n",
		float64(c.Total())/f, float64(c.Put)/f, float64(c.List)/f, float64(c.Get+c.Head)/f, float64(c.Delete)/f, usd(c)/f*1e6)
	return nil
}
