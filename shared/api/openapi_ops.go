package api

// The operations of the document: each route's operationId (a stable
// camelCase verb, what generated clients name their methods), its tag
// and, where the summary is not enough, a description. docs/api.md lists
// them; a test fails when a route has none.

// operationDoc names one route's operation.
type operationDoc struct {
	id          string
	tag         string
	description string
}

// The tags, in the order the document lists them.
const (
	tagTasks     = "tasks"
	tagLeases    = "leases"
	tagQueues    = "queues"
	tagSchedules = "schedules"
	tagArtifacts = "artifacts"
	tagMeta      = "meta"
	tagPush      = "push"
)

// tags are the document's tags, with their descriptions.
var tags = []obj{
	{"name": tagTasks, "description": "Submit, read, list, cancel, retry and expire tasks"},
	{"name": tagLeases, "description": "What a worker does: claim tasks under leases, heartbeat, complete, fail, reschedule, acknowledge a cancel"},
	{"name": tagQueues, "description": "Declare, read and delete queues; pause, resume, stats; purge and the bulk operations"},
	{"name": tagSchedules, "description": "Cron schedules that submit tasks, their fires and history"},
	{"name": tagArtifacts, "description": "Presigned URLs to upload and download a task's files"},
	{"name": tagMeta, "description": "The API's own description"},
	{"name": tagPush, "description": "What a push queue's URL target receives (webhooks): the delivery, its signature, and what the target's answers do"},
}

