package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/s3local"
	"github.com/s3q/s3q/shared/store"
)

// benchOps prints what one call of each queue operation costs, on a queue
// holding 300 tasks in the status it selects (a third with dedup keys),
// changing 100 (the most one call changes):
//
//	bench ops op=purge status=pending stored=300 changed=100 requests=R list=L get=G put=P delete=D per_task=X
//	bench ops op=stats stored=300 requests=R list=L get=G
//
// and likewise purge of completed tasks (found by a scan of the records,
// not an index), retry of cancelled tasks, cancel and expire of pending
// ones. Requests are the call's own (the setup's are not counted).
func benchOps(ctx context.Context, srv *s3local.Server) error {
	const stored, limit = 300, 100
	for _, c := range []struct {
		op     queue.BulkOp
		status queue.Status
	}{
		{queue.OpPurge, queue.StatusPending}, {queue.OpPurge, queue.StatusCompleted},
		{queue.OpRetry, queue.StatusCancelled}, {queue.OpCancel, queue.StatusPending}, {queue.OpExpire, queue.StatusPending},
	} {
		fmt.Fprintf(os.Stderr, "bench: ops %s status=%s: %d tasks\n", c.op, c.status, stored)
		counting := store.NewCounting(srv.Store(prefix()))
		q := queues.NewQueue(counting, queues.Options{})
		if err := opsBacklog(ctx, q, stored, c.status); err != nil {
			return err
		}
		counting.Reset()
		res, err := queues.NewQueue(counting, queues.Options{}).Bulk(ctx, c.op, queue.BulkRequest{Queue: queue.DefaultQueue, Status: c.status, Limit: limit}, time.Now())
		if err != nil {
			return err
		}
		n := counting.Counts()
		fmt.Printf("bench ops op=%s status=%s stored=%d changed=%d requests=%d list=%d get=%d put=%d delete=%d per_task=%.2f\n",
			c.op, c.status, stored, res.Changed, n.Total(), n.List, n.Get+n.Head, n.Put, n.Delete, float64(n.Total())/float64(max(res.Changed, 1)))
		if c.op == queue.OpCancel {
			// The same queue, for the stats: 200 pending, 100 cancelled.
			counting.Reset()
			q, decls := queues.New(counting, queues.Options{})
			d, err := decls.Get(ctx, queue.DefaultQueue, time.Now())
			if err != nil {
				return err
			}
			if _, err := q.Stats(ctx, d.Settings(), time.Now()); err != nil {
				return err
			}
			n := counting.Counts()
			fmt.Printf("bench ops op=stats stored=%d requests=%d list=%d get=%d\n", stored, n.Total(), n.List, n.Get+n.Head)
		}
	}
	return nil
}

// opsBacklog makes n tasks in status (pending, completed or cancelled), a
// third of them with a dedup key.
func opsBacklog(ctx context.Context, q *queue.Queue, n int, status queue.Status) error {
	reqs := make([]queue.SubmitRequest, n)
	for i := range reqs {
		reqs[i] = queue.SubmitRequest{ID: queue.NewID(time.Now()), TaskType: "bench", Input: []byte(`{"n":1}`)}
		if i%3 == 0 {
			reqs[i].DedupKey = fmt.Sprintf("k%d", i)
		}
	}
	for start := 0; start < n; start += queue.MaxBatch {
		rs, err := q.SubmitBatch(ctx, reqs[start:min(start+queue.MaxBatch, n)], time.Now())
		if err != nil {
			return err
		}
		for _, r := range rs {
			if r.Err != nil {
				return r.Err
			}
		}
	}
	switch status {
	case queue.StatusCancelled:
		for _, r := range reqs {
			if _, err := q.Cancel(ctx, r.ID, time.Now()); err != nil {
				return err
			}
		}
	case queue.StatusCompleted:
		for done := 0; done < n; {
			cs, err := q.Claim(ctx, queue.ClaimRequest{LeaseFor: time.Minute, MaxTasks: 10}, time.Now())
			if err != nil {
				return err
			}
			if len(cs) == 0 {
				return fmt.Errorf("ops backlog: nothing to claim after %d of %d", done, n)
			}
			for _, c := range cs {
				if _, err := q.Complete(ctx, queue.CompleteRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token}, time.Now()); err != nil {
					return err
				}
				done++
			}
		}
	}
	return nil
}
