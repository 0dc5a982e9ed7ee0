package queue

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// build makes the new task record of a parsed request, without
// writing: the record, what it inherits from its parent
// (inheritParent), the defaults of its task type, queue and deployment
// (applyDefaults), and its deadline (setDeadline).
func (q *Queue) build(ctx context.Context, s *submission, now time.Time) (Task, error) {
	req := &s.req
	id := req.ID
	if id == "" {
		id = q.opts.NewID(now)
	}
	t := Task{
		ID:              id,
		Queue:           req.Queue,
		TaskType:        req.TaskType,
		Status:          StatusPending,
		Input:           req.Input,
		CreatedAt:       now,
		UpdatedAt:       now,
		AvailableAt:     s.avail,
		ExpiresAt:       s.expiresAt,
		DedupKey:        req.DedupKey,
		ParentID:        req.ParentID,
		OnParentExpired: req.OnParentExpired,
		MaxAttempts:     req.MaxAttempts,
		Timeout:         Duration(DefaultTimeout),
		Priority:        req.Priority,
		Traceparent:     req.Traceparent,
		Tracestate:      req.Tracestate,
		RequestHash:     s.hash,
	}
	if req.Timeout != nil {
		t.Timeout = *req.Timeout
	}

	parentExpired, err := q.inheritParent(ctx, s, &t)
	if err != nil {
		return Task{}, err
	}
	decl, err := q.decls.Settings(ctx, req.Queue, LookupRead, now)
	if err != nil {
		return Task{}, err
	}
	ttl, ttlFrom, err := q.applyDefaults(ctx, s, decl, &t, now)
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

// inheritParent checks that a child's parent exists in its queue and
// gives t the parent's deadline when the request sets none; it reports
// whether the parent has expired (the child is then born expired).
func (q *Queue) inheritParent(ctx context.Context, s *submission, t *Task) (parentExpired bool, err error) {
	if t.ParentID == "" {
		return false, nil
	}
	parent, _, err := q.load(ctx, t.Queue, t.ParentID)
	if errors.Is(err, ErrNotFound) {
		return false, invalid("parent_id", "no task %s in queue %s: a parent and its children are in one queue", t.ParentID, t.Queue)
	}
	if err != nil {
		return false, err
	}
	if !s.ownDeadline() && parent.ExpiresAt != nil {
		t.ExpiresAt = ptr(*parent.ExpiresAt) // the parent's remaining TTL
	}
	return parent.Status == StatusExpired, nil
}

// applyDefaults fills in what the request leaves out, most specific
// first: request > parent > task type > queue > deployment. It returns
// the time to live and ttl_from that make the deadline. A deadline
// default applies only to a task with none of its own and no parent.
func (q *Queue) applyDefaults(ctx context.Context, s *submission, decl Settings, t *Task, now time.Time) (*time.Duration, TTLFrom, error) {
	req := &s.req
	ttl, ttlFrom := s.ttl, req.TTLFrom
	takesTTL := func() bool { return ttl == nil && t.ExpiresAt == nil && t.ParentID == "" }
	timeoutSet := req.Timeout != nil
	if q.opts.TypeDefaults != nil {
		d, ok, err := q.opts.TypeDefaults.TaskTypeDefaults(ctx, req.TaskType, now)
		if err != nil {
			return nil, "", fmt.Errorf("task type defaults: %w", err)
		}
		if ok {
			if takesTTL() && d.TTL != nil {
				ttl = ptr(*d.TTL)
			}
			if ttlFrom == "" {
				ttlFrom = d.TTLFrom
			}
			if t.MaxAttempts == 0 {
				t.MaxAttempts = d.MaxAttempts
			}
			if !timeoutSet && d.Timeout > 0 {
				t.Timeout = Duration(d.Timeout)
				timeoutSet = true
			}
		}
	}
	// The queue's defaults, after the task type's.
	if takesTTL() && decl.TTL != nil {
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
	if takesTTL() && q.opts.DefaultTTL > 0 {
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
