package queue

import "github.com/s3q/s3q/shared/wire"

// Wire copies what the wire shows of the record t: wire.Task.
func (t Task) Wire() wire.Task {
	return wire.Task{
		ID: t.ID, Queue: t.Queue, TaskType: t.TaskType, Status: t.Status,
		Input: t.Input, Output: t.Output,
		CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt, AvailableAt: t.AvailableAt,
		ExpiresAt: t.ExpiresAt, ExpiredAt: t.ExpiredAt, ExpiryReason: t.ExpiryReason,
		TTL: t.TTL, TTLFrom: t.TTLFrom,
		DedupKey: t.DedupKey, ParentID: t.ParentID, OnParentExpired: t.OnParentExpired,
		Attempt: t.Attempt, MaxAttempts: t.MaxAttempts, Timeout: t.Timeout, Priority: t.Priority, Traceparent: t.Traceparent, Tracestate: t.Tracestate,
		LeaseExpiresAt: t.LeaseExpiresAt, Heartbeats: t.Heartbeats, WorkerID: t.WorkerID, StartedAt: t.StartedAt,
		LastError: t.LastError, FailedAt: t.FailedAt, CompletedAt: t.CompletedAt,
		CancelledAt: t.CancelledAt, CancelRequested: t.CancelRequested,
		ExpiryEventSentAt: t.ExpiryEventSentAt, DeadLetterEventSentAt: t.DeadLetterEventSentAt,
		ArtifactsExpireAt: t.ArtifactsExpireAt, ArtifactNames: t.ArtifactNames,
		EndedBy:  t.EndedBy,
		PurgedAt: t.PurgedAt,
	}
}
