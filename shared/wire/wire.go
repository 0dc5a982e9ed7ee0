// Package wire holds the plain structs s3q sends to the outside about a
// task: what the HTTP API answers and what a push target receives. Each
// is a type of its own, copied field by field from the stored record
// (queue.Task), never the record itself: a field added to the record,
// such as a lease token or an index key, reaches the wire only when it is
// added here too, on purpose.
package wire

import (
	"encoding/json"
	"time"
)

// Task is a task as the API shows it and a push target receives it: the
// stored record without its lease token, the hashes and tokens that
// recognise a retried request, and the keys of its side records (index
// marker, concurrency slot). The lease of a claim travels apart, as
// queue.Lease. Field names, order and omission rules are the record's, so
// that the JSON is the record's JSON minus those fields.
type Task struct {
	ID       string          `json:"id"`
	Queue    string          `json:"queue"`
	TaskType string          `json:"task_type"`
	Status   Status          `json:"status"`
	Input    json.RawMessage `json:"input,omitempty"`
	Output   json.RawMessage `json:"output,omitempty"`

	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
	AvailableAt time.Time `json:"available_at"`

	// ExpiresAt is always present (null when the task has no deadline).
	ExpiresAt    *time.Time `json:"expires_at"`
	ExpiredAt    *time.Time `json:"expired_at,omitempty"`
	ExpiryReason string     `json:"expiry_reason,omitempty"`
	TTL          *Duration  `json:"ttl,omitempty"`
	TTLFrom      TTLFrom    `json:"ttl_from,omitempty"`

	DedupKey        string `json:"dedup_key,omitempty"`
	ParentID        string `json:"parent_id,omitempty"`
	OnParentExpired string `json:"on_parent_expired,omitempty"`

	Attempt     int      `json:"attempt"`
	MaxAttempts int      `json:"max_attempts"`
	Timeout     Duration `json:"timeout"`
	// Priority is 1 (highest) to 5 (lowest); absent in a record written
	// before priorities, which has the default, 3.
	Priority int `json:"priority,omitempty"`
	// Traceparent and Tracestate are the W3C trace context the task was
	// submitted in.
	Traceparent string `json:"traceparent,omitempty"`
	Tracestate  string `json:"tracestate,omitempty"`

	LeaseExpiresAt *time.Time `json:"lease_expires_at,omitempty"`
	Heartbeats     int        `json:"heartbeats,omitempty"`
	WorkerID       string     `json:"worker_id,omitempty"`
	StartedAt      *time.Time `json:"started_at,omitempty"`

	LastError       string     `json:"last_error,omitempty"`
	FailedAt        *time.Time `json:"failed_at,omitempty"`
	CompletedAt     *time.Time `json:"completed_at,omitempty"`
	CancelledAt     *time.Time `json:"cancelled_at,omitempty"`
	CancelRequested bool       `json:"cancel_requested,omitempty"`

	ExpiryEventSentAt     *time.Time `json:"expiry_event_sent_at,omitempty"`
	DeadLetterEventSentAt *time.Time `json:"dead_letter_event_sent_at,omitempty"`
	ArtifactsExpireAt     *time.Time `json:"artifacts_expire_at,omitempty"`
	ArtifactNames         []string   `json:"artifact_names,omitempty"`

	// EndedBy names the lease operation that last ended a lease
	// (complete, fail, reschedule, cancel); its token and request hash
	// stay in the record.
	EndedBy string `json:"ended_by,omitempty"`

	PurgedAt *time.Time `json:"purged_at,omitempty"`
}
