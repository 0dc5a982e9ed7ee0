package queue

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/s3q/s3q/shared/internal/clip"

	"github.com/s3q/s3q/shared/wire"
)

type BulkOp = wire.BulkOp

// The bulk operations (wire.OpPurge, ...).
const (
	OpPurge  = wire.OpPurge
	OpRetry  = wire.OpRetry
	OpCancel = wire.OpCancel
	OpExpire = wire.OpExpire
)

// MaxBulk is the most tasks one bulk call changes, and its default.
const MaxBulk = 100

// bulkStatuses are the statuses each operation may select, the first
// being the default when the request names none (purge has none: its
// status must be given).
var bulkStatuses = map[BulkOp][]Status{
	OpPurge:  {StatusPending, StatusCompleted, StatusFailed, StatusCancelled, StatusExpired, StatusArchived},
	OpRetry:  {StatusFailed, StatusCancelled},
	OpCancel: {StatusPending, StatusRunning},
	OpExpire: {StatusPending},
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

type BulkSkip = wire.BulkSkip

type BulkResult = wire.BulkResult

// Purge deletes pending or terminal tasks of one queue chosen by req (its
// Status is required): see Bulk. Each task goes by purgeOne: its record is
// made a tombstone by one compare-and-swap (the commit point: before it
// the task is whole, after it every reader finds it gone), then its side
// records and its record are deleted. Running tasks are never purged, nor
// tasks whose Task Expired or Task Dead-Lettered event the sweep still
// owes: both are reported in Skipped. A dedup key held by a purged task
// is free at once. Older versions of a purged record stay in a versioned
// bucket (history) until its lifecycle rule removes them.
func (q *Queue) Purge(ctx context.Context, req BulkRequest, now time.Time) (BulkResult, error) {
	return q.Bulk(ctx, OpPurge, req, now)
}

// Bulk runs op on the tasks of one queue that match req, at most
// req.Limit (≤ MaxBulk) per call: a listing of the status as List makes
// it (at most MaxExamined records examined), then the operation on each
// chosen task, a few at a time, each as its own conditional write, as if
// it had been called on that task alone (a task that changed since the
// listing is judged on what it is now; a purge or a cancel skips one no
// longer in the chosen status, or no longer older than OlderThan). A call that returns NextCursor
// has more to examine; calling again with it continues, and calling again
// without it starts over: a changed task no longer matches its status, so
// a repeated or resumed operation never acts twice on a task.
//
// Costs per call: a GET of the queue's declaration, the listing's LISTs
// and GETs (see List), then per task
// one GET and its transition's writes. A dry run makes only the listing.
// A bad filter is a *ValidationError and an undeclared queue
// ErrQueueNotFound, and both write nothing; a store error
// ends the call (what it changed stays changed, and a re-run goes on).
func (q *Queue) Bulk(ctx context.Context, op BulkOp, req BulkRequest, now time.Time) (BulkResult, error) {
	now = norm(now)
	statuses, ok := bulkStatuses[op]
	if !ok {
		return BulkResult{}, invalid("op", "%q is not one of purge, retry, cancel, expire", clip.Input(string(op)))
	}
	var err error
	if req.Queue, err = q.scoped("queue", req.Queue); err != nil {
		return BulkResult{}, err
	}
	if req.Queue == "" {
		return BulkResult{}, invalid("queue", "is required")
	}
	if err := ValidateQueueName(req.Queue); err != nil {
		return BulkResult{}, err
	}
	if req.Status == "" && op != OpPurge {
		req.Status = statuses[0]
	}
	if !containsStatus(statuses, req.Status) {
		names := make([]string, len(statuses))
		for i, s := range statuses {
			names[i] = string(s)
		}
		if req.Status == "" {
			return BulkResult{}, invalid("status", "is required: one of %s", strings.Join(names, ", "))
		}
		return BulkResult{}, invalid("status", "%q cannot be chosen for %s: one of %s", clip.Input(string(req.Status)), op, strings.Join(names, ", "))
	}
	if req.OlderThan != nil && req.OlderThan.Std() < 0 {
		return BulkResult{}, invalid("older_than", "must not be negative")
	}
	switch {
	case req.Limit == 0:
		req.Limit = MaxBulk
	case req.Limit < 0 || req.Limit > MaxBulk:
		return BulkResult{}, invalid("limit", "must be between 1 and %d", MaxBulk)
	}
	if d, err := q.decls.Settings(ctx, req.Queue, LookupRead, now); err != nil || !d.Declared {
		if err == nil {
			err = fmt.Errorf("queue %s: %w", req.Queue, ErrQueueNotFound)
		}
		return BulkResult{}, err // undeclared: a misspelt name, most likely
	}
	list := ListRequest{Status: req.Status, Queue: req.Queue, TaskType: req.TaskType, Limit: req.Limit, Cursor: req.Cursor}
	if !req.DryRun {
		list.Now = now // a listing repairs the stale status entries it meets: a write
	}
	page, err := q.List(ctx, list)
	if err != nil {
		return BulkResult{}, err
	}
	res := BulkResult{Op: op, Queue: req.Queue, Status: req.Status, DryRun: req.DryRun, TaskIDs: []string{}, NextCursor: page.NextCursor}
	var chosen []Task
	for _, t := range page.Tasks {
		if req.DryRun && t.AsOf(now).Status != req.Status {
			continue // past its deadline: the real run's listing (at now) shows it expired
		}
		if req.OlderThan != nil && t.UpdatedAt.After(now.Add(-req.OlderThan.Std())) {
			continue
		}
		chosen = append(chosen, t)
	}
	res.Matched = len(chosen)
	outcomes := make([]error, len(chosen))
	if req.DryRun {
		for i := range chosen {
			if reason := bulkRefusal(op, &chosen[i], now); reason != "" {
				outcomes[i] = &StateError{ID: chosen[i].ID, Op: string(op), Status: chosen[i].Status, Reason: reason}
			}
		}
	} else {
		q.bulkApply(ctx, op, chosen, outcomes, now, stillChosen(req, now))
	}
	for i, t := range chosen {
		switch err := outcomes[i]; {
		case err == nil:
			res.Changed++
			res.TaskIDs = append(res.TaskIDs, t.ID)
		case errors.Is(err, ErrInvalidState), errors.Is(err, ErrNotFound), errors.Is(err, ErrConflict):
			res.Skipped = append(res.Skipped, BulkSkip{ID: t.ID, Reason: skipReason(err)})
		default:
			return BulkResult{}, fmt.Errorf("%s task %s: %w", op, t.ID, err)
		}
	}
	return res, nil
}

// bulkApply runs op on each task, eight at a time, and records each
// outcome.
func (q *Queue) bulkApply(ctx context.Context, op BulkOp, tasks []Task, outcomes []error, now time.Time, chosen func(*Task) string) {
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i := range tasks {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			outcomes[i] = q.bulkOne(ctx, op, &tasks[i], now, chosen)
		}()
	}
	wg.Wait()
}

