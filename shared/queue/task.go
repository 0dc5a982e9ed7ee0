package queue

import (
	"encoding/json"
	"time"

	"github.com/s3q/s3q/shared/wire"
)

// Status, TTLFrom and Duration are the wire's words (package wire),
// named here too for the core's code.
type (
	Status   = wire.Status
	TTLFrom  = wire.TTLFrom
	Duration = wire.Duration
)

// The statuses of a task.
const (
	StatusPending   = wire.StatusPending
	StatusRunning   = wire.StatusRunning
	StatusCompleted = wire.StatusCompleted
	StatusFailed    = wire.StatusFailed
	StatusCancelled = wire.StatusCancelled
	StatusExpired   = wire.StatusExpired
	StatusArchived  = wire.StatusArchived
)

// Statuses lists every status, in lifecycle order.
var Statuses = wire.Statuses

// When a task's time-to-live starts counting.
const (
	TTLFromSubmission   = wire.TTLFromSubmission
	TTLFromFirstAttempt = wire.TTLFromFirstAttempt
)

// ParseDuration parses "90s", "30m", "1h", "7d" (wire.ParseDuration).
func ParseDuration(s string) (time.Duration, error) { return wire.ParseDuration(s) }

// FormatDuration writes d compactly (wire.FormatDuration).
func FormatDuration(d time.Duration) string { return wire.FormatDuration(d) }

// Expiry reasons, as recorded in Task.ExpiryReason and in Task Expired events.
const (
	ReasonTTL           = "ttl"
	ReasonParentExpired = "parent_expired"
	ReasonManual        = "manual"
)

// What a running child does when its parent expires.
const (
	OnParentExpiredRun    = "run"    // the default: it runs on
	OnParentExpiredCancel = "cancel" // it gets cancel_requested
)

// Task is the JSON record stored at tasks/{id}.json, the source of truth
// for one task. Every change to it is one conditional write; bucket
// versioning keeps its history.
type Task struct {
	ID       string          `json:"id"`
	Queue    string          `json:"queue"`
	TaskType string          `json:"task_type"`
	Status   Status          `json:"status"`
	Input    json.RawMessage `json:"input,omitempty"`
	Output   json.RawMessage `json:"output,omitempty"`

	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
	AvailableAt time.Time `json:"available_at"` // earliest claim time

	// ExpiresAt is the deadline for starting; nil means never. It is always
	// present in JSON (null when unset) so every response carries it.
	ExpiresAt    *time.Time `json:"expires_at"`
	ExpiredAt    *time.Time `json:"expired_at,omitempty"`
	ExpiryReason string     `json:"expiry_reason,omitempty"` // ttl, parent_expired or manual
	TTL          *Duration  `json:"ttl,omitempty"`           // kept when ttl_from is first_attempt
	TTLFrom      TTLFrom    `json:"ttl_from,omitempty"`

	DedupKey        string `json:"dedup_key,omitempty"`
	ParentID        string `json:"parent_id,omitempty"`
	OnParentExpired string `json:"on_parent_expired,omitempty"`

	Attempt     int      `json:"attempt"`      // claims so far (a reschedule gives its claim back)
	MaxAttempts int      `json:"max_attempts"` // claims allowed before the task fails
	Timeout     Duration `json:"timeout"`      // lease length when a claim names none
	// Priority is 1 (highest) to 5 (lowest); 0 in a record written before
	// priorities, which is the default, 3 (priority.go).
	Priority int `json:"priority,omitempty"`
	// Traceparent and Tracestate are the W3C trace context the task was
	// submitted in (trace.go), handed to every attempt's handler.
	Traceparent string `json:"traceparent,omitempty"`
	Tracestate  string `json:"tracestate,omitempty"`

	LeaseToken     string     `json:"lease_token,omitempty"`
	LeaseExpiresAt *time.Time `json:"lease_expires_at,omitempty"`
	Heartbeats     int        `json:"heartbeats,omitempty"` // of the current attempt, at most MaxHeartbeats
	WorkerID       string     `json:"worker_id,omitempty"`
	StartedAt      *time.Time `json:"started_at,omitempty"` // first claim

	LastError       string     `json:"last_error,omitempty"`
	FailedAt        *time.Time `json:"failed_at,omitempty"`
	CompletedAt     *time.Time `json:"completed_at,omitempty"`
	CancelledAt     *time.Time `json:"cancelled_at,omitempty"`
	CancelRequested bool       `json:"cancel_requested,omitempty"`

	// ExpiryEventSentAt is when the sweep published this task's Task
	// Expired event; nil while an expired task's event is still owed.
	ExpiryEventSentAt *time.Time `json:"expiry_event_sent_at,omitempty"`
	// DeadLetterEventSentAt is when the sweep published the Task
	// Dead-Lettered event of the task's latest move to failed; nil while
	// a failed task's event is still owed.
	DeadLetterEventSentAt *time.Time `json:"dead_letter_event_sent_at,omitempty"`
	// ArtifactsExpireAt is when the sweep deletes the task's artifacts
	// (artifacts/{id}/), rounded up to the minute: the latest expiry of a
	// presigned PUT URL issued for it. Nil when none was ever issued.
	ArtifactsExpireAt *time.Time `json:"artifacts_expire_at,omitempty"`
	// ArtifactNames are the names of the artifacts upload URLs were
	// issued for, at most MaxArtifacts.
	ArtifactNames []string `json:"artifact_names,omitempty"`

	// RequestHash identifies the request that made the task when the
	// client gave its id (see SubmitRequest.ID): a retried submit with
	// that id replays the task when the hashes match and is a conflict
	// when they differ.
	RequestHash string `json:"request_hash,omitempty"`

	// EndedLeaseToken is the token of the lease whose holder last ended
	// it (complete, fail, reschedule, cancel acknowledgement), EndedBy
	// that operation and EndedRequest a hash of its request: the same
	// operation with the same request retried with the same token, its
	// first answer lost, answers with the task instead of not_running;
	// any other request with that token is a conflict. A claim clears
	// all three.
	EndedLeaseToken string `json:"ended_lease_token,omitempty"`
	EndedBy         string `json:"ended_by,omitempty"`
	EndedRequest    string `json:"ended_request,omitempty"`

	// IndexKey is the key of the task's one index marker (ready/,
	// deadline/, or sweep/{lease_exp}_lease_{id} for a running task the
	// sweep parked), empty when it has none. The marker is written before
	// the record names it and deleted after the record stops naming it, so
	// a marker the record does not name is stale and may be deleted.
	IndexKey string `json:"index_key,omitempty"`
	// SlotKey is the concurrency slot (slots/{queue}/{n}) a running task
	// of a queue with max_concurrency holds, SlotETag the slot's ETag when
	// its claim took it (the write that ends the lease frees the slot by
	// If-Match on it); both empty otherwise.
	SlotKey  string `json:"slot_key,omitempty"`
	SlotETag string `json:"slot_etag,omitempty"`

	// PurgedAt marks the record of a purged task (purge.go): the write
	// that set it is the purge's commit point, and from then on every
	// reader treats the record as gone (ErrNotFound) while the purge
	// deletes its side records and then the record itself.
	PurgedAt *time.Time `json:"purged_at,omitempty"`
}

