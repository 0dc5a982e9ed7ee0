package main

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/s3local"
	"github.com/s3q/s3q/shared/store"
)

// benchSweep prints what one sweep costs against the backlog it leaves
// alone, and what an idle deployment's sweep costs a minute:
//
//	bench sweep backlog=N expiring=100 requests=R list=L get=G put=P seconds=S
//	bench idle sweep lists_per_minute=L requests_per_minute=R
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
// The idle figure is one sweep a minute over a bucket that has had a task
// (so its queue is registered) and has nothing due; the schedule tick
// adds its own LIST of due/.
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
		rep, err := sweepOnce(ctx, on, n, 100)
		if err != nil {
			return err
		}
		c := rep.Requests
		fmt.Printf("bench sweep backlog=%d expiring=100 requests=%d list=%d get=%d put=%d seconds=%.3f\n",
			n, c.Total(), c.List, c.Get+c.Head, c.Put, rep.Duration.Seconds())
	}

	// Idle: one task that came and went, then a sweep a minute.
	s := srv.Store(prefix())
	q := queue.New(s, queue.Options{})
	now := time.Now().UTC()
	if _, err := q.Submit(ctx, queue.SubmitRequest{TaskType: "bench", TTL: durp(time.Hour)}, now); err != nil {
		return err
	}
	cs, err := q.Claim(ctx, queue.ClaimRequest{}, now)
	if err != nil || len(cs) != 1 {
		return fmt.Errorf("idle: claim: %v", err)
	}
	if _, err := q.Complete(ctx, cs[0].Task.ID, cs[0].Lease.Token, nil, now); err != nil {
		return err
	}
	const minutes = 5
	var total store.Counts
	for i := 1; i <= minutes; i++ {
		rep, err := queue.New(s, queue.Options{}).Sweep(ctx, now.Add(time.Duration(i)*time.Minute), queue.SweepOptions{})
		if err != nil {
			return err
		}
		total = total.Add(rep.Requests)
	}
	fmt.Printf("bench idle sweep lists_per_minute=%.2f requests_per_minute=%.2f\n",
		float64(total.List)/minutes, float64(total.Total())/minutes)
	return nil
}

// sweepOnce writes a backlog of n future deadline markers and expiring
// overdue tasks in a fresh prefix of srv, and sweeps once.
func sweepOnce(ctx context.Context, srv *s3local.Server, n, expiring int) (queue.SweepReport, error) {
	s := srv.Store(prefix())
	now := time.Now().UTC().Truncate(time.Microsecond)
	q := queue.New(s, queue.Options{})
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
	avail := now.Format("20060102T150405.000000Z")
	for i := 0; i < n-expiring; i++ {
		exp := now.Add(time.Hour + time.Duration(i)*time.Millisecond).Format("20060102T150405.000000Z")
		keys <- "deadline/default/0/" + exp + "_" + avail + "_" + queue.NewID(now)
	}
	close(keys)
	wg.Wait()
	select {
	case err := <-errs:
		return queue.SweepReport{}, fmt.Errorf("write backlog: %w", err)
	default:
	}
	rep, err := queue.New(s, queue.Options{}).Sweep(ctx, now.Add(2*time.Minute), queue.SweepOptions{})
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
