package queue

import (
	"time"

	"github.com/s3q/s3q/shared/internal/clip"
)

// submission is a submit request parsed once: every field checked, its
// queue resolved, and what it says about time read into values. Only
// parseSubmit makes one, so build makes the task record from it without
// checking a field again; what build still refuses needs a read (the
// parent exists, the queue is declared) or the defaults (the deadline
// they give fits the key format).
type submission struct {
	// req is the request as given, its queue resolved (the view's, else
	// DefaultQueue).
	req SubmitRequest
	// avail is when the task can first run: now, schedule_at or delay.
	avail time.Time
	// ttl is the time to live the request gives (ttl or ttl_seconds);
	// nil when it gives none, or gives expires_at.
	ttl *time.Duration
	// expiresAt is the request's expires_at, normalised; nil when absent.
	expiresAt *time.Time
	// fire is set for a schedule's fire (SubmitFire): a task that has
	// its id is its own whatever request made it.
	fire bool
	// hash identifies the request for a replay (requestHash): set for a
	// request with an id, unless it is a fire's.
	hash string
}

// ownDeadline reports whether the request gives the task a deadline of
// its own (ttl, ttl_seconds or expires_at).
func (s *submission) ownDeadline() bool { return s.ttl != nil || s.expiresAt != nil }

// parseSubmit checks a submit request in one pass over its fields, in
// a fixed order, and returns the first bad one as a *ValidationError
// naming it (ErrTooLarge for an input or dedup key over its limit). It
// reads nothing from the store.
func (q *Queue) parseSubmit(req SubmitRequest, fire bool, now time.Time) (submission, error) {
	var err error
	if req.Queue, err = q.scoped("queue", req.Queue); err != nil {
		return submission{}, err
	}
	if req.Queue == "" {
		req.Queue = DefaultQueue
	}
	if err := ValidateQueueName(req.Queue); err != nil {
		return submission{}, err
	}
	if err := ValidateTaskType("task_type", req.TaskType); err != nil {
		return submission{}, err
	}
	if err := validJSON("input", req.Input); err != nil {
		return submission{}, err
	}
	if err := validText("dedup_key", req.DedupKey, MaxDedupKeyBytes); err != nil {
		return submission{}, err
	}
	if req.MaxAttempts < 0 || req.MaxAttempts > MaxAttemptsLimit {
		return submission{}, invalid("max_attempts", "must be between 1 and %d (0 means the default, %d)", MaxAttemptsLimit, DefaultMaxAttempts)
	}
	if err := checkTimeout(req.Timeout); err != nil {
		return submission{}, err
	}
	if err := validPriority("priority", req.Priority); err != nil {
		return submission{}, err
	}
	if err := validTrace(&req); err != nil {
		return submission{}, err
	}
	switch req.TTLFrom {
	case "", TTLFromSubmission, TTLFromFirstAttempt:
	default:
		return submission{}, invalid("ttl_from", "%q is not one of submission, first_attempt", clip.Input(string(req.TTLFrom)))
	}
	switch req.OnParentExpired {
	case "", OnParentExpiredRun, OnParentExpiredCancel:
	default:
		return submission{}, invalid("on_parent_expired", "%q is not one of run, cancel", clip.Input(req.OnParentExpired))
	}
	if req.OnParentExpired != "" && req.ParentID == "" {
		return submission{}, invalid("on_parent_expired", "needs parent_id")
	}
	s := submission{req: req, fire: fire}
	if s.avail, err = availableAt(&req, now); err != nil {
		return submission{}, err
	}
	if s.ttl, err = requestTTL(&req); err != nil {
		return submission{}, err
	}
	if req.ExpiresAt != nil {
		s.expiresAt = ptr(norm(*req.ExpiresAt))
	}
	if req.ID != "" {
		if err := ValidateID(req.ID); err != nil {
			return submission{}, err
		}
		if !fire {
			s.hash = requestHash(req)
		}
	}
	if req.ParentID != "" {
		if err := ValidateID(req.ParentID); err != nil {
			return submission{}, &ValidationError{Field: "parent_id", Message: err.(*ValidationError).Message, Err: ErrInvalidInput}
		}
	}
	return s, nil
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
