package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/s3q/s3q/shared/lambdafn"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/s3local"
	"github.com/s3q/s3q/shared/store"
)

// benchSweep prints what one sweep costs against the backlog it leaves
// alone and the queues that exist, and what an idle deployment's sweep
// costs a minute:
//
//	bench sweep backlog=N expiring=100 requests=R list=L get=G put=P seconds=S
//	bench sweep queues=Q shards=1 backlog=1000 expiring=100 requests=R list=L get=G put=P seconds=S
//	bench idle sweep queues=Q lists_per_minute=L requests_per_minute=R
//
// For each backlog of N pending tasks with deadlines in the future, of
// which 100 are overdue, one sweep expires the 100 (and publishes their
// events to nowhere); requests are the sweep's own, counted by a
// store.Counting (get includes HEAD), and must not grow with N. The
// backlog is written through the store (its deadline/ markers only: the
// sweep stops at the first future key and never reads the rest), the
// overdue tasks through Submit. The 1,000 and 10,000 backlogs run on srv
// (versitygw); the 100,000 one on an in-process gofakes3, where writing
// 100,000 markers takes seconds instead of minutes (it says so on stderr).
//
// The queues=Q lines do the same with a backlog of 1,000 in a bucket where
// Q-1 other queues each hold a pending task due in an hour: they must not
// grow with Q either. The idle figure is one sweep a minute over a bucket
// where Q queues each had a task that came and went (its deadline an hour
// ahead) and nothing is due; the schedule tick adds its own LIST of due/.
func benchSweep(ctx context.Context, srv *s3local.Server) error {
	var fake *s3local.Server
	for _, n := range []int{1_000, 10_000, 100_000} {
		on := srv
		if n >= 100_000 {
			if fake == nil {
				var err error
				if fake, err = s3local.StartGoFakeS3(s3local.GoFakeS3Options{}); err != nil {
					return err
				}
				defer fake.Close()
			}
			on = fake
		}
		fmt.Fprintf(os.Stderr, "bench: sweep backlog=%d on %s\n", n, on.Name)
		rep, err := sweepOnce(ctx, on, n, 100, 1)
		if err != nil {
			return err
		}
		c := rep.Requests
		fmt.Printf("bench sweep backlog=%d expiring=100 requests=%d list=%d get=%d put=%d seconds=%.3f\n",
			n, c.Total(), c.List, c.Get+c.Head, c.Put, rep.Duration.Seconds())
	}
	for _, nq := range []int{1, 100, 1_000} {
		fmt.Fprintf(os.Stderr, "bench: sweep queues=%d on %s\n", nq, srv.Name)
		rep, err := sweepOnce(ctx, srv, 1_000, 100, nq)
		if err != nil {
			return err
		}
		c := rep.Requests
		fmt.Printf("bench sweep queues=%d shards=1 backlog=1000 expiring=100 requests=%d list=%d get=%d put=%d seconds=%.3f\n",
			nq, c.Total(), c.List, c.Get+c.Head, c.Put, rep.Duration.Seconds())
	}
	return benchIdleSweep(ctx, srv)
}

// benchIdleSweep prints what an idle deployment's minute rule costs
// (-only idle runs it alone).
func benchIdleSweep(ctx context.Context, srv *s3local.Server) error {
	for _, nq := range []int{1, 100, 1_000} {
		lpm, rpm, err := idleSweep(ctx, srv, nq)
		if err != nil {
			return err
		}
		fmt.Printf("bench idle sweep queues=%d lists_per_minute=%.2f requests_per_minute=%.2f\n", nq, lpm, rpm)
	}
	return nil
}