// stillChosen returns the check a purge or a cancel makes on a task's
// record as it writes: the record must still match the filter (its
// status, and older_than), else the reason it is skipped. A task claimed
// and completed since the listing is not a pending task any more: a
// purge of pending tasks must not delete it with its output, nor a
// cancel of pending tasks ask its worker to stop.
func stillChosen(req BulkRequest, now time.Time) func(*Task) string {
	return func(cur *Task) string {
		switch {
		case cur.Status != req.Status:
			return "it is " + string(cur.Status) + " now, no longer " + string(req.Status)
		case req.OlderThan != nil && cur.UpdatedAt.After(now.Add(-req.OlderThan.Std())):
			return "it changed since the listing: no longer older than " + FormatDuration(req.OlderThan.Std())
		}
		return ""
	}
}

// bulkOne runs op on one task as the listing saw it; a purge and a
// cancel check chosen on the record they replace.
func (q *Queue) bulkOne(ctx context.Context, op BulkOp, t *Task, now time.Time, chosen func(*Task) string) error {
	if reason := bulkRefusal(op, t, now); reason != "" {
		return &StateError{ID: t.ID, Op: string(op), Status: t.Status, Reason: reason}
	}
	var err error
	switch op {
	case OpPurge:
		_, err = q.purgeOne(ctx, t.Queue, t.ID, now, chosen)
	case OpRetry:
		_, err = q.Retry(ctx, t.Ref(), now)
	case OpCancel:
		var got Task
		got, err = q.cancelChosen(ctx, t.Ref(), now, chosen)
		if err == nil && got.UpdatedAt.Before(now) {
			// Cancelled, or asked to, by someone else meanwhile: not this call's.
			err = &StateError{ID: t.ID, Op: string(op), Status: got.Status, Reason: "already cancelled or asked to cancel"}
		}
	case OpExpire:
		_, err = q.Expire(ctx, t.Ref(), now)
	}
	return err
}

// bulkRefusal says why op would refuse t as listed, or "" when it would
// act: the checks a dry run makes. The operation itself checks again on
// the record it writes.
func bulkRefusal(op BulkOp, t *Task, now time.Time) string {
	switch op {
	case OpPurge:
		return purgeRefusal(t)
	case OpRetry:
		// A dead letter whose event is still owed is retried too: the
		// retry publishes the event first (owed.go).
		if t.deadlinePassed(now) {
			return "its deadline " + t.ExpiresAt.Format(time.RFC3339) + " has passed"
		}
	case OpCancel:
		if t.Status == StatusRunning && t.CancelRequested {
			return "cancel already requested"
		}
	}
	return ""
}

// skipReason is the reason a refused task is reported with.
func skipReason(err error) string {
	var se *StateError
	switch {
	case errors.As(err, &se) && se.Reason != "":
		return se.Reason
	case errors.As(err, &se):
		return "it is " + string(se.Status)
	case errors.Is(err, ErrNotFound):
		return "gone meanwhile"
	default:
		return err.Error()
	}
}

func containsStatus(ss []Status, s Status) bool {
	for _, v := range ss {
		if v == s {
			return true
		}
	}
	return false
}
