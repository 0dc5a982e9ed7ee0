package queue

import (
	"context"
	"encoding/json"
	"time"
)

// Task events, as published to an EventBridge bus.
const (
	// EventSource is the source of every event s3q publishes.
	EventSource = "s3q"
	// DetailTypeTaskExpired is published once a task has expired.
	DetailTypeTaskExpired = "Task Expired"
	// DetailTypeTaskDeadLettered is published once a task has landed in
	// failed, the dead-letter state.
	DetailTypeTaskDeadLettered = "Task Dead-Lettered"
)

// Event is one task event to publish. Publishing is at-least-once: the
// sweep publishes what a record owes and notes it on the record only
// after the publisher reports it delivered, so a consumer may see an
// event twice (deduplicate on detail-type + task_id).
type Event struct {
	// DetailType is DetailTypeTaskExpired or DetailTypeTaskDeadLettered.
	DetailType string `json:"detail_type"`
	// TaskID is the task the event is about.
	TaskID string `json:"task_id"`
	// Time is when it happened (expired_at, failed_at).
	Time time.Time `json:"time"`
	// Detail is the JSON detail: an ExpiredDetail or a DeadLetteredDetail.
	Detail json.RawMessage `json:"detail"`
}

// EventPublisher delivers events (shared/events has the EventBridge, log
// and in-memory ones).
type EventPublisher interface {
	// Publish delivers events and returns one error per event, in order,
	// nil for each delivered one (a nil slice means all were delivered),
	// or a non-nil error when none can be assumed delivered. An event
	// reported undelivered is published again by a later sweep.
	Publish(ctx context.Context, events []Event) ([]error, error)
}

// EventTask is the part of every event's detail that names its task.
// Absent dedup_key, parent_id and expires_at are null.
type EventTask struct {
	TaskID    string     `json:"task_id"`
	Queue     string     `json:"queue"`
	TaskType  string     `json:"task_type"`
	DedupKey  *string    `json:"dedup_key"`
	ParentID  *string    `json:"parent_id"`
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt *time.Time `json:"expires_at"`
}

func eventTask(t *Task) EventTask {
	return EventTask{
		TaskID: t.ID, Queue: t.Queue, TaskType: t.TaskType,
		DedupKey: nullable(t.DedupKey), ParentID: nullable(t.ParentID),
		CreatedAt: t.CreatedAt, ExpiresAt: t.ExpiresAt,
	}
}

// ExpiredDetail is the detail of a Task Expired event, exactly the fields
// docs/architecture.md lists.
type ExpiredDetail struct {
	EventTask
	ExpiredAt time.Time `json:"expired_at"`
	// AgeSeconds is expired_at - created_at, in seconds.
	AgeSeconds float64 `json:"age_seconds"`
	// Reason is ttl, parent_expired or manual.
	Reason string `json:"reason"`
}

// DeadLetteredDetail is the detail of a Task Dead-Lettered event.
type DeadLetteredDetail struct {
	EventTask
	FailedAt    time.Time `json:"failed_at"`
	Attempt     int       `json:"attempt"`
	MaxAttempts int       `json:"max_attempts"`
	LastError   string    `json:"last_error"`
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// ExpiredEvent returns the Task Expired event of an expired task.
func ExpiredEvent(t *Task) Event {
	at := t.UpdatedAt
	if t.ExpiredAt != nil {
		at = *t.ExpiredAt
	}
	d := ExpiredDetail{
		EventTask: eventTask(t), ExpiredAt: at,
		AgeSeconds: at.Sub(t.CreatedAt).Seconds(),
		Reason:     t.ExpiryReason,
	}
	b, _ := json.Marshal(d)
	return Event{DetailType: DetailTypeTaskExpired, TaskID: t.ID, Time: at, Detail: b}
}

// DeadLetteredEvent returns the Task Dead-Lettered event of a failed task.
func DeadLetteredEvent(t *Task) Event {
	at := t.UpdatedAt
	if t.FailedAt != nil {
		at = *t.FailedAt
	}
	d := DeadLetteredDetail{
		EventTask: eventTask(t), FailedAt: at,
		Attempt: t.Attempt, MaxAttempts: t.MaxAttempts, LastError: t.LastError,
	}
	b, _ := json.Marshal(d)
	return Event{DetailType: DetailTypeTaskDeadLettered, TaskID: t.ID, Time: at, Detail: b}
}