// idleSweep has nq queues each run a task with a one-hour TTL through
// submit, claim and complete, then sweeps once a minute for five minutes
// and returns the LISTs and requests per minute.
func idleSweep(ctx context.Context, srv *s3local.Server, nq int) (float64, float64, error) {
	s := srv.Store(prefix())
	q := queues.NewQueue(s, queues.Options{})
	now := time.Now().UTC()
	for i := 0; i < nq; i++ {
		name := fmt.Sprintf("q%04d", i)
		if _, err := q.Submit(ctx, queue.SubmitRequest{Queue: name, TaskType: "bench", TTL: durp(time.Hour)}, now); err != nil {
			return 0, 0, err
		}
		cs, err := q.Claim(ctx, queue.ClaimRequest{Queue: name}, now)
		if err != nil || len(cs) != 1 {
			return 0, 0, fmt.Errorf("idle: claim %s: %d tasks, %v", name, len(cs), err)
		}
		if _, err := q.Complete(ctx, queue.CompleteRequest{ID: cs[0].Task.Ref(), LeaseToken: cs[0].Lease.Token}, now); err != nil {
			return 0, 0, err
		}
	}
	const minutes = 5
	var total store.Counts
	for i := 1; i <= minutes; i++ {
		// The minute rule's run, as the stack's function makes it: a
		// scheduled sweep-expired that stays while work is near due
		// (lambdafn.DefaultSweepStay); idle, it makes its one pass.
		counting := store.NewCounting(s)
		cq, decls := queues.New(counting, queues.Options{})
		at, real := now.Add(time.Duration(i)*time.Minute), time.Now()
		h, err := lambdafn.New(lambdafn.SweepExpired, lambdafn.Deps{
			Queue: cq, Queues: decls, Logger: slog.New(slog.DiscardHandler), SweepStay: lambdafn.DefaultSweepStay,
			Now: func() time.Time { return at.Add(time.Since(real)) },
		})
		if err != nil {
			return 0, 0, err
		}
		ev, _ := json.Marshal(events.EventBridgeEvent{Source: "aws.events", DetailType: "Scheduled Event", Time: at})
		if _, err := h.Invoke(ctx, ev); err != nil {
			return 0, 0, err
		}
		total = total.Add(counting.Counts())
	}
	return float64(total.List) / minutes, float64(total.Total()) / minutes, nil
}

// sweepOnce writes a backlog of n future deadline markers and expiring
// overdue tasks in a fresh prefix of srv, and a task due in an hour in
// each of queues-1 other queues, and sweeps once.
func sweepOnce(ctx context.Context, srv *s3local.Server, n, expiring, nq int) (queue.SweepReport, error) {
	s := srv.Store(prefix())
	now := time.Now().UTC().Truncate(time.Microsecond)
	q := queues.NewQueue(s, queues.Options{})
	for i := 1; i < nq; i++ {
		req := queue.SubmitRequest{Queue: fmt.Sprintf("q%04d", i), TaskType: "bench", TTL: durp(time.Hour)}
		if _, err := q.Submit(ctx, req, now); err != nil {
			return queue.SweepReport{}, err
		}
	}
	for i := 0; i < expiring; i++ {
		if _, err := q.Submit(ctx, queue.SubmitRequest{TaskType: "bench", TTL: durp(time.Minute)}, now); err != nil {
			return queue.SweepReport{}, err
		}
	}
	keys := make(chan string)
	errs := make(chan error, 1)
	var wg sync.WaitGroup
	for w := 0; w < 32; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range keys {
				if _, err := s.Put(ctx, k, nil); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		}()
	}
	for i := 0; i < n-expiring; i++ {
		exp := now.Add(time.Hour + time.Duration(i)*time.Millisecond)
		keys <- queue.DeadlineMarkerKey(queue.DefaultQueue, 0, exp, now, queue.NewID(now))
	}
	close(keys)
	wg.Wait()
	select {
	case err := <-errs:
		return queue.SweepReport{}, fmt.Errorf("write backlog: %w", err)
	default:
	}
	// Every request of the sweeping process is counted, its reads of
	// declarations too (SweepReport.Requests leaves them out).
	counting := store.NewCounting(s)
	rep, err := queues.NewQueue(counting, queues.Options{}).Sweep(ctx, now.Add(2*time.Minute), queue.SweepOptions{})
	rep.Requests = counting.Counts()
	if err != nil {
		return rep, err
	}
	if rep.Expired != expiring {
		return rep, fmt.Errorf("sweep expired %d of %d", rep.Expired, expiring)
	}
	return rep, nil
}

func durp(d time.Duration) *queue.Duration {
	v := queue.Duration(d)
	return &v
}