// deadlinePassed reports whether the task's start deadline has passed at now.
func (t *Task) deadlinePassed(now time.Time) bool {
	return t.ExpiresAt != nil && !now.Before(*t.ExpiresAt)
}

// leaseValid reports whether the task holds a lease that is still valid at now.
func (t *Task) leaseValid(now time.Time) bool {
	return t.Status == StatusRunning && t.LeaseExpiresAt != nil && now.Before(*t.LeaseExpiresAt)
}

// Remaining returns the time left until the task's deadline at now, and
// false when the task has no deadline. It is negative once the deadline
// has passed.
func (t *Task) Remaining(now time.Time) (time.Duration, bool) {
	if t.ExpiresAt == nil {
		return 0, false
	}
	return t.ExpiresAt.Sub(now), true
}

// owesExpiryEvent reports whether an expired task's event is still owed.
func (t *Task) owesExpiryEvent() bool {
	return t.Status == StatusExpired && t.ExpiryEventSentAt == nil
}

// owesDeadLetterEvent reports whether a failed task's event is still owed.
func (t *Task) owesDeadLetterEvent() bool {
	return t.Status == StatusFailed && t.DeadLetterEventSentAt == nil
}

// ArtifactURLExpiry returns when a presigned artifact URL issued at now
// for the task expires: min(now + ttl, expires_at).
func (t *Task) ArtifactURLExpiry(ttl time.Duration, now time.Time) time.Time {
	until := now.Add(ttl)
	if t.ExpiresAt != nil && t.ExpiresAt.Before(until) {
		until = *t.ExpiresAt
	}
	return until
}

// ArtifactLifetime returns when the task's temporary artifacts must be
// gone at the latest: min(created_at + ttl, expires_at), fixed at creation
// (seed 003's DeadlineGuard).
func (t *Task) ArtifactLifetime(ttl time.Duration) time.Time {
	until := t.CreatedAt.Add(ttl)
	if t.ExpiresAt != nil && t.ExpiresAt.Before(until) {
		until = *t.ExpiresAt
	}
	return until
}

type Lease = wire.Lease

// Claimed is one task handed to a worker, with its lease.
type Claimed struct {
	Task  Task  `json:"task"`
	Lease Lease `json:"lease"`
}

func ptr[T any](v T) *T { return &v }

// clone returns a deep enough copy of t to mutate without touching t.
func (t Task) clone() Task {
	c := t
	if t.Input != nil {
		c.Input = append(json.RawMessage(nil), t.Input...)
	}
	if t.Output != nil {
		c.Output = append(json.RawMessage(nil), t.Output...)
	}
	return c
}
