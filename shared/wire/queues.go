package wire

import "time"

// Target is a queue's push target: exactly one of Lambda and URL. The
// dispatch function (package dispatch) delivers the queue's tasks to it.
type Target struct {
	// Lambda is a function name or ARN (optionally with a version or alias).
	Lambda string `json:"lambda,omitempty"`
	// URL is an https URL (http only where the deployment allows insecure
	// targets, as s3q dev does).
	URL string `json:"url,omitempty"`
	// Secret names the SSM parameter holding the HMAC secret that signs
	// deliveries to URL. Required with URL, refused with Lambda.
	Secret string `json:"secret,omitempty"`
}

// Queue is a declared queue as the API shows it: the declaration
// (q/{name}/queue.json) with its counts when asked for.
type Queue struct {
	// Name is the queue's name ; it is the key's.
	Name string `json:"name"`
	// TTL is the queue's default time to live. Defaults to none.
	TTL *Duration `json:"ttl,omitempty"`
	// TTLFrom is the queue's default ttl_from. Defaults to none (submission).
	TTLFrom TTLFrom `json:"ttl_from,omitempty"`
	// MaxAttempts is the queue's default max_attempts. Defaults to none (3).
	MaxAttempts int `json:"max_attempts,omitempty"`
	// Timeout is the queue's default lease length. Defaults to none (5m).
	Timeout *Duration `json:"timeout,omitempty"`
	// Shards spreads the queue's claim-index markers over this many key
	// ranges (1 to 16). Fixed at the queue's first declaration, kept
	// through a delete. Defaults to the deployment's shards (Options.Shards).
	Shards int `json:"shards,omitempty"`
	// MaxConcurrency is the most tasks of the queue running at once (each
	// holds one of that many slots, q/{queue}/slots/{n}); every claim, pull
	// or push, must take a slot. Defaults to 0: no limit and no slots.
	MaxConcurrency int `json:"max_concurrency,omitempty"`
	// MaxSchedules is the most schedules that fire into the queue (409
	// too_many_schedules past it). Defaults to 0: 100.
	MaxSchedules int `json:"max_schedules,omitempty"`
	// Priority is the queue's default priority of a task, 1 (highest) to
	// 5 (lowest). Defaults to none (3).
	Priority int `json:"priority,omitempty"`
	// MaxPerSecond is the most tasks of the queue started a second, by
	// every claim and push delivery together (0.001 to 1000; fractions
	// allowed). Defaults to none: no limit.
	MaxPerSecond *float64 `json:"max_per_second,omitempty"`
	// Burst is how many tasks may start at once after a quiet spell (1 to
	// 1000), with MaxPerSecond. Defaults to one second's worth, at least 1.
	Burst *int `json:"burst,omitempty"`
	// Target, when set, makes the queue a push queue.
	Target *Target `json:"target,omitempty"`
	// AutoDeclared is true for a queue declared by a submit (auto_declare).
	AutoDeclared bool `json:"auto_declared,omitempty"`
	// Paused is true while the queue is paused (Registry.Pause): claims,
	// pull or push, take nothing from it; submits and the sweep go on.
	// PausedAt is when it was paused. Neither is a setting: a
	// declaration's update keeps them.
	Paused    bool       `json:"paused,omitempty"`
	PausedAt  *time.Time `json:"paused_at,omitempty"`
	CreatedAt time.Time  `json:"created_at"`
	UpdatedAt time.Time  `json:"updated_at"`
	// Counts are the queue's tasks by status, on GET /queues/{queue} and
	// GET /queues (unless counts=false).
	Counts *QueueCounts `json:"counts,omitempty"`
}

// QueueRequest is the body of PUT /queues/{queue}: the settable fields of
// a declaration (its name is the path's).
type QueueRequest struct {
	TTL            *Duration `json:"ttl,omitempty"`
	TTLFrom        TTLFrom   `json:"ttl_from,omitempty"`
	MaxAttempts    int       `json:"max_attempts,omitempty"`
	Timeout        *Duration `json:"timeout,omitempty"`
	Shards         int       `json:"shards,omitempty"`
	MaxConcurrency int       `json:"max_concurrency,omitempty"`
	MaxSchedules   int       `json:"max_schedules,omitempty"`
	Priority       int       `json:"priority,omitempty"`
	MaxPerSecond   *float64  `json:"max_per_second,omitempty"`
	Burst          *int      `json:"burst,omitempty"`
	Target         *Target   `json:"target,omitempty"`
}

// QueueReply is {"queue": ...}.
type QueueReply struct {
	Queue Queue `json:"queue"`
}

// QueueList is one page of declared queues, by name.
type QueueList struct {
	Queues     []Queue `json:"queues"`
	NextCursor string  `json:"next_cursor,omitempty"`
}
