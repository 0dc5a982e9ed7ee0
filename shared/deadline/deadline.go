// Package deadline is seed 003's DeadlineGuard for s3q: one fixed
// expires_at per task is the single source of truth for how long a worker
// may keep going, for how long a synchronous wait may last, and for how
// long the task's temporary artifacts live. Every helper takes now.
//
// A running task is never interrupted by its deadline:
// these helpers let a handler decide to stop on its own. The worker
// (package worker) offers them to its handlers at its clock:
// worker.Task.Remaining and worker.Task.ShouldAbort are Remaining and
// ShouldAbort, so a pull handler, a push handler (worker.LambdaHandler)
// and any other reader of a task judge by one rule.
package deadline

import (
	"time"

	"github.com/s3q/s3q/shared/queue"
)

// Remaining returns the time left until the task's deadline at now, and
// false when it has none. It is negative once the deadline has passed.
func Remaining(t *queue.Task, now time.Time) (time.Duration, bool) {
	return RemainingUntil(t.ExpiresAt, now)
}

// RemainingUntil is Remaining for a task whose deadline is expiresAt (nil:
// none), as a client sees it (wire.Task).
func RemainingUntil(expiresAt *time.Time, now time.Time) (time.Duration, bool) {
	if expiresAt == nil {
		return 0, false
	}
	return expiresAt.Sub(now), true
}

// ShouldAbort reports whether a handler working on t should stop at now:
// when a cancel was requested, or when at most margin is left until its
// deadline (so at its deadline with margin 0, the instant a claim would no
// longer start it). A task without a deadline is aborted only on a cancel
// request.
func ShouldAbort(t *queue.Task, now time.Time, margin time.Duration) bool {
	return ShouldAbortUntil(t.ExpiresAt, t.CancelRequested, now, margin)
}

// ShouldAbortUntil is ShouldAbort for a task whose deadline is expiresAt
// (nil: none) and whose cancel_requested is cancelRequested, as a client
// sees it (wire.Task).
func ShouldAbortUntil(expiresAt *time.Time, cancelRequested bool, now time.Time, margin time.Duration) bool {
	if cancelRequested {
		return true
	}
	left, ok := RemainingUntil(expiresAt, now)
	return ok && left <= margin
}

// ArtifactLifetime returns when the task's temporary artifacts must be
// gone at the latest: min(created_at + artifactTTL, expires_at).
func ArtifactLifetime(t *queue.Task, artifactTTL time.Duration) time.Time {
	return t.ArtifactLifetime(artifactTTL)
}

// URLExpiry returns when a presigned artifact URL issued at now expires:
// min(now + artifactTTL, expires_at).
func URLExpiry(t *queue.Task, artifactTTL time.Duration, now time.Time) time.Time {
	return t.ArtifactURLExpiry(artifactTTL, now)
}

// WaitUntil returns how long a synchronous wait for the task's outcome
// may last at now: at most limit, and no later than its deadline (a task
// whose deadline passes during the wait answers deadline_exceeded). ok is
// false when the deadline has already passed.
func WaitUntil(t *queue.Task, now time.Time, limit time.Duration) (until time.Time, deadlineFirst bool, ok bool) {
	until = now.Add(limit)
	if t.ExpiresAt != nil && !t.ExpiresAt.After(until) {
		return *t.ExpiresAt, true, t.ExpiresAt.After(now)
	}
	return until, false, true
}

// Guard bundles the settings of the helpers, for a handler that calls
// them often.
type Guard struct {
	// ArtifactTTL is the lifetime of a task's temporary artifacts.
	ArtifactTTL time.Duration
	// AbortMargin is how much of a task's deadline must be left for a
	// handler to keep going.
	AbortMargin time.Duration
}

// ShouldAbort is ShouldAbort with the guard's margin.
func (g Guard) ShouldAbort(t *queue.Task, now time.Time) bool {
	return ShouldAbort(t, now, g.AbortMargin)
}

// ArtifactLifetime is ArtifactLifetime with the guard's artifact TTL.
func (g Guard) ArtifactLifetime(t *queue.Task) time.Time {
	return ArtifactLifetime(t, g.ArtifactTTL)
}

// URLExpiry is URLExpiry with the guard's artifact TTL.
func (g Guard) URLExpiry(t *queue.Task, now time.Time) time.Time {
	return URLExpiry(t, g.ArtifactTTL, now)
}
