package schedule_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/schedule"
	"github.com/s3q/s3q/shared/store/memstore"
)

// A tick reads the wall clock only through Options.Clock: one whose clock
// is past its budget at once takes up no due schedule and leaves them all
// to the next tick, whatever the now it is given.
func TestATickPastItsBudgetOnItsClockLeavesTheDueSchedulesToTheNext(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	st := memstore.New()
	q := queues.NewQueue(st, queues.Options{})
	var reads atomic.Int64
	clock := func() time.Time { return t0.Add(time.Duration(reads.Add(1)-1) * time.Hour) }
	sc := schedule.New(st, q, schedule.Options{Clock: clock})
	for i := range 3 {
		if _, err := sc.Create(ctx, schedule.Request{ID: fmt.Sprintf("s%d", i), TaskType: "a", Cron: "* * * * *"}, t0.Add(-time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := sc.Tick(ctx, t0)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Fired != 0 || !rep.More || reads.Load() < 2 {
		t.Fatalf("report %+v after %d clock reads, want nothing fired and more left", rep, reads.Load())
	}
	rep, err = schedule.New(st, q, schedule.Options{}).Tick(ctx, t0)
	if err != nil || rep.Fired != 3 {
		t.Fatalf("the next tick: %+v %v, want the 3 fired", rep, err)
	}
}
