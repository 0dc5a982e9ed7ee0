package queuetest

import (
	"testing"
	"time"

	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/store/storefault"
)

// A parent that never expires is never cascaded: its purge is the last
// moment its children's hints can go. Without it, its flag and the
// marker of a child whose submit crashed before its record stayed for
// good, through every sweep.
func runAttackChild(t *testing.T, f Factory) {
	t.Run("a_purged_parent_leaves_no_childrens_hints_even_of_a_child_whose_submit_crashed", func(t *testing.T) {
		e := newEnv(t, f)
		p := e.submit(queue.SubmitRequest{TaskType: "parent"}, t0)
		e.submit(queue.SubmitRequest{TaskType: "child", ParentID: p.ID}, t0) // a child that finishes normally
		fs := storefault.New(e.s)
		fs.FailMatching("", "q/default/tasks/", storefault.FailBefore, 1000)
		_, err := e.open(fs).Submit(ctx, queue.SubmitRequest{TaskType: "child", ParentID: p.ID}, t0) // crashes before its record
		fs.Disarm()
		if err == nil {
			t.Fatal("the child's submit succeeded though its record write failed")
		}
		now := t0.Add(time.Hour)
		for _, c := range e.claim(queue.ClaimRequest{MaxTasks: 10}, now) {
			if _, err := e.q.Complete(ctx, queue.CompleteRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token}, now); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := e.q.Purge(ctx, queue.BulkRequest{Queue: "default", Status: queue.StatusCompleted}, now); err != nil {
			t.Fatal(err)
		}
		for i := 1; i <= 3; i++ {
			e.sweep(now.Add(time.Duration(i)*24*time.Hour), nil)
		}
		if r := e.inQueues("/tasks/"); len(r) != 0 {
			t.Fatalf("records left after the purge: %v", r)
		}
		if h := e.hints(); len(h) != 0 {
			t.Fatalf("hints left after the parent's purge and three sweeps: %v", h)
		}
	})
}
