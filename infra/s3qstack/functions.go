package s3qstack

import "slices"

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
	// AutoDeclare marks access that only a deployment with the
	// autoDeclare setting uses (the first submit to a queue declares it):
	// without it, it is not granted.
	AutoDeclare bool
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

// Key prefixes of the bucket layout as shared/queue and shared/schedule use them
// (keys.go there). Parked leases and the queue list live in sweep/, the
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
	pQueues    = "queues/" // declared queues
	pSlots     = "slots/"  // concurrency slots of queues with max_concurrency, freed by If-Match
	pStatus    = "status/" // failed, expired and cancelled tasks, for listing by status
	pPush      = "push/"   // the runner lease of each push queue (dispatch only)
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
			// Reads the queue's declaration; declares it under auto_declare.
			Name:   "submit",
			Access: submitAccess(),
			Routes: []string{"POST /queues/{queue}/tasks", "POST /queues/{queue}/tasks/batch"},
		},
		{
			// Claims never submit: no task type defaults, no dedup keys.
			// A claim expires what it meets and starts a first_attempt
			// task's deadline. They read the queue's declaration and take its
			// concurrency slots.
			Name:   "claim",
			Access: claimAccess(),
			Routes: []string{"POST /queues/{queue}/claim"},
		},
		{
			// The held waits: a submit that waits for its outcome (GETs of
			// the record) and a claim that long-polls. It does what
			// submit and claim do, in a function of its own with reserved
			// concurrency (waitsReservedConcurrency), so that waits can
			// neither starve the other functions nor be starved by them.
			Name:   "waits",
			Access: merge(submitAccess(), claimAccess()),
			Routes: []string{"POST /queues/{queue}/tasks/wait", "POST /queues/{queue}/claim/wait"},
		},
		{
			// No submit route either. Presigned artifact URLs carry the
			// rights of the role that signs them: PUT and GET (and the
			// HEAD that checks an artifact exists) on artifacts/*. It
			// declares and deletes queues (a tombstone, never a DELETE),
			// and frees a slot (If-Match) when a lease holder finishes.
			Name: "tasks",
			Access: []Access{
				on(pTasks, GetObject, PutObject, PutObjectTagging, DeleteObject, ListBucket, GetObjectVersion, ListBucketVersions), // purge deletes records
				on(pQueues, GetObject, PutObject, ListBucket), // declared, paused, replaced by If-Match, deleted as a tombstone
				on(pSlots, PutObject, ListBucket),             // freed (If-Match) when a lease holder finishes
				on(pReady, GetObject, PutObject, DeleteObject, ListBucket),
				on(pDeadline, GetObject, PutObject, DeleteObject, ListBucket),
				on(pDedup, GetObject, PutObject), // a retry takes its dedup key again
				on(pSweep, GetObject, PutObject, DeleteObject),
				on(pChildren, GetObject, PutObject, DeleteObject),
				on(pStatus, GetObject, PutObject, DeleteObject, ListBucket),
				on(pArtifacts, GetObject, PutObject, DeleteObject, ListBucket), // signed into the URLs; a purge deletes them
			},
			Routes: []string{
				"GET /queues", "PUT /queues/{queue}", "GET /queues/{queue}", "DELETE /queues/{queue}",
				"GET /tasks", "GET /queues/{queue}/tasks",
				"GET /queues/{queue}/tasks/{id}", "GET /queues/{queue}/tasks/{id}/history",
				"POST /queues/{queue}/tasks/{id}/cancel", "POST /queues/{queue}/tasks/{id}/retry", "POST /queues/{queue}/tasks/{id}/expire",
				"POST /queues/{queue}/tasks/{id}/heartbeat", "POST /queues/{queue}/tasks/{id}/complete", "POST /queues/{queue}/tasks/{id}/fail",
				"POST /queues/{queue}/tasks/{id}/reschedule", "POST /queues/{queue}/tasks/{id}/cancel-ack",
				"POST /queues/{queue}/tasks/{id}/artifacts", "GET /queues/{queue}/tasks/{id}/artifacts/{name}",
				"GET /openapi.json",
				// The queue operations (docs/operations.md).
				"POST /queues/{queue}/pause", "POST /queues/{queue}/resume", "GET /queues/{queue}/stats", "POST /queues/{queue}/purge",
				"POST /queues/{queue}/bulk/retry", "POST /queues/{queue}/bulk/cancel", "POST /queues/{queue}/bulk/expire",
			},
		},
		{
			Name: "schedules",
			Access: []Access{
				on(pTasks, GetObject, PutObject), // trigger: a fired task
				on(kTaskTypes, GetObject),
				on(pQueues, GetObject),
				on(pReady, GetObject, PutObject),
				on(pDeadline, GetObject, PutObject),
				on(pSweep, GetObject, PutObject),
				on(pSchedules, GetObject, PutObject, DeleteObject, ListBucket),
				on(pDue, GetObject, PutObject, DeleteObject),
			},
			Routes: []string{
				"POST /queues/{queue}/schedules", "GET /queues/{queue}/schedules",
				"GET /queues/{queue}/schedules/{id}", "PUT /queues/{queue}/schedules/{id}", "DELETE /queues/{queue}/schedules/{id}",
				"POST /queues/{queue}/schedules/{id}/pause", "POST /queues/{queue}/schedules/{id}/resume", "POST /queues/{queue}/schedules/{id}/trigger",
				"GET /queues/{queue}/schedules/{id}/history",
			},
		},
		{
			// Lists a finished task's artifacts and deletes them; never
			// reads one.
			Name: "sweep-expired",
			Access: []Access{
				on(pTasks, GetObject, PutObject, PutObjectTagging),
				on(pQueues, GetObject, ListBucket), // ListBucket: the queue gauges (every 5 minutes)
				on(pSlots, PutObject, ListBucket),  // the slot of a lapsed lease it settles (If-Match); a gauge counts them
				on(pReady, GetObject, PutObject, DeleteObject, ListBucket),
				on(pDeadline, GetObject, PutObject, DeleteObject, ListBucket),
				on(pSweep, GetObject, PutObject, DeleteObject, ListBucket),
				on(pChildren, GetObject, DeleteObject, ListBucket),
				on(pStatus, GetObject, PutObject, ListBucket), // ListBucket: the gauges' counts
				on(pArtifacts, DeleteObject, ListBucket),
			},
			Timer:     true,
			PutEvents: true,
		},
		{
			Name: "schedule-tick",
			Access: []Access{
				on(pTasks, GetObject, PutObject, PutObjectTagging),
				on(kTaskTypes, GetObject),
				on(pQueues, GetObject),
				on(pReady, GetObject, PutObject),
				on(pDeadline, GetObject, PutObject),
				on(pSweep, GetObject, PutObject),
				on(pStatus, GetObject, PutObject),
				on(pSchedules, GetObject, PutObject),
				on(pDue, GetObject, PutObject, DeleteObject, ListBucket),
			},
			Timer: true,
		},
		{
			// Claims due tasks of push queues and ends their leases with
			// what the target answered; reads the declarations of push
			// queues and takes their concurrency slots; holds a queue's
			// runner lease while its next task is due soon.
			Name: "dispatch",
			Access: []Access{
				on(pTasks, GetObject, PutObject, PutObjectTagging),
				on(pQueues, GetObject, ListBucket),
				on(pSlots, GetObject, PutObject, ListBucket),
				on(pReady, DeleteObject, ListBucket),
				on(pDeadline, DeleteObject, ListBucket),
				on(pSweep, GetObject, PutObject),
				on(pStatus, GetObject, PutObject),
				on(pPush, GetObject, PutObject), // a queue's runner lease: taken, renewed, freed by If-Match
			},
			Timer: true,
		},
	}
}

