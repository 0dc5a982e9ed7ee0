package queue

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/s3q/s3q/shared/internal/jsonval"
)

// checkLease validates a lease against the record at now: the task must
// be running, the token must be its lease token, and the lease must not
// have expired. Every lease operation calls it before changing anything.
func checkLease(t *Task, token string, now time.Time) error {
	if t.Status != StatusRunning {
		return fmt.Errorf("task %s is %s: %w", t.ID, t.Status, ErrNotRunning)
	}
	if token == "" || token != t.LeaseToken {
		return fmt.Errorf("task %s: %w", t.ID, ErrLeaseMismatch)
	}
	if t.LeaseExpiresAt == nil {
		return fmt.Errorf("task %s has no lease expiry: %w", t.ID, ErrLeaseExpired)
	}
	if !now.Before(*t.LeaseExpiresAt) {
		return fmt.Errorf("task %s lease expired at %s: %w", t.ID, t.LeaseExpiresAt.Format(time.RFC3339Nano), ErrLeaseExpired)
	}
	return nil
}

// The lease operations, as recorded in Task.EndedBy.
const (
	opHeartbeat  = "heartbeat"
	opComplete   = "complete"
	opFail       = "fail"
	opReschedule = "reschedule"
	opAckCancel  = "cancel"
)

// errReplay stops an update whose lease operation already landed.
var errReplay = errors.New("queue: lease operation already applied")

// leaseOp runs one lease operation: validate the id, then read, check the
// lease and apply fn in one conditional write, re-reading on a lost race.
// On any error nothing is written.
//
// An operation that ends the lease records on the task its token, its
// name and the hash of its request (EndedLeaseToken, EndedBy,
// EndedRequest; see leaseRequest). The same operation with the same
// request, retried with the same token after its answer was lost, finds
// them, writes nothing and returns the task as it is, as the first call
// did: a worker may retry any lease operation. Any other request with
// that token (another operation, or the same one with another body, such
// as a permanent fail after a retryable one) is a *ConflictError naming
// lease_token: it did not happen, and saying 200 would hide that. A claim
// forgets the ended lease, so a token older than the task's latest claim
// is ErrLeaseMismatch, never a replay.
func (q *Queue) leaseOp(ctx context.Context, id, token string, req leaseRequest, now time.Time, fn func(t *Task) error) (Task, error) {
	queue, id, err := q.locateLeased(id)
	if err != nil {
		return Task{}, err
	}
	var replay Task
	hash := req.hash()
	t, _, err := q.update(ctx, queue, id, q.leaseCleanup(), func(t *Task) error {
		if err := checkLease(t, token, now); err != nil {
			if token == "" || t.EndedLeaseToken != token {
				return err
			}
			// A record written before requests were hashed names none:
			// the operation alone decides.
			if t.EndedBy == req.op && (t.EndedRequest == "" || t.EndedRequest == hash) {
				replay = t.clone()
				return errReplay
			}
			what := "another request"
			if t.EndedBy != req.op {
				what = "another operation"
			}
			return &ConflictError{Field: "lease_token", Err: ErrLeaseEnded, Message: fmt.Sprintf(
				"this lease of task %s already ended by %s, with %s than this %s: the token cannot be used again", t.ID, t.EndedBy, what, req.op)}
		}
		if err := fn(t); err != nil {
			if errors.Is(err, errUnchanged) { // nothing to write: the task as it is
				replay = t.clone()
				return errReplay
			}
			return err
		}
		if t.Status != StatusRunning {
			t.EndedLeaseToken, t.EndedBy, t.EndedRequest = token, req.op, hash
		}
		return nil
	})
	if errors.Is(err, errReplay) {
		return replay, nil
	}
	return t, err
}

// locateLeased resolves the task a lease operation names. A lease's task
// is always in a named queue: outside a view (In) a bare id, which would
// otherwise mean DefaultQueue and answer not found for a task claimed from
// another queue, is a *ValidationError of field queue.
func (q *Queue) locateLeased(ref string) (queue, id string, err error) {
	if q.scope == "" && !strings.Contains(ref, "/") {
		if err := ValidateID(ref); err != nil {
			return "", "", err
		}
		return "", "", invalid("queue", "task %s names no queue: give its reference {queue}/{id} (Task.Ref), or call on the queue's view (In)", ref)
	}
	return q.locate(ref)
}

// leaseRequest is a lease operation and what its request asks, as it is
// compared for a replay: op and the request's fields by value, defaults
// filled in, JSON (a completion's output) in its canonical spelling.
type leaseRequest struct {
	op   string
	body any
}

// hash is a SHA-256 of the operation and the request's JSON.
func (r leaseRequest) hash() string {
	b, _ := json.Marshal(r.body)
	sum := sha256.Sum256(append([]byte(r.op+"\n"), b...))
	return hex.EncodeToString(sum[:16])
}

// checkLeaseFor refuses a requested lease length that is negative or over
// MaxLease with ErrInvalidLeaseDuration.
func checkLeaseFor(d time.Duration) error {
	if d < 0 || d > MaxLease {
		return fmt.Errorf("lease_for %s: %w", d, ErrInvalidLeaseDuration)
	}
	return nil
}

// checkTimeout refuses a task's or a queue's timeout (the default lease
// length) unless it is absent or more than 0 and at most MaxLease.
func checkTimeout(d *Duration) error {
	if d != nil && (d.Std() <= 0 || d.Std() > MaxLease) {
		return invalid("timeout", "must be more than 0 and at most %s", FormatDuration(MaxLease))
	}
	return nil
}

