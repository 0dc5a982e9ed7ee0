package queue_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/internal/check"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/store"
	"github.com/s3q/s3q/shared/store/memstore"
	"github.com/s3q/s3q/shared/store/storefault"
)

// Crash the sweep at each write in a scenario the suite's crash test does
// not cover: a parked lease lapsing (expire), a dead-letter outbox entry,
// artifacts of a completed task.
func TestASweepCrashedOnAnyPathLeavesWorkTheNextOneFinishes(t *testing.T) {
	o := queue.Options{}
	setup := func(s store.Store) (parked, dead, done string) {
		q := queue.New(s, o)
		parked = mustSubmit(t, q, queue.SubmitRequest{TTL: check.Dur("10m"), Queue: "p"}, T0).ID
		claim1(t, q, queue.ClaimRequest{Queue: "p", LeaseFor: 20 * time.Minute}, T0)
		sweepAt(t, s, o, T0.Add(11*time.Minute), nil) // park until +20m
		dead = mustSubmit(t, q, queue.SubmitRequest{MaxAttempts: 1, Queue: "d"}, T0).ID
		c := claim1(t, q, queue.ClaimRequest{Queue: "d"}, T0)
		q.Fail(bg, dead, c.Lease.Token, queue.FailRequest{Error: "x"}, T0.Add(time.Minute))
		done = mustSubmit(t, q, queue.SubmitRequest{Queue: "a"}, T0).ID
		if _, _, err := q.ReserveArtifacts(bg, done, time.Hour, T0); err != nil {
			t.Fatal(err)
		}
		s.Put(bg, queue.ArtifactKey(done, "x"), nil)
		c = claim1(t, q, queue.ClaimRequest{Queue: "a"}, T0)
		if _, err := q.Complete(bg, done, c.Lease.Token, nil, T0.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		return
	}
	now := T0.Add(21 * time.Minute)
	s := memstore.New()
	setup(s)
	cnt := store.NewCounting(s)
	if _, err := queue.New(cnt, o).Sweep(bg, now, queue.SweepOptions{Publisher: &rec{}, Concurrency: 1}); err != nil {
		t.Fatal(err)
	}
	writes := int(cnt.Counts().Put + cnt.Counts().Delete)
	for _, mode := range []storefault.FaultMode{storefault.FailBefore, storefault.FailAfter, storefault.LoseAnswer} {
		for n := 1; n <= writes; n++ {
			t.Run(fmt.Sprint(mode, "_", n), func(t *testing.T) {
				s := memstore.New()
				parked, dead, done := setup(s)
				f := storefault.New(s)
				f.Fail(n, mode)
				pub := &rec{}
				queue.New(f, o).Sweep(bg, now, queue.SweepOptions{Publisher: pub, Concurrency: 1})
				f.Disarm()
				sweepAt(t, s, o, now, pub)
				sweepAt(t, s, o, now.Add(3*time.Minute), pub)
				q := queue.New(s, o)
				if g, _ := q.Get(bg, parked); g.Status != queue.StatusExpired || g.ExpiryEventSentAt == nil || pub.count(parked, queue.DetailTypeTaskExpired) == 0 {
					t.Fatalf("parked: %s %v", g.Status, g.ExpiryEventSentAt)
				}
				if g, _ := q.Get(bg, dead); g.DeadLetterEventSentAt == nil || pub.count(dead, queue.DetailTypeTaskDeadLettered) == 0 {
					t.Fatalf("dead: %v", g.DeadLetterEventSentAt)
				}
				if p, _ := s.List(bg, queue.ArtifactPrefix(done), "", 0); len(p.Items) != 0 {
					t.Fatalf("artifacts left")
				}
				p, _ := s.List(bg, "sweep/", "", 0)
				for _, it := range p.Items {
					k := it.Key
					if len(k) > 0 && !contains(k, "_queue_") && !contains(k, "_artifacts_") {
						t.Fatalf("left: %s", k)
					}
				}
				for _, pre := range []string{"ready/", "deadline/", "children/"} {
					if p, _ := s.List(bg, pre, "", 0); len(p.Items) != 0 {
						t.Fatalf("left: %v", p.Keys())
					}
				}
			})
		}
	}
}

func contains(s, sub string) bool {
	return len(s) >= len(sub) && (func() bool {
		for i := 0; i+len(sub) <= len(s); i++ {
			if s[i:i+len(sub)] == sub {
				return true
			}
		}
		return false
	})()
}
