package wire

import (
	"slices"
	"time"
)

// Lease is a claim on a running task: whoever holds the token may
// heartbeat, complete, fail, reschedule or acknowledge a cancel until
// ExpiresAt.
type Lease struct {
	TaskID    string    `json:"task_id"`
	Token     string    `json:"token"`
	ExpiresAt time.Time `json:"expires_at"`
}

// QueueCounts are the tasks of a queue as its indexes show them: the
// claim indexes for live tasks, the status/ index for failed, cancelled
// and expired ones. They are read from LISTs alone, no record, so a
// stale entry counts until a claim, a listing or the sweep removes it.
type QueueCounts struct {
	// Live is the tasks pending or running (a running task keeps its
	// marker), Delayed those of them not available before now.
	Live    int `json:"live"`
	Delayed int `json:"delayed"`
	// Running is the slots held, for a queue with max_concurrency: the
	// tasks running now, and any slot a crash left (taken over by the next
	// claim that needs it once its lease has lapsed).
	Running *int `json:"running,omitempty"`
	// Failed (dead-lettered), Cancelled and Expired are the tasks in
	// those statuses. Expired counts too the claim-index markers whose
	// deadline has passed at now: pending tasks that read expired
	// (Task.AsOf) until the sweep writes them, within seconds (a running
	// task keeps its marker until the sweep parks it, and counts here
	// meanwhile).
	Failed    int `json:"failed"`
	Cancelled int `json:"cancelled"`
	Expired   int `json:"expired"`
	// Completed is the tasks finished otherwise (completed, archived):
	// the queue's records less the counts above. It needs the queue's
	// records under a prefix of their own (recordPrefixes) and is absent
	// in a layout that keeps every queue's records together.
	Completed *int `json:"completed,omitempty"`
	// AtLeast is true when a count stopped at MaxCountPages pages of a
	// prefix: Capped names which.
	AtLeast bool `json:"at_least,omitempty"`
	// Capped names the counts that stopped at MaxCountPages pages (live,
	// failed, cancelled, expired, completed): each is a lower bound ("at
	// least"); the others are exact. While live is capped, Completed is
	// not known (it is the records less the others) and is absent.
	Capped []string `json:"capped,omitempty"`
}

// IsCapped reports whether the count named name (as in Capped) is a
// lower bound.
func (c QueueCounts) IsCapped(name string) bool { return slices.Contains(c.Capped, name) }

// QueueStats describe one queue at a time.
type QueueStats struct {
	Queue    string      `json:"queue"`
	Paused   bool        `json:"paused"`
	PausedAt *time.Time  `json:"paused_at,omitempty"`
	Counts   QueueCounts `json:"counts"`
	// MaxPerSecond and Burst are the queue's rate limit, when it has one
	// (its declaration's, Burst with its default filled in).
	MaxPerSecond *float64 `json:"max_per_second,omitempty"`
	Burst        *int     `json:"burst,omitempty"`
	// OldestPendingAt is when the oldest pending task that is due became
	// available, and OldestPendingAgeSeconds how long it has waited
	// since: how far behind the queue's workers are. Absent when no
	// pending task is due (or the oldest due markers all belong to
	// running tasks or are stale: it reads at most 10 records).
	OldestPendingAt         *time.Time `json:"oldest_pending_at,omitempty"`
	OldestPendingAgeSeconds *int64     `json:"oldest_pending_age_seconds,omitempty"`
	// Recent is the throughput of the rare ends over the last hour.
	Recent RecentCounts `json:"recent"`
	At     time.Time    `json:"at"`
}

// RecentCounts are the tasks that became failed, cancelled or expired
// within the last WindowSeconds, from when their status/ entry was
// written. Completions are not counted: there is no index of them, and
// one would cost a write per completed task.
type RecentCounts struct {
	WindowSeconds int64 `json:"window_seconds"`
	Failed        int   `json:"failed"`
	Cancelled     int   `json:"cancelled"`
	Expired       int   `json:"expired"`
}

// BulkOp is an operation on the tasks of one queue chosen by a filter.
type BulkOp string

// The bulk operations.
const (
	// OpPurge deletes pending or terminal tasks (see Purge).
	OpPurge BulkOp = "purge"
	// OpRetry retries failed or cancelled tasks, as Retry does each.
	OpRetry BulkOp = "retry"
	// OpCancel cancels pending tasks, or asks running ones to cancel,
	// as Cancel does each.
	OpCancel BulkOp = "cancel"
	// OpExpire expires pending tasks by hand, as Expire does each.
	OpExpire BulkOp = "expire"
)

// BulkSkip is a task the filter chose but the operation refused, and why.
type BulkSkip struct {
	ID     string `json:"id"`
	Reason string `json:"reason"`
}

// BulkResult is what one bulk call did (or, on a dry run, would do).
type BulkResult struct {
	Op     BulkOp `json:"op"`
	Queue  string `json:"queue"`
	Status Status `json:"status"`
	DryRun bool   `json:"dry_run"`
	// Matched is how many tasks the filter chose in this call.
	Matched int `json:"matched"`
	// Changed is how many of them the call changed (would change).
	Changed int `json:"changed"`
	// TaskIDs are the tasks changed (that would change), in listing order.
	TaskIDs []string `json:"task_ids"`
	// Skipped are the chosen tasks the operation refused.
	Skipped []BulkSkip `json:"skipped,omitempty"`
	// NextCursor continues the operation with the next call; empty when
	// it has been through every task of the status.
	NextCursor string `json:"next_cursor,omitempty"`
}

// BulkRequest chooses the tasks of a bulk operation in one queue.
type BulkRequest struct {
	// Queue is the queue; a view's (In) when empty.
	Queue string `json:"-"`
	// Status selects the tasks in this status. Required for a purge;
	// defaults to failed for a retry and pending for a cancel or expire.
	Status Status `json:"status,omitempty"`
	// TaskType, when set, selects only tasks of this type.
	TaskType string `json:"task_type,omitempty"`
	// OlderThan, when set, selects only tasks last changed (updated_at)
	// at least this long before now: for a pending task its submit or
	// last return to pending, for a finished one when it finished.
	OlderThan *Duration `json:"older_than,omitempty"`
	// Limit is the most tasks this call changes, 1-100. Defaults to 100.
	Limit int `json:"limit,omitempty"`
	// Cursor continues from a previous call's NextCursor.
	Cursor string `json:"cursor,omitempty"`
	// DryRun reports what the call would change and writes nothing.
	DryRun bool `json:"dry_run,omitempty"`
}
