package faultrun_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/s3q/s3q/shared/client"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/wire"
)

// The queue operations' lost-answer cases: each write of a purge, a bulk
// operation and a pause loses its answer in turn (TestLostAnswers).
func init() {
	lostCases = append(lostCases,
		lostCase{name: "purge_pending_with_dedup_key", setup: func(ctx context.Context, e *lenv) error {
			return e.submit(ctx, queue.SubmitRequest{ID: idA, TaskType: "t", DedupKey: "k", TTL: ptr(queue.Duration(time.Hour))})
		}, op: func(ctx context.Context, e *lenv) (string, error) {
			return bulked(e.q.Purge(ctx, queue.BulkRequest{Queue: queue.DefaultQueue, Status: queue.StatusPending}, t0.Add(time.Second)))
		}},
		lostCase{name: "purge_dead_lettered", setup: func(ctx context.Context, e *lenv) error {
			if err := e.submit(ctx, queue.SubmitRequest{ID: idA, TaskType: "t", MaxAttempts: 1}); err != nil {
				return err
			}
			if err := e.claim(ctx); err != nil {
				return err
			}
			if _, err := e.q.Fail(ctx, queue.FailRequest{ID: queue.Ref(queue.DefaultQueue, idA), LeaseToken: e.lease.Token, Error: "boom"}, t0.Add(2*time.Second)); err != nil {
				return err
			}
			_, err := e.q.Sweep(ctx, t0.Add(time.Minute), queue.SweepOptions{})
			return err
		}, op: func(ctx context.Context, e *lenv) (string, error) {
			return bulked(e.q.Purge(ctx, queue.BulkRequest{Queue: queue.DefaultQueue, Status: queue.StatusFailed}, t0.Add(2*time.Minute)))
		}},
		lostCase{name: "bulk_cancel", setup: submitA, op: func(ctx context.Context, e *lenv) (string, error) {
			return bulked(e.q.Bulk(ctx, queue.OpCancel, queue.BulkRequest{Queue: queue.DefaultQueue}, t0.Add(time.Second)))
		}},
		lostCase{name: "pause_queue", replay: true, setup: submitA, op: func(ctx context.Context, e *lenv) (string, error) {
			d, err := e.decls.Pause(ctx, queue.DefaultQueue, t0.Add(time.Second))
			return fmt.Sprintf("queue %s paused=%v", d.Name, d.Paused), err
		}},
	)
}

// bulked describes a bulk result for a lost-answer case.
func bulked(r queue.BulkResult, err error) (string, error) {
	skipped := make([]string, len(r.Skipped))
	for i, s := range r.Skipped {
		skipped[i] = s.ID + ": " + s.Reason
	}
	return fmt.Sprintf("%s changed=%d %s skipped=[%s]", r.Op, r.Changed, strings.Join(r.TaskIDs, ","), strings.Join(skipped, "; ")), err
}

// The queue operations through the HTTP API: each write's answer lost in
// turn, the caller still gets the answer it would have got, first try.
func init() {
	apiCases = append(apiCases,
		apiCase{name: "purge", setup: func(ctx context.Context, e *apiEnv) error {
			_, err := e.cl.Submit(ctx, client.SubmitRequest{SubmitRequest: wire.SubmitRequest{ID: idA, TaskType: "t", DedupKey: "k"}})
			return err
		}, op: func(ctx context.Context, e *apiEnv) (string, error) {
			return bulked(e.cl.Purge(ctx, queue.BulkRequest{Status: queue.StatusPending}))
		}},
		apiCase{name: "bulk_retry", setup: func(ctx context.Context, e *apiEnv) error {
			if err := apiSubmitA(ctx, e); err != nil {
				return err
			}
			_, err := e.cl.Cancel(ctx, idA)
			return err
		}, op: func(ctx context.Context, e *apiEnv) (string, error) {
			return bulked(e.cl.Bulk(ctx, queue.OpRetry, queue.BulkRequest{Status: queue.StatusCancelled}))
		}},
		apiCase{name: "resume_queue", setup: func(ctx context.Context, e *apiEnv) error {
			if err := apiSubmitA(ctx, e); err != nil {
				return err
			}
			_, err := e.cl.PauseQueue(ctx, queue.DefaultQueue)
			return err
		}, op: func(ctx context.Context, e *apiEnv) (string, error) {
			q, err := e.cl.ResumeQueue(ctx, queue.DefaultQueue)
			return fmt.Sprintf("queue %s paused=%v", q.Name, q.Paused), err
		}},
	)
}
