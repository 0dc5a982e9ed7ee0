package s3qstack

// The functions of the stack, one per folder under functions/, each with the
// S3 prefixes it touches (its IAM policy is built from this table and nothing
// else) and its trigger: HTTP routes or an EventBridge schedule.
//
// The access table mirrors the bucket layout of DESIGN.md §7 and what each
// function does there. When the core starts touching a new prefix from a
// function, add it here: the function gets AccessDenied until then, which the
// e2e smoke test catches.

// Access is what a function may do under one key prefix (relative to the
// deployment's S3Q_PREFIX).
type Access struct {
	// Prefix is a key prefix ending in "/", or one exact key.
	Prefix string
	// Read allows GetObject (and HeadObject).
	Read bool
	// Write allows PutObject. On tasks/ it also allows PutObjectTagging,
	// which a PUT carrying x-amz-tagging (the terminal tag) needs.
	Write bool
	// Delete allows DeleteObject.
	Delete bool
	// Versions allows GetObjectVersion and ListBucketVersions (history).
	Versions bool
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
// artifact deletion times. children/ is a parent's child index. Every
// function that submits or makes transitions may write or drop entries in
// both, and in the index prefixes ready/, deadline/ and dedup/.
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
	pQueues    = "queues/" // declared queues (DESIGN §12.2)
	pSlots     = "slots/"  // concurrency slots of queues with max_concurrency
	kTaskTypes = "config/task_types.json"
)

// TerminalTagKey and TerminalTagValue are the object tag the core puts on a
// task record that reached a terminal state; the bucket's lifecycle rule
// deletes such records TerminalRetentionDays after their last write.
const (
	TerminalTagKey   = "s3q-terminal"
	TerminalTagValue = "true"
)

func rw(p string) Access  { return Access{Prefix: p, Read: true, Write: true} }
func rwd(p string) Access { return Access{Prefix: p, Read: true, Write: true, Delete: true} }
func r(p string) Access   { return Access{Prefix: p, Read: true} }

// markers are the index prefixes every state transition may write or drop.
func markers() []Access {
	return []Access{rwd(pReady), rwd(pDeadline), rwd(pDedup), rwd(pSweep), rwd(pChildren)}
}

// Functions returns every function of the stack, in a fixed order.
func Functions() []Function {
	join := func(groups ...[]Access) []Access {
		var out []Access
		for _, g := range groups {
			out = append(out, g...)
		}
		return out
	}
	return []Function{
		{
			// Reads the queue's declaration; declares it under auto_declare.
			Name:   "submit",
			Access: join([]Access{rw(pTasks), r(kTaskTypes), rw(pQueues)}, markers()),
			Routes: []string{"POST /queues/{queue}/tasks", "POST /queues/{queue}/tasks/batch"},
		},
		{
			// Claims never submit: no task type defaults. They read the
			// queue's declaration and take its concurrency slots.
			Name:   "claim",
			Access: join([]Access{rw(pTasks), r(pQueues), rwd(pSlots)}, markers()),
			Routes: []string{"POST /queues/{queue}/claim"},
		},
		{
			// No submit route either. Presigned artifact URLs carry the
			// rights of the role that signs them: PUT and GET (and the
			// HEAD that checks an artifact exists) on artifacts/*. It
			// declares and deletes queues, and gives back a slot when a
			// lease holder finishes.
			Name: "tasks",
			Access: join([]Access{
				{Prefix: pTasks, Read: true, Write: true, Versions: true},
				rw(pArtifacts), rwd(pQueues), {Prefix: pSlots, Read: true, Delete: true},
			}, markers()),
			Routes: []string{
				"GET /queues", "PUT /queues/{queue}", "GET /queues/{queue}", "DELETE /queues/{queue}",
				"GET /tasks", "GET /queues/{queue}/tasks",
				"GET /queues/{queue}/tasks/{id}", "GET /queues/{queue}/tasks/{id}/history",
				"POST /queues/{queue}/tasks/{id}/cancel", "POST /queues/{queue}/tasks/{id}/retry", "POST /queues/{queue}/tasks/{id}/expire",
				"POST /queues/{queue}/tasks/{id}/heartbeat", "POST /queues/{queue}/tasks/{id}/complete", "POST /queues/{queue}/tasks/{id}/fail",
				"POST /queues/{queue}/tasks/{id}/reschedule",
				"POST /queues/{queue}/tasks/{id}/artifacts", "GET /queues/{queue}/tasks/{id}/artifacts/{name}",
			},
		},
		{
			Name:   "schedules",
			Access: join([]Access{rwd(pSchedules), rwd(pDue), rw(pTasks), r(kTaskTypes), rw(pQueues)}, markers()),
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
			Name:      "sweep-expired",
			Access:    join([]Access{rw(pTasks), {Prefix: pArtifacts, Delete: true}}, markers()),
			Timer:     true,
			PutEvents: true,
		},
		{
			Name:   "schedule-tick",
			Access: join([]Access{rw(pSchedules), rwd(pDue), rw(pTasks), r(kTaskTypes), rw(pQueues)}, markers()),
			Timer:  true,
		},
		dispatchFunction(join),
	}
}