// leaseLength resolves a requested (checked) lease length for t: 0 means
// t's timeout, and a task without one gets DefaultTimeout.
func (t *Task) leaseLength(d time.Duration) time.Duration {
	if d == 0 {
		d = t.Timeout.Std()
	}
	if d <= 0 {
		d = DefaultTimeout
	}
	return d
}

// MaxHeartbeats is the most heartbeats one attempt may make: each is a
// write, hence a stored version of the record (its history), so a task's
// history is bounded by its attempts. A worker heartbeating at a third of
// a 5m lease makes 432 in the longest lease, 12h; a lease held longer
// than that must be renewed by rescheduling.
const MaxHeartbeats = 1000

// HeartbeatRequest extends the lease on a running task.
type HeartbeatRequest struct {
	// ID is the task's reference, {queue}/{id} (Task.Ref); a bare id
	// only on the queue's view (In). A bare id elsewhere is refused
	// naming queue: it never means DefaultQueue.
	ID string
	// LeaseToken is the token of the lease the claim handed out.
	LeaseToken string
	// LeaseFor is the new lease length from now, at most MaxLease.
	// Defaults to the task's timeout.
	LeaseFor time.Duration
}

// Heartbeat extends the lease on a running task to now + req.LeaseFor and
// returns the task, whose CancelRequested tells the worker to stop. The
// token stays the same. Past MaxHeartbeats in one attempt it is a
// *StateError and changes nothing.
func (q *Queue) Heartbeat(ctx context.Context, req HeartbeatRequest, now time.Time) (Claimed, error) {
	now = norm(now)
	if err := checkLeaseFor(req.LeaseFor); err != nil {
		return Claimed{}, err
	}
	t, err := q.leaseOp(ctx, req.ID, req.LeaseToken, leaseRequest{op: opHeartbeat, body: req.LeaseFor}, now, func(t *Task) error {
		exp := norm(now.Add(t.leaseLength(req.LeaseFor)))
		if t.LeaseExpiresAt != nil && t.LeaseExpiresAt.Equal(exp) {
			// The same heartbeat again (its answer was lost): no write, no
			// count.
			return errUnchanged
		}
		if t.Heartbeats >= MaxHeartbeats {
			return &StateError{ID: t.ID, Op: "heartbeat", Status: t.Status, Reason: fmt.Sprintf(
				"attempt %d has had %d heartbeats, the most one attempt may make (each is a version of the record): complete, fail or reschedule it", t.Attempt, t.Heartbeats)}
		}
		t.Heartbeats++
		t.LeaseExpiresAt = &exp
		t.UpdatedAt = now
		// A task parked by the sweep until its lease ends is found again at
		// that time: a shorter lease moves the parked marker earlier.
		if m, ok := parseMarker(t.IndexKey); ok && !m.lease.IsZero() && m.lease.After(*t.LeaseExpiresAt) {
			t.IndexKey = leaseKeyFor(t.Queue, t.ID, *t.LeaseExpiresAt)
		}
		return nil
	})
	if err != nil {
		return Claimed{}, err
	}
	return Claimed{Task: t, Lease: Lease{TaskID: t.ID, Token: t.LeaseToken, ExpiresAt: *t.LeaseExpiresAt}}, nil
}

// CompleteRequest finishes a running task.
type CompleteRequest struct {
	// ID is the task's reference, {queue}/{id} (Task.Ref); a bare id
	// only on the queue's view (In). A bare id elsewhere is refused
	// naming queue: it never means DefaultQueue.
	ID string
	// LeaseToken is the token of the lease the claim handed out.
	LeaseToken string
	// Output is the task's result, JSON of at most 256 KiB. Defaults to
	// none.
	Output []byte
}

// Complete finishes a running task with req.Output and drops its index
// marker.
func (q *Queue) Complete(ctx context.Context, req CompleteRequest, now time.Time) (Task, error) {
	now = norm(now)
	if err := validJSON("output", req.Output); err != nil {
		return Task{}, err
	}
	var same []byte // the output by value: its spelling may change in a retry
	if len(req.Output) > 0 {
		same, _ = jsonval.Canonical(req.Output)
	}
	return q.leaseOp(ctx, req.ID, req.LeaseToken, leaseRequest{op: opComplete, body: string(same)}, now, func(t *Task) error {
		t.Status = StatusCompleted
		if len(req.Output) > 0 {
			t.Output = append([]byte(nil), req.Output...)
		}
		t.CompletedAt = ptr(now)
		t.UpdatedAt = now
		clearLease(t)
		t.IndexKey = ""
		return nil
	})
}

// AckCancelRequest gives up a running task: the lease holder's
// acknowledgement of a cancel request, or its own decision.
type AckCancelRequest struct {
	// ID is the task's reference, {queue}/{id} (Task.Ref); a bare id
	// only on the queue's view (In). A bare id elsewhere is refused
	// naming queue: it never means DefaultQueue.
	ID string
	// LeaseToken is the token of the lease the claim handed out.
	LeaseToken string
}

// AckCancel is the lease holder's acknowledgement of a cancel request (or
// its own decision to give up): the running task becomes cancelled.
func (q *Queue) AckCancel(ctx context.Context, req AckCancelRequest, now time.Time) (Task, error) {
	now = norm(now)
	return q.leaseOp(ctx, req.ID, req.LeaseToken, leaseRequest{op: opAckCancel}, now, func(t *Task) error {
		cancel(t, now)
		return nil
	})
}
