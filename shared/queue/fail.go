package queue

import (
	"context"
	"time"
)

// FailRequest reports a failed attempt of a running task.
type FailRequest struct {
	// ID is the task's reference, {queue}/{id} (Task.Ref); a bare id
	// only on the queue's view (In). A bare id elsewhere is refused
	// naming queue: it never means DefaultQueue.
	ID string
	// LeaseToken is the token of the lease the claim handed out.
	LeaseToken string
	// Error is the failure message, kept as last_error (at most 8 KiB).
	// Defaults to "".
	Error string
	// Retryable says whether another attempt may succeed. Defaults to true.
	Retryable *bool
	// RetryAfter, when positive, replaces the backoff of a retry:
	// available_at = now + RetryAfter (a push target's Retry-After). It
	// still uses up an attempt, and a retry past the deadline still
	// expires. A repeat of a Fail whose answer was lost replays it
	// whatever its RetryAfter (relative to another now). Defaults to 0:
	// the queue's backoff.
	RetryAfter time.Duration
}

// Fail records a failed attempt of a running task. The core decides what
// follows: while attempts remain and the error is retryable, the task goes
// back to pending with available_at = now + backoff(attempt) (exponential,
// with jitter) and its expires_at unchanged, so a backoff that lands past
// the deadline means the task expires instead of running; otherwise it
// goes to failed, the dead-letter state (listable, retryable by hand). A
// task whose cancel was requested is cancelled instead of retried.
func (q *Queue) Fail(ctx context.Context, req FailRequest, now time.Time) (Task, error) {
	now = norm(now)
	if err := validText("error", req.Error, MaxErrorBytes); err != nil {
		return Task{}, err
	}
	if req.RetryAfter > 0 {
		if err := validTime("retry_after", now.Add(req.RetryAfter)); err != nil {
			return Task{}, err
		}
	}
	retryable := req.Retryable == nil || *req.Retryable
	// What makes a repeat the same request. RetryAfter is left out: it
	// is relative to its call's now, so a caller that retries a Fail
	// later (its answer was lost) sends a shorter one for the same
	// moment, and that repeat replays the first.
	same := struct {
		Error     string
		Retryable bool
	}{req.Error, retryable}
	return q.leaseOp(ctx, req.ID, req.LeaseToken, leaseRequest{op: opFail, body: same}, now, func(t *Task) error {
		t.LastError = req.Error
		t.FailedAt = ptr(now)
		switch {
		case t.CancelRequested:
			cancel(t, now)
		case !retryable || t.Attempt >= t.MaxAttempts:
			deadLetter(t, req.Error, now)
		case req.RetryAfter > 0:
			backToPending(t, now.Add(req.RetryAfter), now, q.shardsOf(ctx, t.Queue, now))
		default:
			backToPending(t, now.Add(q.opts.Backoff(t.Attempt)), now, q.shardsOf(ctx, t.Queue, now))
		}
		return nil
	})
}

// backToPending makes a running task pending again, available at avail,
// under the index marker that fits its (unchanged) deadline.
func backToPending(t *Task, avail, now time.Time, shards int) {
	t.Status = StatusPending
	t.AvailableAt = norm(avail)
	t.UpdatedAt = now
	clearLease(t)
	t.CancelRequested = false
	t.IndexKey = indexKeyFor(t, shards)
}
