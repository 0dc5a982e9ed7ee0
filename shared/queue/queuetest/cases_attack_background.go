package queuetest

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/internal/check"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/store"
)

// callerDeletes records, for each delete of a key containing match,
// whether it ran on the test's goroutine (the case's function is on its
// stack: the call made it before answering) or on a goroutine of its own
// (a background cleanup).
type callerDeletes struct {
	store.Store
	match string

	mu     sync.Mutex
	inline []bool
}

func (c *callerDeletes) Delete(ctx context.Context, key string) error {
	if strings.Contains(key, c.match) {
		buf := make([]byte, 64<<10)
		stack := string(buf[:runtime.Stack(buf, false)])
		c.mu.Lock()
		c.inline = append(c.inline, strings.Contains(stack, "runAttackBackgroundChild"))
		c.mu.Unlock()
	}
	return c.Store.Delete(ctx, key)
}

// A child's children/ marker is written again, same key, when the child
// is retried. Under BackgroundCleanup a fail's delete of it ran after the
// answer: in a Lambda container frozen after its answer and thawed after
// the child's retry, it deleted the revived child's marker, and the
// cascade of its parent's expiry then missed the child, which ran on.
// The delete runs before the answer.
func runAttackBackgroundChild(t *testing.T, f Factory) {
	t.Run("a_childs_marker_is_deleted_before_its_fail_under_background_cleanup_answers", func(t *testing.T) {
		e := newEnv(t, f)
		parent := e.submit(queue.SubmitRequest{TaskType: "parent", TTL: check.Dur("1h")}, t0)
		child := e.submit(queue.SubmitRequest{ParentID: parent.ID, TTL: check.Dur("5h"), MaxAttempts: 1}, t0)
		c := e.claim(queue.ClaimRequest{TaskTypes: []string{child.TaskType}}, t0)[0]
		cd := &callerDeletes{Store: e.s, match: "/children/"}
		o := e.options()
		o.Core.BackgroundCleanup = true
		w := queues.NewQueue(cd, o)
		if err := failTask(w, child.Ref(), c.Lease.Token, t0); err != nil {
			t.Fatal(err)
		}
		w.Flush()
		if len(cd.inline) != 1 || !cd.inline[0] {
			t.Fatalf("deletes of the child's marker (true: before the answer): %v, want [true]", cd.inline)
		}
		// Revived, the child is found by its parent's cascade.
		e.sweep(t0, nil)
		if _, err := e.reopen().Retry(ctx, child.Ref(), t0.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		e.sweep(t0.Add(61*time.Minute), nil)
		if got := e.get(child.ID); got.Status != queue.StatusExpired {
			t.Fatalf("the retried child of an expired parent is %s, want expired", got.Status)
		}
	})
}