// operations are the operation of every route, by route key.
var operations = map[string]operationDoc{
	"GET /queues":            {"listQueues", tagQueues, ""},
	"PUT /queues/{queue}":    {"declareQueue", tagQueues, ""},
	"GET /queues/{queue}":    {"getQueue", tagQueues, ""},
	"DELETE /queues/{queue}": {"deleteQueue", tagQueues, ""},
	"POST /queues/{queue}/tasks": {"submitTask", tagTasks,
		"201 with the new task; 200 with deduplicated true when a live task holds the dedup key, or replayed true when the task with the request's id exists (made by this same request; 409 conflict naming id when another request made it)."},
	"POST /queues/{queue}/tasks/wait": {"submitTaskWithWait", tagTasks,
		"As submitTask, then waits up to wait for the outcome: 200 with the finished task, 202 with the task still pending or running when the wait ran out, 504 deadline_exceeded (with the task) when its deadline passed first."},
	"POST /queues/{queue}/tasks/batch": {"submitTasks", tagTasks,
		"200 with one result per task, in order: the task (with deduplicated and replayed) or the error it got. A body that is not a batch at all (not an object, no tasks, over 500) is a 400 or 413 and submits nothing."},
	"GET /queues/{queue}/tasks":              {"listTasks", tagTasks, ""},
	"GET /tasks":                             {"listAllTasks", tagTasks, ""},
	"GET /queues/{queue}/tasks/{id}":         {"getTask", tagTasks, ""},
	"GET /queues/{queue}/tasks/{id}/history": {"getTaskHistory", tagTasks, ""},
	"POST /queues/{queue}/tasks/{id}/cancel": {"cancelTask", tagTasks,
		"A pending task is cancelled at once; a running one gets cancel_requested, which its worker sees on its next heartbeat and acknowledges with cancel-ack. 409 invalid_state for a finished task."},
	"POST /queues/{queue}/tasks/{id}/retry": {"retryTask", tagTasks,
		"A failed or cancelled task becomes pending, runnable now, with a fresh set of attempts. A dead letter is retried as soon as it is one: a Task Dead-Lettered event still owed is published by the retry itself, first " +
			"(where the API has no event publisher, 409 invalid_state until the sweep has published it, within a minute). 409 invalid_state also for another status, a task whose deadline has passed, " +
			"a task whose dedup key another live task holds now, and a child whose parent expired; 503 throttled when the owed event could not be published (retrying is safe)."},
	"POST /queues/{queue}/tasks/{id}/expire": {"expireTask", tagTasks,
		"409 invalid_state unless the task is pending (its deadline, if any, need not have passed)."},
	"POST /queues/{queue}/claim": {"claimTask", tagLeases,
		"200 with up to max_tasks tasks, each with its lease; 204 when none is available (or the queue is paused), and 204 with Retry-After (whole seconds) and S3q-Retry-After-Ms when the queue's rate limit (max_per_second) holds the claim back: claim again after that long."},
	"POST /queues/{queue}/claim/wait": {"claimTaskWithWait", tagLeases,
		"As claimTask, long-polling up to wait when no task is available (a claim the rate limit holds back waits within it); 204 when the wait ran out, with Retry-After and S3q-Retry-After-Ms when the rate limit holds the next start past it."},
	"POST /queues/{queue}/tasks/{id}/heartbeat": {"heartbeatTask", tagLeases,
		"Extends the lease by lease_for (default the task's timeout). The task's cancel_requested tells the worker to stop."},
	"POST /queues/{queue}/tasks/{id}/complete": {"completeTask", tagLeases,
		"A replay of the same complete with the same token answers the same task; 409 not_running, lease_mismatch or lease_expired otherwise."},
	"POST /queues/{queue}/tasks/{id}/fail": {"failTask", tagLeases,
		"The task is retried with backoff while attempts remain and retryable is not false; otherwise it is dead-lettered (status failed)."},
	"POST /queues/{queue}/tasks/{id}/reschedule": {"rescheduleTask", tagLeases, ""},
	"POST /queues/{queue}/tasks/{id}/cancel-ack": {"acknowledgeCancel", tagLeases, ""},
	"POST /queues/{queue}/tasks/{id}/artifacts": {"createArtifactUpload", tagArtifacts,
		"201 with a presigned PUT URL for exactly size bytes, living until the earlier of the artifact TTL and the task's deadline. 409 invalid_state unless the task is pending or running and before its deadline."},
	"GET /queues/{queue}/tasks/{id}/artifacts/{name}": {"getArtifactDownload", tagArtifacts, ""},
	"POST /queues/{queue}/schedules":                  {"createSchedule", tagSchedules, ""},
	"GET /queues/{queue}/schedules":                   {"listSchedules", tagSchedules, ""},
	"GET /queues/{queue}/schedules/{id}":              {"getSchedule", tagSchedules, ""},
	"PUT /queues/{queue}/schedules/{id}":              {"replaceSchedule", tagSchedules, ""},
	"DELETE /queues/{queue}/schedules/{id}":           {"deleteSchedule", tagSchedules, ""},
	"POST /queues/{queue}/schedules/{id}/pause":       {"pauseSchedule", tagSchedules, ""},
	"POST /queues/{queue}/schedules/{id}/resume":      {"resumeSchedule", tagSchedules, ""},
	"POST /queues/{queue}/schedules/{id}/trigger":     {"triggerSchedule", tagSchedules, ""},
	"GET /queues/{queue}/schedules/{id}/history":      {"getScheduleHistory", tagSchedules, ""},
	"POST /queues/{queue}/pause":                      {"pauseQueue", tagQueues, ""},
	"POST /queues/{queue}/resume":                     {"resumeQueue", tagQueues, ""},
	"GET /queues/{queue}/stats":                       {"getQueueStats", tagQueues, ""},
	"POST /queues/{queue}/purge":                      {"purgeTasks", tagQueues, ""},
	"POST /queues/{queue}/bulk/retry":                 {"retryTasks", tagQueues, ""},
	"POST /queues/{queue}/bulk/cancel":                {"cancelTasks", tagQueues, ""},
	"POST /queues/{queue}/bulk/expire":                {"expireTasks", tagQueues, ""},
	"GET /openapi.json":                               {"getOpenAPIDocument", tagMeta, ""},
}
