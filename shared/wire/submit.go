package wire

import (
	"encoding/json"
	"time"
)

// SubmitRequest is the body of a submit (POST /queues/{queue}/tasks, and
// each task of a batch): what a client sends and what the server decodes.
// It is also the core's request: queue.SubmitRequest is this type, so the
// two cannot drift apart.
type SubmitRequest struct {
	// ID, when set, is the id the task must have instead of a fresh one:
	// a lowercase UUIDv7 the client made (NewID, or DerivedID). It makes
	// the submit idempotent: the record is created only if no task has
	// the id, so a retried submit never makes a second task. A retry
	// whose request matches the one that made the task returns it with
	// Replayed set, whatever its status; one that differs is a
	// *ConflictError naming "id". Without an id a retried submit may
	// make a second task (at least once, as SQS).
	ID string `json:"id"`

	// TaskType names the handler. Required: 1-128 of A-Z a-z 0-9 _ . : -.
	TaskType string `json:"task_type"`
	// Queue is the named queue. Defaults to "default".
	Queue string `json:"queue,omitempty"`
	// Input is the task's JSON input, at most 256 KiB.
	Input json.RawMessage `json:"input,omitempty"`

	// TTL is the time to live ("90s", "30m", "1h", "7d"); 0 submits an
	// already-expired task. At most one of TTL, TTLSeconds and ExpiresAt.
	// Defaults, for a task with no parent, to the task type's default,
	// then the queue's (its declaration's ttl), then the deployment's
	// (queue.Options.DefaultTTL), then none (never expires); a child with
	// none of its own keeps its parent's deadline.
	TTL *Duration `json:"ttl,omitempty"`
	// TTLSeconds is TTL in seconds.
	TTLSeconds *int64 `json:"ttl_seconds,omitempty"`
	// ExpiresAt is an absolute deadline for starting. An ExpiresAt before
	// ScheduleAt is allowed: the task will expire without running.
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	// TTLFrom is "submission" (default) or "first_attempt".
	TTLFrom TTLFrom `json:"ttl_from,omitempty"`

	// ScheduleAt is the earliest claim time. At most one of ScheduleAt and
	// Delay. Defaults to now.
	ScheduleAt *time.Time `json:"schedule_at,omitempty"`
	// Delay is ScheduleAt relative to now; no maximum.
	Delay *Duration `json:"delay,omitempty"`

	// DedupKey makes the submit idempotent: while a live (pending or
	// running) task in the same queue holds the key, submitting it again
	// returns that task with Deduplicated set.
	DedupKey string `json:"dedup_key,omitempty"`
	// MaxAttempts is how many claims the task gets. 0 means the default:
	// the task type's, then the queue's (its declaration's max_attempts),
	// then 3.
	MaxAttempts int `json:"max_attempts,omitempty"`
	// Timeout is the lease length of a claim that names none. Defaults to
	// the task type's, then the queue's (its declaration's timeout), then
	// 5m.
	Timeout *Duration `json:"timeout,omitempty"`

	// Priority is 1 (highest) to 5 (lowest): among due tasks a claim
	// takes the highest first. Defaults to the queue's default, then 3.
	Priority int `json:"priority,omitempty"`
	// Traceparent and Tracestate are a W3C trace context (the HTTP API
	// takes them from the headers of those names too): kept on the task
	// and handed to its handler. Not part of the request's identity.
	// Default none.
	Traceparent string `json:"traceparent,omitempty"`
	Tracestate  string `json:"tracestate,omitempty"`

	// ParentID makes the task a child: unless it gives its own deadline it
	// inherits the parent's expires_at.
	ParentID string `json:"parent_id,omitempty"`
	// OnParentExpired is "run" (default) or "cancel": what happens to this
	// task, if running, when its parent expires.
	OnParentExpired string `json:"on_parent_expired,omitempty"`
}
