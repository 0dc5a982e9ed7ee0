package queue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/s3q/s3q/shared/internal/clip"
)

// build validates a request and makes the new task record, without
// writing: checks (validateSubmit, availableAt, requestTTL), then the
// record, what it inherits from its parent, the defaults of its task
// type, queue and deployment (applyDefaults), and its deadline.
func (q *Queue) build(ctx context.Context, req SubmitRequest, now time.Time) (Task, error) {
	var err error
	if req.Queue, err = q.scoped("queue", req.Queue); err != nil {
		return Task{}, err
	}
	if req.Queue == "" {
		req.Queue = DefaultQueue
	}
	if err := validateSubmit(&req); err != nil {
		return Task{}, err
	}
	avail, err := availableAt(&req, now)
	if err != nil {
		return Task{}, err
	}
	ttl, err := requestTTL(&req)
	if err != nil {
		return Task{}, err
	}

	id := q.opts.NewID(now)
	if req.ID != "" {
		if err := ValidateID(req.ID); err != nil {
			return Task{}, err
		}
		id = req.ID
	}
	t := Task{
		ID:              id,
		Queue:           req.Queue,
		TaskType:        req.TaskType,
		Status:          StatusPending,
		Input:           req.Input,
		CreatedAt:       now,
		UpdatedAt:       now,
		AvailableAt:     avail,
		DedupKey:        req.DedupKey,
		ParentID:        req.ParentID,
		OnParentExpired: req.OnParentExpired,
		MaxAttempts:     req.MaxAttempts,
		Timeout:         Duration(DefaultTimeout),
		Priority:        req.Priority,
		Traceparent:     req.Traceparent,
		Tracestate:      req.Tracestate,
	}
	if req.Timeout != nil {
		t.Timeout = *req.Timeout
	}
	if req.ExpiresAt != nil {
		t.ExpiresAt = ptr(norm(*req.ExpiresAt))
	}

	parentExpired, err := q.inheritParent(ctx, &req, &t, ttl)
	if err != nil {
		return Task{}, err
	}
	decl, err := q.decls.Settings(ctx, req.Queue, LookupRead, now)
	if err != nil {
		return Task{}, err
	}
	ttl, ttlFrom, err := q.applyDefaults(ctx, &req, decl, &t, ttl, now)
	if err != nil {
		return Task{}, err
	}

	if err := setDeadline(&t, ttl, ttlFrom, now); err != nil {
		return Task{}, err
	}

	// ttl=0 (or a deadline already past) submits an already-expired task,
	// and so does a parent that has expired: its children expire with it.
	if parentExpired {
		expire(&t, ReasonParentExpired, now)
		return t, nil
	}
	if t.deadlinePassed(now) {
		expire(&t, ReasonTTL, now)
		return t, nil
	}
	t.IndexKey = indexKeyFor(&t, decl.Shards)
	return t, nil
}

// setDeadline gives t its deadline from a time to live: expires_at, or
// with ttl_from first_attempt a ttl that starts at the first claim.
func setDeadline(t *Task, ttl *time.Duration, ttlFrom TTLFrom, now time.Time) error {
	if ttl != nil {
		switch {
		case ttlFrom == TTLFromFirstAttempt && *ttl > 0:
			t.TTL, t.TTLFrom = ptr(Duration(*ttl)), TTLFromFirstAttempt
		default:
			t.ExpiresAt = ptr(norm(now.Add(*ttl)))
		}
	}
	if t.ExpiresAt != nil {
		return validTime("ttl", *t.ExpiresAt)
	}
	return nil
}

// validateSubmit checks the fields of a submit request (its queue
// resolved) that need nothing but the request.
func validateSubmit(req *SubmitRequest) error {
	if err := ValidateQueueName(req.Queue); err != nil {
		return err
	}
	if err := ValidateTaskType("task_type", req.TaskType); err != nil {
		return err
	}
	if err := validJSON("input", req.Input); err != nil {
		return err
	}
	if err := validText("dedup_key", req.DedupKey, MaxDedupKeyBytes); err != nil {
		return err
	}
	if req.MaxAttempts < 0 || req.MaxAttempts > MaxAttemptsLimit {
		return invalid("max_attempts", "must be between 1 and %d (0 means the default, %d)", MaxAttemptsLimit, DefaultMaxAttempts)
	}
	if err := checkTimeout(req.Timeout); err != nil {
		return err
	}
	if err := validPriority("priority", req.Priority); err != nil {
		return err
	}
	if err := validTrace(req); err != nil {
		return err
	}
	switch req.TTLFrom {
	case "", TTLFromSubmission, TTLFromFirstAttempt:
	default:
		return invalid("ttl_from", "%q is not one of submission, first_attempt", clip.Input(string(req.TTLFrom)))
	}
	switch req.OnParentExpired {
	case "", OnParentExpiredRun, OnParentExpiredCancel:
	default:
		return invalid("on_parent_expired", "%q is not one of run, cancel", clip.Input(req.OnParentExpired))
	}
	if req.OnParentExpired != "" && req.ParentID == "" {
		return invalid("on_parent_expired", "needs parent_id")
	}
	return nil
}

