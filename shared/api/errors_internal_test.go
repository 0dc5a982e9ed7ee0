package api

import (
	"fmt"
	"strings"
	"testing"

	"github.com/s3q/s3q/shared/artifacts"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/schedule"
)

// TestToErrorWordsTheCoresChainsOnce: the core wraps its sentinels with
// what it was doing ("update task X: queue: conflict, retry"); the API's
// message keeps the what, once, and drops the chain. These are the
// chains no plain request reaches on demand (races, limits).
func TestToErrorWordsTheCoresChainsOnce(t *testing.T) {
	for _, c := range []struct {
		err  error
		code string
		want string
	}{
		{fmt.Errorf("update task X: %w", queue.ErrConflict), CodeConflict,
			"update task X met a concurrent change it could not settle; retrying is safe"},
		{fmt.Errorf("update schedule s1: %w", schedule.ErrConflict), CodeConflict,
			"update schedule s1 met a concurrent change it could not settle; retrying is safe"},
		{fmt.Errorf("declare queue q7: %d queues exist: %w", 1000, queue.ErrTooManyQueues), CodeTooManyQueues,
			"queue q7 cannot be declared: 1000 queues exist, the most max_queues allows"},
		{fmt.Errorf("queue q1 has more than %d live tasks: %w", 100, queue.ErrQueueNotEmpty), CodeQueueNotEmpty,
			"queue q1 has more than 100 live tasks"},
		{fmt.Errorf("queue q1: task X is being submitted: %w", queue.ErrQueueNotEmpty), CodeQueueNotEmpty,
			"queue q1 still holds live tasks (task X is being submitted)"},
		{fmt.Errorf("task X in queue q1: %w", queue.ErrNotFound), CodeNotFound, "task X not found in queue q1"},
		{fmt.Errorf("schedule q1/s1: %w", schedule.ErrNotFound), CodeNotFound, "schedule s1 not found in queue q1"},
		{fmt.Errorf("artifact a.txt of task X: %w", artifacts.ErrNoArtifact), CodeNotFound, "artifact a.txt of task X not found"},
		{fmt.Errorf("task X: record at K names Y: %w", queue.ErrNotFound), CodeNotFound, "task X not found (record at K names Y)"},
		{fmt.Errorf("task X has no lease expiry: %w", queue.ErrLeaseExpired), CodeLeaseExpired, "task X has no lease expiry"},
		{queue.ErrNotFound, CodeNotFound, "not found"},
	} {
		e := toError(c.err)
		if e.Code != c.code || e.Message != c.want {
			t.Errorf("%v:\n got %s %q\nwant %s %q", c.err, e.Code, e.Message, c.code, c.want)
		}
		if strings.Contains(e.Message, "queue: ") || strings.Contains(e.Message, "schedule: ") {
			t.Errorf("%v: the chain shows: %q", c.err, e.Message)
		}
	}
}
