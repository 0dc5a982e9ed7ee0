package queue_test

import (
	"sync"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/internal/check"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/store/memstore"
)

// Two sweeps at a parked task's lease expiry while its worker heartbeats or
// completes: every task ends completed, or running with a marker it names;
// no Task Expired event for a task that completed.
func TestParkedLeasesRacingSweepsAndWorkersLoseNothing(t *testing.T) {
	for round := 0; round < 30; round++ {
		s := memstore.New()
		o := queue.Options{}
		q := queue.New(s, o)
		n := 20
		for i := 0; i < n; i++ {
			mustSubmit(t, q, queue.SubmitRequest{TTL: check.Dur("10m")}, T0)
		}
		cs, err := q.Claim(bg, queue.ClaimRequest{LeaseFor: time.Hour, MaxTasks: n}, T0)
		if err != nil || len(cs) != n {
			t.Fatal(err, len(cs))
		}
		sweepAt(t, s, o, T0.Add(11*time.Minute), nil)
		// at lease expiry - 1s the workers act; sweeps run at +1h (lease lapsed for those that did not heartbeat)
		for i, c := range cs {
			if i%3 != 2 {
				if _, err := q.Heartbeat(bg, c.Task.ID, c.Lease.Token, time.Hour, T0.Add(30*time.Minute)); err != nil {
					t.Fatal(err)
				}
			}
		}
		pub := &rec{}
		var wg sync.WaitGroup
		done := map[string]string{}
		var mu sync.Mutex
		for i, c := range cs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var err error
				what := ""
				switch i % 3 {
				case 0:
					_, err = q.Complete(bg, c.Task.ID, c.Lease.Token, nil, T0.Add(time.Hour))
					what = "completed"
				case 1:
					_, err = q.Heartbeat(bg, c.Task.ID, c.Lease.Token, time.Hour, T0.Add(time.Hour))
					what = "running"
				default:
					what = "expired"
				}
				if err != nil {
					t.Error(err)
				}
				mu.Lock()
				done[c.Task.ID] = what
				mu.Unlock()
			}()
		}
		for k := 0; k < 2; k++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := queue.New(s, o).Sweep(bg, T0.Add(time.Hour), queue.SweepOptions{Publisher: pub, Concurrency: 4}); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		sweepAt(t, s, o, T0.Add(time.Hour+time.Minute), pub)
		for id, want := range done {
			got, _ := q.Get(bg, id)
			if string(got.Status) != want {
				t.Fatalf("round %d task %s: %s want %s", round, id, got.Status, want)
			}
			if got.Status == queue.StatusRunning {
				if _, err := s.Head(bg, got.IndexKey); err != nil {
					t.Fatalf("running task %s names missing marker %s", id, got.IndexKey)
				}
			}
			if want != "expired" && pub.count(id, queue.DetailTypeTaskExpired) != 0 {
				t.Fatalf("event for %s task", want)
			}
			if want == "expired" && pub.count(id, queue.DetailTypeTaskExpired) == 0 {
				t.Fatalf("no event for expired task")
			}
		}
	}
}
