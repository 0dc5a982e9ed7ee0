package wire

// Status is the state of a task. See the state machine in
// docs/architecture.md.
type Status string

// The statuses of a task.
const (
	StatusPending   Status = "pending"   // waiting to be claimed (maybe not yet available)
	StatusRunning   Status = "running"   // claimed, under a lease
	StatusCompleted Status = "completed" // finished with an output
	StatusFailed    Status = "failed"    // the dead-letter state: attempts spent or a permanent error
	StatusCancelled Status = "cancelled" // cancelled before it ran, or acknowledged by its worker
	StatusExpired   Status = "expired"   // its deadline passed before it started; terminal
	StatusArchived  Status = "archived"  // a terminal task moved out of the hot listing
)

// Statuses lists every status, in lifecycle order.
var Statuses = []Status{StatusPending, StatusRunning, StatusCompleted, StatusFailed, StatusCancelled, StatusExpired, StatusArchived}

// Valid reports whether s is a known status.
func (s Status) Valid() bool {
	for _, v := range Statuses {
		if s == v {
			return true
		}
	}
	return false
}

// Terminal reports whether a task in status s will never run again on its
// own (failed and cancelled tasks can still be retried by hand).
func (s Status) Terminal() bool {
	switch s {
	case StatusCompleted, StatusFailed, StatusCancelled, StatusExpired, StatusArchived:
		return true
	}
	return false
}

// TTLFrom says when a task's time-to-live starts counting.
type TTLFrom string

const (
	// TTLFromSubmission starts the clock at creation: expires_at is fixed
	// then and never moved by retries. The default.
	TTLFromSubmission TTLFrom = "submission"
	// TTLFromFirstAttempt starts the clock at the first claim: time spent
	// waiting in the queue does not count. expires_at is set by that claim.
	TTLFromFirstAttempt TTLFrom = "first_attempt"
)