// submitAccess is what a submit does: it reads the queue's declaration,
// and declares the queue under autoDeclare.
func submitAccess() []Access {
	return []Access{
		on(pTasks, GetObject, PutObject, PutObjectTagging), // ttl 0: expired on arrival
		on(kTaskTypes, GetObject),
		on(pQueues, GetObject),
		{Prefix: pQueues, Actions: []string{PutObject, ListBucket}, AutoDeclare: true}, // declared (and max_queues counted) under autoDeclare only
		on(pReady, GetObject, PutObject),
		on(pDeadline, GetObject, PutObject, DeleteObject),
		on(pDedup, GetObject, PutObject),    // never deleted: a finished holder's key is taken over
		on(pSweep, GetObject, PutObject),    // wake-ups, the outbox of a ttl-0 task
		on(pChildren, GetObject, PutObject), // a child's entry in its parent's index
		on(pStatus, GetObject, PutObject),
	}
}

// claimAccess is what a claim does. Claims never submit: no task type
// defaults, no dedup keys. A claim expires what it meets and starts a
// first_attempt task's deadline. It reads the queue's declaration and
// takes its concurrency slots.
func claimAccess() []Access {
	return []Access{
		on(pTasks, GetObject, PutObject, PutObjectTagging),
		on(pQueues, GetObject),
		on(pSlots, GetObject, PutObject, ListBucket), // max_concurrency: listed, taken by If-None-Match/If-Match
		on(pReady, DeleteObject, ListBucket),
		on(pDeadline, GetObject, PutObject, DeleteObject, ListBucket),
		on(pSweep, GetObject, PutObject), // the outbox of what it expires or dead-letters
		on(pChildren, DeleteObject),      // a finished child leaves its parent's index
		on(pStatus, GetObject, PutObject),
	}
}

// merge is the union of access tables: per prefix (and AutoDeclare), the
// actions of either, in first-seen order.
func merge(tables ...[]Access) []Access {
	var out []Access
	for _, table := range tables {
		for _, a := range table {
			i := -1
			for j := range out {
				if out[j].Prefix == a.Prefix && out[j].AutoDeclare == a.AutoDeclare {
					i = j
				}
			}
			if i < 0 {
				out = append(out, Access{Prefix: a.Prefix, AutoDeclare: a.AutoDeclare})
				i = len(out) - 1
			}
			for _, act := range a.Actions {
				if !slices.Contains(out[i].Actions, act) {
					out[i].Actions = append(out[i].Actions, act)
				}
			}
		}
	}
	return out
}
