package s3qstack

// The functions of the stack, one per folder under functions/, each with the
// S3 actions it makes under each key prefix (its IAM policy is built from
// this table and nothing else) and its trigger: HTTP routes or an
// EventBridge schedule.
//
// The access table is what the handlers do, not what they might: the main
// module's shared/lambdafn TestS3AccessFixture invokes every handler with
// every sample event over a bucket holding every kind of state, records
// each store request as the S3 action it needs, and writes
// testdata/s3_access.json; this package's tests fail unless the roles
// grant exactly that, no action or prefix more or less. When the core
// starts touching a new prefix, rerun that test with -update and add the
// grant here: until then the function gets AccessDenied.

// The S3 actions of an access table.
const (
	GetObject          = "s3:GetObject"          // GET and HEAD
	PutObject          = "s3:PutObject"          // every PUT, conditional or not
	PutObjectTagging   = "s3:PutObjectTagging"   // a PUT carrying x-amz-tagging (the terminal tag)
	DeleteObject       = "s3:DeleteObject"       // an unconditional DELETE
	GetObjectVersion   = "s3:GetObjectVersion"   // one old version (history)
	ListBucket         = "s3:ListBucket"         // a LIST under the prefix
	ListBucketVersions = "s3:ListBucketVersions" // a LIST of versions under the prefix
)

// bucketActions are the actions granted on the bucket (with an s3:prefix
// condition) rather than on object keys.
var bucketActions = map[string]bool{ListBucket: true, ListBucketVersions: true}

// Access is what a function does under one key prefix (relative to the
// deployment's S3Q_PREFIX).
type Access struct {
	// Prefix is a key prefix ending in "/", or one exact key.
	Prefix string
	// Actions are the S3 actions the function makes there: object
	// actions are granted on <bucket>/<Prefix>*, ListBucket and
	// ListBucketVersions on the bucket for s3:prefix <Prefix>*.
	Actions []string
}

// Function describes one Lambda function of the stack.
type Function struct {
	// Name is the folder under functions/ and the zip under the asset dir.
	Name string
	// Access lists the prefixes the function touches. Every prefix is also
	// listable (ListBucket with an s3:prefix condition).
	Access []Access
	// Routes are the HTTP API routes the function serves, as "METHOD /path".
	Routes []string
	// Timer marks a function fired by an EventBridge rule every tick.
	Timer bool
	// PutEvents lets the function publish to the stack's event bus and
	// passes the bus name as S3Q_EVENT_BUS.
	PutEvents bool
}

// Key prefixes of DESIGN.md §7 as shared/queue and shared/schedule use them
// (keys.go there). DESIGN's leases/ and the queue list live in sweep/, the
// sweep's one time-sorted index: the queue registry (written by the first
// submit of a queue), running tasks parked until their lease ends, the
// outbox of transitions that owe an event (expiry, dead-letter) and the
// artifact deletion times. children/ is a parent's child index. Which
// function does what in each is the access table below.
const (
	pTasks     = "tasks/"
	pReady     = "ready/"
	pDeadline  = "deadline/"
	pDedup     = "dedup/"
	pSweep     = "sweep/"
	pChildren  = "children/"
	pSchedules = "schedules/"
	pDue       = "due/"
	pArtifacts = "artifacts/"
	kTaskTypes = "config/task_types.json"
)

// TerminalTagKey and TerminalTagValue are the object tag the core puts on a
// task record that reached a terminal state; the bucket's lifecycle rule
// deletes such records TerminalRetentionDays after their last write.
const (
	TerminalTagKey   = "s3q-terminal"
	TerminalTagValue = "true"
)

// on is the access of actions under prefix.
func on(prefix string, actions ...string) Access { return Access{Prefix: prefix, Actions: actions} }

