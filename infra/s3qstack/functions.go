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

// Key prefixes of the bucket layout (layout 3, shared/queue/keys.go).
// Everything of a queue is under q/{queue}/; IAM sees the queue as a
// wildcard, so a grant on q/*/tasks/ is a grant on every queue's records.
// sweep/ (parked leases, the outbox, artifact deletion times, wake-ups)
// and due/ are the only global indexes. tasks/ and queues/ are layout 1's
// prefixes: every function lists them (one key at most) once at start
// when the bucket has no s3q.json yet, to refuse a layout-1 bucket.
const (
	pLayout    = "s3q.json"       // the layout version object
	pQueues    = "q/"             // the queues' folders: ListBucket on exactly q/ (a delimited LIST)
	pDecl      = "q/*/queue.json" // a queue's declaration; {"shards":N} once deleted
	pTasks     = "q/*/tasks/"
	pIndex     = "q/*/index/" // the claim indexes' folder: ListBucket of it lists both at once, or either (s3:prefix q/*/index/*)
	pReady     = "q/*/index/ready/"
	pDeadline  = "q/*/index/deadline/"
	pDedup     = "q/*/dedup/"
	pChildren  = "q/*/children/"
	pSchedules = "q/*/schedules/"
	pArtifacts = "q/*/artifacts/"
	pSlots     = "q/*/slots/"  // concurrency slots of queues with max_concurrency, freed by If-Match
	pWaits     = "q/*/waits/"  // wait holds (waitsPerQueue): listed, taken and freed by conditional PUTs
	pStatus    = "q/*/status/" // failed, expired and cancelled tasks, for listing by status
	pSweep     = "sweep/"
	pDue       = "due/"
	pTargets   = "targets/"        // the push queues' index: an entry per queue with a target
	pRunner    = "q/*/runner.json" // a push queue's runner lease (dispatch only)
	kTaskTypes = "config/task_types.json"
	pOldTasks  = "tasks/"  // layout 1: listed once, to refuse it
	pOldQueues = "queues/" // layout 1: listed once, to refuse it
)

// layoutCheck is what every function does once at start (queue.CheckLayout):
// read s3q.json, and on a bucket without one look for layout 1 and write it.
var layoutCheck = []Access{
	on(pLayout, GetObject, PutObject),
	on(pOldTasks, ListBucket),
	on(pOldQueues, ListBucket),
}

// withLayoutCheck returns a function's access with the layout check's.
func withLayoutCheck(a ...Access) []Access { return append(a, layoutCheck...) }

// on is the access of actions under prefix.
func on(prefix string, actions ...string) Access { return Access{Prefix: prefix, Actions: actions} }

