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
			Name:   "submit",
			Access: join([]Access{rw(pTasks), r(kTaskTypes)}, markers()),
			Routes: []string{"POST /tasks", "POST /tasks/batch"},
		},
		{
			// Claims never submit: no task type defaults.
			Name:   "claim",
			Access: join([]Access{rw(pTasks)}, markers()),
			Routes: []string{"POST /claim"},
		},
		{
			// No submit route either. Presigned artifact URLs carry the
			// rights of the role that signs them: PUT and GET (and the
			// HEAD that checks an artifact exists) on artifacts/*.
			Name: "tasks",
			Access: join([]Access{
				{Prefix: pTasks, Read: true, Write: true, Versions: true},
				rw(pArtifacts),
			}, markers()),
			Routes: []string{
				"GET /tasks", "GET /tasks/{id}", "GET /tasks/{id}/history",
				"POST /tasks/{id}/cancel", "POST /tasks/{id}/retry", "POST /tasks/{id}/expire",
				"POST /tasks/{id}/heartbeat", "POST /tasks/{id}/complete", "POST /tasks/{id}/fail",
				"POST /tasks/{id}/reschedule",
				"POST /tasks/{id}/artifacts", "GET /tasks/{id}/artifacts/{name}",
			},
		},
		{
			Name:   "schedules",
			Access: join([]Access{rwd(pSchedules), rwd(pDue), rw(pTasks), r(kTaskTypes)}, markers()),
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
			Name:      "sweep-expired",
			Access:    join([]Access{rw(pTasks), {Prefix: pArtifacts, Delete: true}}, markers()),
			Timer:     true,
			PutEvents: true,
		},
		{
			Name:   "schedule-tick",
			Access: join([]Access{rw(pSchedules), rwd(pDue), rw(pTasks), r(kTaskTypes)}, markers()),
			Timer:  true,
		},
		dispatchFunction(join),
	}
}