// Functions returns every function of the stack, in a fixed order.
func Functions() []Function {
	return []Function{
		{
			Name: "submit",
			Access: []Access{
				on(pTasks, GetObject, PutObject, PutObjectTagging), // ttl 0: expired on arrival
				on(kTaskTypes, GetObject),
				on(pReady, PutObject), on(pDeadline, PutObject),
				on(pDedup, GetObject, PutObject), // never deleted: a finished holder's key is taken over
				on(pSweep, PutObject),            // the queue registry, the outbox of a ttl-0 task
				on(pChildren, PutObject),         // a child's entry in its parent's index
			},
			Routes: []string{"POST /tasks", "POST /tasks/batch"},
		},
		{
			// Claims never submit: no task type defaults, no dedup keys.
			// A claim expires what it meets and starts a first_attempt
			// task's deadline.
			Name: "claim",
			Access: []Access{
				on(pTasks, GetObject, PutObject, PutObjectTagging),
				on(pReady, ListBucket, DeleteObject),
				on(pDeadline, ListBucket, PutObject, DeleteObject),
				on(pSweep, PutObject),       // the outbox of what it expires or dead-letters
				on(pChildren, DeleteObject), // a finished child leaves its parent's index
			},
			Routes: []string{"POST /claim"},
		},
		{
			// No submit route either. Presigned artifact URLs carry the
			// rights of the role that signs them: PUT and GET (and the
			// HEAD that checks an artifact exists) on artifacts/*.
			Name: "tasks",
			Access: []Access{
				on(pTasks, GetObject, PutObject, PutObjectTagging, ListBucket, GetObjectVersion, ListBucketVersions),
				on(pArtifacts, GetObject, PutObject), // signed into the URLs
				on(pReady, PutObject, DeleteObject), on(pDeadline, PutObject, DeleteObject),
				on(pDedup, GetObject, PutObject),       // a retry takes its dedup key again
				on(pSweep, PutObject, DeleteObject),    // outbox and artifact entries; a parked task's marker
				on(pChildren, PutObject, DeleteObject), // a retried child rejoins its parent's index
			},
			Routes: []string{
				"GET /tasks", "GET /tasks/{id}", "GET /tasks/{id}/history",
				"POST /tasks/{id}/cancel", "POST /tasks/{id}/retry", "POST /tasks/{id}/expire",
				"POST /tasks/{id}/heartbeat", "POST /tasks/{id}/complete", "POST /tasks/{id}/fail",
				"POST /tasks/{id}/reschedule",
				"POST /tasks/{id}/artifacts", "GET /tasks/{id}/artifacts/{name}",
			},
		},
		{
			Name: "schedules",
			Access: []Access{
				on(pSchedules, GetObject, PutObject, DeleteObject, ListBucket),
				on(pDue, PutObject, DeleteObject),
				on(pTasks, GetObject, PutObject), // trigger: a fired task (GET recognises a retried create)
				on(kTaskTypes, GetObject),
				on(pReady, PutObject), on(pDeadline, PutObject), on(pSweep, PutObject),
			},
			Routes: []string{
				"POST /schedules", "GET /schedules",
				"GET /schedules/{id}", "PUT /schedules/{id}", "DELETE /schedules/{id}",
				"POST /schedules/{id}/pause", "POST /schedules/{id}/resume", "POST /schedules/{id}/trigger",
				"GET /schedules/{id}/history",
			},
		},
		{
			// Lists a finished task's artifacts and deletes them; never
			// reads one.
			Name: "sweep-expired",
			Access: []Access{
				on(pTasks, GetObject, PutObject, PutObjectTagging),
				on(pArtifacts, ListBucket, DeleteObject),
				on(pDeadline, ListBucket, PutObject, DeleteObject),
				on(pReady, PutObject, DeleteObject), // a pending child of an expired parent; a repaired marker
				on(pSweep, ListBucket, PutObject, DeleteObject),
				on(pChildren, ListBucket, GetObject, DeleteObject),
			},
			Timer:     true,
			PutEvents: true,
		},
		{
			Name: "schedule-tick",
			Access: []Access{
				on(pSchedules, GetObject, PutObject),
				on(pDue, ListBucket, PutObject, DeleteObject),
				on(pTasks, GetObject, PutObject, PutObjectTagging), // a late fire may expire on arrival
				on(kTaskTypes, GetObject),
				on(pReady, PutObject), on(pDeadline, PutObject), on(pSweep, PutObject),
			},
			Timer: true,
		},
	}
}
