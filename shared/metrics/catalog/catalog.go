// Package catalog is the one list of the CloudWatch metrics s3q writes:
// their names, units, dimensions and what writes them. The emitters
// (package metrics) take their names from here, and so does the stack's
// dashboard and alarms (infra/s3qstack); metrics' tests check that what
// the emitters write is exactly this list, and the stack's that every
// widget shows a metric of it. It imports nothing, so the CDK app can use
// it without compiling the rest of s3q.
package catalog

// The metrics' names.
const (
	// Written by sweep-expired after each sweep (dimension service).
	SweepIncomplete     = "SweepIncomplete"
	SweepDuration       = "sweep_duration"
	SweepRequests       = "sweep_requests"
	SweepListRequests   = "sweep_list_requests"
	TasksExpired        = "tasks_expired"
	TasksNearExpiration = "tasks_near_expiration"
	EventsSent          = "events_sent"
	EventsFailed        = "events_failed"
	LeasesReclaimed     = "leases_reclaimed"
	TasksDeadLettered   = "tasks_dead_lettered"
	TasksParked         = "tasks_parked"

	// By task type (dimensions service, task_type).
	TasksExpiredTotal      = "tasks_expired_total"
	TasksDeadLetteredTotal = "tasks_dead_lettered_total"
	TaskTTLSeconds         = "task_ttl_seconds"
	TasksWithoutTTL        = "tasks_without_ttl"

	// By push queue (dimensions service, queue), from dispatch.
	PushDeliveriesTotal       = "push_deliveries_total"
	PushDeliveryFailuresTotal = "push_delivery_failures_total"
	PushOutcomeErrorsTotal    = "push_outcome_errors_total"

	// What the functions did (dimension service).
	TasksSubmittedTotal = "tasks_submitted_total"
	TasksCompletedTotal = "tasks_completed_total"
	TasksFailedTotal    = "tasks_failed_total"
	S3RequestsTotal     = "s3_requests_total"

	// By queue (dimensions service, queue), from sweep-expired every
	// QueueStatsEveryMinutes.
	QueueDepth              = "queue_depth"
	OldestPendingAgeSeconds = "oldest_pending_age_seconds"
)

// QueueStatsEveryMinutes is how often sweep-expired writes the queue
// gauges (queue_depth, oldest_pending_age_seconds): on the sweeps whose
// minute is a multiple of it.
const QueueStatsEveryMinutes = 5

// Units (CloudWatch's names).
const (
	Count        = "Count"
	Seconds      = "Seconds"
	Milliseconds = "Milliseconds"
)

// Dimension sets.
var (
	ByService  = []string{"service"}
	ByTaskType = []string{"service", "task_type"}
	ByQueue    = []string{"service", "queue"}
)

// Metric is one metric s3q writes as an embedded-metric-format log line.
type Metric struct {
	Name string
	Unit string
	// Dimensions is its dimension set (service is always "s3q").
	Dimensions []string
	// Writer is the function that writes it.
	Writer string
	// Help says what one value is.
	Help string
	// Filtered is true when the stack also makes it, without dimensions,
	// from the log lines that carry it (a metric filter on every
	// function's log group), for its alarm.
	Filtered bool
}

var all = []Metric{
	{SweepIncomplete, Count, ByService, "sweep-expired", "1 when a sweep stopped with due work left for the next one (time budget, failed requests), else 0", false},
	{SweepDuration, Milliseconds, ByService, "sweep-expired", "how long one sweep took", false},
	{SweepRequests, Count, ByService, "sweep-expired", "S3 requests of one sweep", false},
	{SweepListRequests, Count, ByService, "sweep-expired", "LIST requests of one sweep", false},
	{TasksExpired, Count, ByService, "sweep-expired", "tasks one sweep expired", false},
	{TasksNearExpiration, Count, ByService, "sweep-expired", "deadlines due within the sweep's window, from the index heads it read", false},
	{EventsSent, Count, ByService, "sweep-expired", "Task Expired and Task Dead-Lettered events one sweep delivered", false},
	{EventsFailed, Count, ByService, "sweep-expired", "events one sweep could not deliver (owed to the next)", false},
	{LeasesReclaimed, Count, ByService, "sweep-expired", "lapsed leases one sweep put back to pending", false},
	{TasksDeadLettered, Count, ByService, "sweep-expired", "lapsed leases with their attempts spent that one sweep failed", false},
	{TasksParked, Count, ByService, "sweep-expired", "running tasks one sweep parked until their lease ends", false},
	{TasksExpiredTotal, Count, ByTaskType, "sweep-expired", "expirations of the type whose Task Expired event a sweep delivered", false},
	{TasksDeadLetteredTotal, Count, ByTaskType, "sweep-expired", "tasks of the type that landed in failed (the dead-letter state), counted by the sweep that delivered their event", true},
	{TaskTTLSeconds, Seconds, ByTaskType, "submit", "the time to live of each task submitted with a deadline", false},
	{TasksWithoutTTL, Count, ByTaskType, "submit", "tasks submitted without a deadline", false},
	{PushDeliveriesTotal, Count, ByQueue, "dispatch", "tasks handed to the queue's push target", false},
	{PushDeliveryFailuresTotal, Count, ByQueue, "dispatch", "deliveries the target failed or did not answer in time", true},
	{PushOutcomeErrorsTotal, Count, ByQueue, "dispatch", "delivery outcomes that could not be written", false},
	{TasksSubmittedTotal, Count, ByService, "submit", "tasks created by submits (single and batch)", false},
	{TasksCompletedTotal, Count, ByService, "tasks, dispatch", "tasks completed by a worker (POST .../complete) or a push target", false},
	{TasksFailedTotal, Count, ByService, "tasks, dispatch", "failed attempts reported by a worker (POST .../fail) or a push target (retried or dead-lettered)", false},
	{S3RequestsTotal, Count, ByService, "every function", "S3 requests of one API request or one timer run", false},
	{QueueDepth, Count, ByQueue, "sweep-expired", "live tasks of the queue (pending, delayed or running) from its index markers, as the queue's stats count them", false},
	{OldestPendingAgeSeconds, Seconds, ByQueue, "sweep-expired", "how long the queue's oldest due pending task has waited; 0 when none is due", false},
}

// All returns every metric s3q writes.
func All() []Metric { return append([]Metric(nil), all...) }

// Lookup returns the metric named name.
func Lookup(name string) (Metric, bool) {
	for _, m := range all {
		if m.Name == name {
			return m, true
		}
	}
	return Metric{}, false
}