// availableAt returns when a submitted task can first run: now, or its
// schedule_at or delay.
func availableAt(req *SubmitRequest, now time.Time) (time.Time, error) {
	avail := now
	switch {
	case req.ScheduleAt != nil && req.Delay != nil:
		return time.Time{}, invalid("delay", "give schedule_at or delay, not both")
	case req.ScheduleAt != nil:
		if err := validTime("schedule_at", *req.ScheduleAt); err != nil {
			return time.Time{}, err
		}
		if s := norm(*req.ScheduleAt); s.After(now) {
			avail = s
		}
	case req.Delay != nil:
		if req.Delay.Std() < 0 {
			return time.Time{}, invalid("delay", "must not be negative")
		}
		avail = norm(now.Add(req.Delay.Std()))
		if err := validTime("delay", avail); err != nil {
			return time.Time{}, err
		}
	}

	return avail, nil
}

// requestTTL returns the time to live a request gives (ttl or
// ttl_seconds; nil for none or expires_at), and checks that it gives at
// most one of ttl, ttl_seconds and expires_at.
func requestTTL(req *SubmitRequest) (*time.Duration, error) {
	var ttl *time.Duration
	given := 0
	if req.TTL != nil {
		given++
		ttl = ptr(req.TTL.Std())
	}
	if req.TTLSeconds != nil {
		given++
		ttl = ptr(time.Duration(*req.TTLSeconds) * time.Second)
		if *req.TTLSeconds > int64(maxTime.Sub(minTime)/time.Second) {
			return nil, invalid("ttl_seconds", "is too large")
		}
	}
	if req.ExpiresAt != nil {
		given++
	}
	if given > 1 {
		field := "expires_at"
		if req.ExpiresAt == nil {
			field = "ttl_seconds"
		}
		return nil, invalid(field, "give one of ttl, ttl_seconds and expires_at")
	}
	if ttl != nil && *ttl < 0 {
		field := "ttl"
		if req.TTLSeconds != nil {
			field = "ttl_seconds"
		}
		return nil, invalid(field, "must not be negative (0 submits an already-expired task)")
	}
	if req.ExpiresAt != nil {
		if err := validTime("expires_at", *req.ExpiresAt); err != nil {
			return nil, err
		}
		if req.TTLFrom == TTLFromFirstAttempt {
			return nil, invalid("ttl_from", "first_attempt needs a ttl, not expires_at")
		}
	}

	return ttl, nil
}

// inheritParent checks a child's parent and gives t the parent's
// deadline when the request sets none; it reports whether the parent has
// expired (the child is then born expired).
func (q *Queue) inheritParent(ctx context.Context, req *SubmitRequest, t *Task, ttl *time.Duration) (parentExpired bool, err error) {
	if req.ParentID == "" {
		return false, nil
	}
	if err := ValidateID(req.ParentID); err != nil {
		return false, &ValidationError{Field: "parent_id", Message: err.(*ValidationError).Message, Err: ErrInvalidInput}
	}
	parent, _, err := q.load(ctx, t.Queue, req.ParentID)
	if errors.Is(err, ErrNotFound) {
		return false, invalid("parent_id", "no task %s in queue %s: a parent and its children are in one queue", req.ParentID, t.Queue)
	}
	if err != nil {
		return false, err
	}
	if ttl == nil && t.ExpiresAt == nil && parent.ExpiresAt != nil {
		t.ExpiresAt = ptr(*parent.ExpiresAt) // the parent's remaining TTL
	}
	return parent.Status == StatusExpired, nil
}

// applyDefaults fills in what the request leaves out, most specific
// first: request > parent > task type > queue > deployment. It returns
// the time to live and ttl_from that make the deadline.
func (q *Queue) applyDefaults(ctx context.Context, req *SubmitRequest, decl Settings, t *Task, ttl *time.Duration, now time.Time) (*time.Duration, TTLFrom, error) {
	ttlFrom := req.TTLFrom
	timeoutSet := req.Timeout != nil
	if q.opts.TypeDefaults != nil {
		d, ok, err := q.opts.TypeDefaults.TaskTypeDefaults(ctx, req.TaskType, now)
		if err != nil {
			return nil, "", fmt.Errorf("task type defaults: %w", err)
		}
		if ok {
			if ttl == nil && t.ExpiresAt == nil && req.ParentID == "" && d.TTL != nil {
				ttl = ptr(*d.TTL)
			}
			if ttlFrom == "" {
				ttlFrom = d.TTLFrom
			}
			if t.MaxAttempts == 0 {
				t.MaxAttempts = d.MaxAttempts
			}
			if req.Timeout == nil && d.Timeout > 0 {
				t.Timeout = Duration(d.Timeout)
				timeoutSet = true
			}
		}
	}
	// The queue's defaults, after the task type's.
	if ttl == nil && t.ExpiresAt == nil && req.ParentID == "" && decl.TTL != nil {
		ttl = ptr(decl.TTL.Std())
	}
	if ttlFrom == "" {
		ttlFrom = decl.TTLFrom
	}
	if t.MaxAttempts == 0 {
		t.MaxAttempts = decl.MaxAttempts
	}
	if t.Priority == 0 {
		t.Priority = decl.Priority
	}
	if !timeoutSet && decl.Timeout != nil {
		t.Timeout = *decl.Timeout
	}
	if ttl == nil && t.ExpiresAt == nil && req.ParentID == "" && q.opts.DefaultTTL > 0 {
		ttl = ptr(q.opts.DefaultTTL)
	}
	if t.MaxAttempts == 0 {
		t.MaxAttempts = DefaultMaxAttempts
	}
	if t.Priority == 0 {
		t.Priority = DefaultPriority
	}

	return ttl, ttlFrom, nil
}