// Functions returns every function of the stack, in a fixed order.
func Functions() []Function {
	return []Function{
		{
			// Reads the queue's declaration; declares it under auto_declare.
			Name:   "submit",
			Access: withLayoutCheck(submitAccess()...),
			Routes: []string{"POST /queues/{queue}/tasks", "POST /queues/{queue}/tasks/batch"},
		},
		{
			// Claims never submit: no task type defaults, no dedup keys.
			// A claim expires what it meets and starts a first_attempt
			// task's deadline. They read the queue's declaration and take its
			// concurrency slots.
			Name:   "claim",
			Access: withLayoutCheck(claimAccess()...),
			Routes: []string{"POST /queues/{queue}/claim"},
		},
		{
			// The held waits: a submit that waits for its outcome (GETs of
			// the record) and a claim that long-polls. It does what
			// submit and claim do, in a function of its own with reserved
			// concurrency (waitsReservedConcurrency), so that waits can
			// neither starve the other functions nor be starved by them.
			Name:   "waits",
			Access: withLayoutCheck(merge(submitAccess(), claimAccess(), []Access{on(pWaits, GetObject, PutObject, ListBucket)})...),
			Routes: []string{"POST /queues/{queue}/tasks/wait", "POST /queues/{queue}/claim/wait"},
		},
		{
			// No submit route either. Presigned artifact URLs carry the
			// rights of the role that signs them: PUT and GET (and the
			// HEAD that checks an artifact exists) on artifacts/*. It
			// declares and deletes queues (a tombstone, never a DELETE),
			// and frees a slot (If-Match) when a lease holder finishes.
			Name: "tasks",
			Access: withLayoutCheck(
				on(pTasks, GetObject, PutObject, PutObjectTagging, DeleteObject, ListBucket, GetObjectVersion, ListBucketVersions), // purge deletes records
				on(pQueues, ListBucket),           // the queues' folders
				on(pDecl, GetObject, PutObject),   // declared, paused, replaced by If-Match, deleted as a tombstone
				on(pSlots, PutObject, ListBucket), // freed (If-Match) when a lease holder finishes
				on(pIndex, ListBucket),
				on(pReady, GetObject, PutObject, DeleteObject),
				on(pDeadline, GetObject, PutObject, DeleteObject),
				on(pDedup, GetObject, PutObject), // a retry takes its dedup key again
				on(pSweep, GetObject, PutObject, DeleteObject),
				on(pChildren, GetObject, PutObject, DeleteObject, ListBucket), // a parent's purge lists its children's markers
				on(pStatus, GetObject, PutObject, PutObjectTagging, DeleteObject, ListBucket),
				on(pArtifacts, GetObject, PutObject, DeleteObject, ListBucket), // signed into the URLs; a purge deletes them
				on(pTargets, GetObject, PutObject, DeleteObject),               // a push queue declared, changed or deleted
			),
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
			// A retry of a dead letter, or a purge, publishes the event
			// the task still owes before its write (docs/guarantees.md).
			PutEvents: true,
		},
		{
			Name: "schedules",
			Access: withLayoutCheck(
				on(pTasks, GetObject, PutObject), // trigger: a fired task
				on(kTaskTypes, GetObject),
				on(pDecl, GetObject),
				on(pReady, GetObject, PutObject),
				on(pDeadline, GetObject, PutObject),
				on(pSweep, GetObject, PutObject),
				on(pSchedules, GetObject, PutObject, DeleteObject, ListBucket),
				on(pDue, GetObject, PutObject, DeleteObject),
			),
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
			Access: withLayoutCheck(
				on(pTasks, GetObject, PutObject, PutObjectTagging, ListBucket), // ListBucket: the gauges count a queue's records
				on(pQueues, ListBucket), // the queue gauges (every 5 minutes): the queues' folders
				on(pDecl, GetObject),
				on(pSlots, PutObject, ListBucket), // the slot of a lapsed lease it settles (If-Match); a gauge counts them
				on(pIndex, ListBucket),            // the gauges count both claim indexes
				on(pReady, GetObject, PutObject, DeleteObject),
				on(pDeadline, GetObject, PutObject, DeleteObject, ListBucket), // the deadline heads
				on(pSweep, GetObject, PutObject, DeleteObject, ListBucket),
				on(pChildren, GetObject, DeleteObject, ListBucket),
				on(pStatus, GetObject, PutObject, PutObjectTagging, ListBucket), // tagged as its terminal record; the gauges' counts
				on(pArtifacts, DeleteObject, ListBucket),
			),
			Timer:     true,
			PutEvents: true,
		},
		{
			Name: "schedule-tick",
			Access: withLayoutCheck(
				on(pTasks, GetObject, PutObject, PutObjectTagging),
				on(kTaskTypes, GetObject),
				on(pDecl, GetObject),
				on(pReady, GetObject, PutObject),
				on(pDeadline, GetObject, PutObject),
				on(pSweep, GetObject, PutObject),
				on(pStatus, GetObject, PutObject, PutObjectTagging), // tagged as its terminal record
				on(pSchedules, GetObject, PutObject),
				on(pDue, GetObject, PutObject, DeleteObject, ListBucket),
			),
			Timer: true,
		},
		{
			// Claims due tasks of push queues and ends their leases with
			// what the target answered; lists the push queues' index and
			// reads the declarations of push queues, and takes their
			// concurrency slots; holds a queue's runner lease while its
			// next task is due soon.
			Name: "dispatch",
			Access: withLayoutCheck(
				on(pTasks, GetObject, PutObject, PutObjectTagging),
				on(pTargets, GetObject, ListBucket), // the push queues
				on(pDecl, GetObject),
				on(pSlots, GetObject, PutObject, ListBucket),
				on(pIndex, ListBucket),
				on(pReady, DeleteObject),
				on(pDeadline, DeleteObject),
				on(pSweep, GetObject, PutObject),
				on(pStatus, GetObject, PutObject, PutObjectTagging), // tagged as its terminal record
				on(pRunner, GetObject, PutObject),                   // a queue's runner lease: taken, renewed, freed by If-Match
			),
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
		on(pDecl, GetObject),
		{Prefix: pDecl, Actions: []string{PutObject}, AutoDeclare: true},    // declared under autoDeclare only
		{Prefix: pQueues, Actions: []string{ListBucket}, AutoDeclare: true}, // max_queues: the queues' folders, counted then
		on(pReady, GetObject, PutObject),
		on(pDeadline, GetObject, PutObject, DeleteObject),
		on(pDedup, GetObject, PutObject),                    // never deleted: a finished holder's key is taken over
		on(pSweep, GetObject, PutObject),                    // wake-ups, the outbox of a ttl-0 task
		on(pChildren, GetObject, PutObject),                 // a child's entry in its parent's index
		on(pStatus, GetObject, PutObject, PutObjectTagging), // tagged as its terminal record
	}
}

// claimAccess is what a claim does. Claims never submit: no task type
// defaults, no dedup keys. A claim expires what it meets and starts a
// first_attempt task's deadline. It reads the queue's declaration and
// takes its concurrency slots.
func claimAccess() []Access {
	return []Access{
		on(pTasks, GetObject, PutObject, PutObjectTagging),
		on(pDecl, GetObject),
		on(pSlots, GetObject, PutObject, ListBucket), // max_concurrency: listed, taken by If-None-Match/If-Match
		on(pIndex, ListBucket),
		on(pReady, DeleteObject),
		on(pDeadline, GetObject, PutObject, DeleteObject),
		on(pSweep, GetObject, PutObject),                    // the outbox of what it expires or dead-letters
		on(pChildren, DeleteObject),                         // a finished child leaves its parent's index
		on(pStatus, GetObject, PutObject, PutObjectTagging), // tagged as its terminal record
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
