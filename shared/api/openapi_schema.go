package api

import (
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/schedule"
	"github.com/s3q/s3q/shared/wire"
)

// The schemas of the document (components.schemas), made by reflection
// from the Go types the API decodes requests into and encodes answers
// from, so that the document and the code cannot drift: a field added to
// one of these structs is in the document with no line more (a
// description, enum or pattern is one line of fieldDocs). Every object is
// closed (additionalProperties: false). In an answer a field is required
// unless its JSON tag says omitempty, and nullable when it is a pointer
// that is always sent; a request's required fields are requestRequired's.

// flow says which way a type travels: requests are read leniently where
// the API is lenient (a duration as a string or a number of seconds),
// answers are written one way.
type flow int

const (
	inbound  flow = iota // a request body the API decodes
	outbound             // an answer the API encodes
)

// component is one named schema: a Go type, or a schema built by hand
// (build) for what reflection cannot say (a oneOf, the document itself).
type component struct {
	name  string
	typ   reflect.Type
	flow  flow
	build func() obj
}

func typeOf[T any]() reflect.Type { return reflect.TypeFor[T]() }

// components are the document's schemas, in no particular order (the
// document sorts them). A struct type listed here is referred to by name
// wherever it appears; any other struct is inlined.
var components = []component{
	// Answers.
	{name: "Task", typ: typeOf[taskView](), flow: outbound},
	{name: "TaskReply", typ: typeOf[taskReply](), flow: outbound},
	{name: "TaskList", typ: typeOf[listReply](), flow: outbound},
	{name: "BatchReply", typ: typeOf[batchReply](), flow: outbound},
	{name: "BatchResult", typ: typeOf[batchItem](), flow: outbound},
	{name: "Lease", typ: typeOf[queue.Lease](), flow: outbound},
	{name: "Claimed", typ: typeOf[claimedView](), flow: outbound},
	{name: "ClaimReply", typ: typeOf[claimReply](), flow: outbound},
	{name: "TaskVersion", typ: typeOf[versionView](), flow: outbound},
	{name: "History", typ: typeOf[historyReply](), flow: outbound},
	{name: "Queue", typ: typeOf[queueView](), flow: outbound},
	{name: "QueueReply", typ: typeOf[queueReply](), flow: outbound},
	{name: "QueueList", typ: typeOf[queuesReply](), flow: outbound},
	{name: "Counts", typ: typeOf[queue.QueueCounts](), flow: outbound},
	{name: "Stats", typ: typeOf[queue.QueueStats](), flow: outbound},
	{name: "RecentCounts", typ: typeOf[queue.RecentCounts](), flow: outbound},
	{name: "StatsReply", typ: typeOf[statsReply](), flow: outbound},
	{name: "BulkReply", typ: typeOf[queue.BulkResult](), flow: outbound},
	{name: "BulkSkip", typ: typeOf[queue.BulkSkip](), flow: outbound},
	{name: "Schedule", typ: typeOf[schedule.Schedule](), flow: outbound},
	{name: "ScheduleReply", typ: typeOf[scheduleReply](), flow: outbound},
	{name: "ScheduleList", typ: typeOf[schedule.ListResult](), flow: outbound},
	{name: "Fire", typ: typeOf[schedule.Fire](), flow: outbound},
	{name: "FireReply", typ: typeOf[fireReply](), flow: outbound},
	{name: "ScheduleHistory", typ: typeOf[schedule.HistoryResult](), flow: outbound},
	{name: "Artifact", typ: typeOf[artifactView](), flow: outbound},
	{name: "ArtifactReply", typ: typeOf[artifactReply](), flow: outbound},
	{name: "Error", typ: typeOf[Error](), flow: outbound},
	{name: "OpenAPI", build: openAPISchema},
	{name: "PushDelivery", typ: typeOf[pushDelivery](), flow: outbound},

	// Values of both.
	{name: "Status", typ: typeOf[queue.Status]()},
	{name: "TTLFrom", typ: typeOf[queue.TTLFrom]()},
	{name: "BulkOp", typ: typeOf[queue.BulkOp]()},
	{name: "MissedRuns", typ: typeOf[schedule.MissedRuns]()},
	{name: "Overlap", typ: typeOf[schedule.Overlap]()},
	{name: "Target", typ: typeOf[queues.Target](), build: targetSchema},

	// Requests.
	{name: "SubmitRequest", typ: typeOf[submitBody](), flow: inbound},
	{name: "BatchTask", typ: typeOf[queue.SubmitRequest](), flow: inbound},
	{name: "BatchRequest", typ: typeOf[batchBody](), flow: inbound},
	{name: "ClaimRequest", typ: typeOf[claimBody](), flow: inbound},
	{name: "HeartbeatRequest", typ: typeOf[heartbeatBody](), flow: inbound},
	{name: "CompleteRequest", typ: typeOf[completeBody](), flow: inbound},
	{name: "FailRequest", typ: typeOf[failBody](), flow: inbound},
	{name: "RescheduleRequest", typ: typeOf[rescheduleBody](), flow: inbound},
	{name: "CancelAckRequest", typ: typeOf[cancelAckBody](), flow: inbound},
	{name: "ArtifactRequest", typ: typeOf[artifactBody](), flow: inbound},
	{name: "QueueRequest", typ: typeOf[queueBody](), flow: inbound},
	{name: "ScheduleRequest", typ: typeOf[schedule.Request](), flow: inbound},
	{name: "BulkRequest", typ: typeOf[bulkBody](), flow: inbound},
	{name: "Empty", typ: typeOf[struct{}](), flow: inbound},
}

// enums are the values of each string type with a fixed set.
var enums = map[reflect.Type][]string{
	typeOf[queue.Status]():        stringsOf(wire.Statuses),
	typeOf[queue.TTLFrom]():       {string(queue.TTLFromSubmission), string(queue.TTLFromFirstAttempt)},
	typeOf[queue.BulkOp]():        {string(queue.OpPurge), string(queue.OpRetry), string(queue.OpCancel), string(queue.OpExpire)},
	typeOf[schedule.MissedRuns](): {string(schedule.MissedSkip), string(schedule.MissedCatchUp)},
	typeOf[schedule.Overlap]():    {string(schedule.OverlapAllow), string(schedule.OverlapSkip)},
}

// stringsOf returns the values of a string type as strings.
func stringsOf[S ~string](values []S) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = string(v)
	}
	return out
}

// requestRequired are the fields each request body must have.
var requestRequired = map[string][]string{
	"SubmitRequest":     {"task_type"},
	"BatchTask":         {"task_type"},
	"BatchRequest":      {"tasks"},
	"HeartbeatRequest":  {"lease_token"},
	"CompleteRequest":   {"lease_token"},
	"FailRequest":       {"lease_token"},
	"RescheduleRequest": {"lease_token"},
	"CancelAckRequest":  {"lease_token"},
	"ArtifactRequest":   {"name", "size"},
	"ScheduleRequest":   {"task_type", "cron"},
}

// hidden are fields of a Go type that the API never sends (it clears
// them before encoding): they are not in the document, so one that
// leaks fails the answer's validation.
var hidden = map[string]bool{
	"Schedule.secret": true, // the key of the schedule's task ids (schedule.Definition.Secret)
}

// Patterns of names and ids, as the core checks them (queue.ValidateQueueName,
// queue.ValidateTaskType, the task id of queue.NewID, schedule ids).
const (
	patternTaskID     = `^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`
	patternQueue      = `^[A-Za-z0-9_-]{1,64}$`
	patternTaskType   = `^[A-Za-z0-9_.:-]{1,128}$`
	patternScheduleID = `^[A-Za-z0-9_-]{1,128}$`
	patternArtifact   = `^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`
)

func taskID() obj {
	return obj{"type": "string", "pattern": patternTaskID, "description": "a task id: a lowercase UUIDv7"}
}
func queueName() obj { return obj{"type": "string", "pattern": patternQueue} }
func taskType() obj  { return obj{"type": "string", "pattern": patternTaskType} }
func scheduleID() obj {
	return obj{"type": "string", "pattern": patternScheduleID}
}
func described(s obj, description string) obj {
	s = maps(s)
	s["description"] = description
	return s
}
func maps(s obj) obj {
	c := obj{}
	for k, v := range s {
		c[k] = v
	}
	return c
}
func enum(description string, values ...string) obj {
	return obj{"type": "string", "enum": values, "description": description}
}

// fieldDocs are what reflection cannot say about a field: its
// description, enum or pattern, merged over the schema its Go type
// gives. A key is "Component.field", or "*.field" for the field in every
// component that has no "Component.field" entry and whose field is not a
// named type (a "*.queue" pattern is not for QueueReply's queue).
var fieldDocs = map[string]obj{
	"*.id":                taskID(),
	"*.task_id":           taskID(),
	"*.parent_id":         described(taskID(), "the parent task: when it expires, this task is expired (pending) or asked to cancel (running, with on_parent_expired cancel)"),
	"*.running_task_id":   described(taskID(), "the task of the previous fire, still pending or running"),
	"*.last_task_id":      described(taskID(), "the task the last fire submitted"),
	"*.task_ids":          arrayOf(taskID()),
	"*.queue":             queueName(),
	"*.name":              queueName(),
	"*.task_type":         taskType(),
	"*.on_parent_expired": enum("what happens to this task when its parent expires: run (the default) or cancel", "run", "cancel"),
	"*.dedup_key":         {"description": "at most one live (pending or running) task of the queue holds a dedup key"},
	"*.input":             {"description": "the task's input: any JSON value, at most 256 KiB"},
	"*.output":            {"description": "the task's output: any JSON value"},
	"*.lease_token":       {"description": "the token of the lease, from the claim"},
	"*.next_cursor":       {"description": "the cursor of the next page; absent on the last"},
	"*.cursor":            {"description": "the next_cursor of the previous call"},
	"*.lease_for":         {"description": "the lease's length from now: a duration such as 90s, 30m, 1h or 7d, or a number of seconds; more than 0 and at most 12h. Defaults to the task's timeout"},
	"*.max_attempts":      {"minimum": 0, "description": "attempts before the task is dead-lettered (status failed); 0 means the default (3)"},
	"*.ttl_seconds":       {"description": "the time to live in seconds (ttl as a number)"},
	"*.priority":          {"minimum": 0, "maximum": queue.MaxPriority, "description": "1 (highest) to 5 (lowest): among due tasks a claim takes the highest first; 0 or absent: the queue's default, else 3"},
	"*.max_per_second":    {"minimum": queue.MinPerSecond, "maximum": queue.MaxPerSecondLimit, "description": "the most tasks of the queue started a second, by every claim and push delivery together (fractions allowed: 0.5 is one every 2 seconds); a claim held back answers 204 with Retry-After and S3q-Retry-After-Ms; absent: no limit"},
	"*.burst":             {"minimum": 1, "maximum": queue.MaxBurst, "description": "how many tasks may start at once after a quiet spell, with max_per_second; absent: one second's worth (max_per_second rounded up), at least 1"},
	"*.traceparent":       {"description": "a W3C traceparent (00-{trace id}-{parent id}-{flags}), kept on the task and handed to its handler; a submit's traceparent header gives it too"},
	"*.tracestate":        {"description": "a W3C tracestate, with traceparent; a submit's tracestate header gives it too"},

	"Task.expires_at":         {"description": "the task's deadline; null when it has none"},
	"Task.expires_in_seconds": {"description": "whole seconds to expires_at, rounded down; negative once passed"},
	"Task.expiry_reason":      enum("why the task expired", queue.ReasonTTL, queue.ReasonParentExpired, queue.ReasonManual),
	"Task.ended_by":           enum("the lease operation that ended the last lease (the token is kept so that a replay of it answers the same)", "complete", "fail", "reschedule", "cancel"),
	"Task.heartbeats":         {"description": "heartbeats of the current attempt, at most 1000"},
	"Task.cancel_requested":   {"description": "a cancel was asked while the task ran: its worker should stop and acknowledge (cancel-ack)"},
	"Task.purged_at":          {"description": "the task was purged then (only in the last version of a purged task's history)"},
	"Task.attempt":            {"minimum": 0, "description": "attempts started (claims)"},
	"Task.artifact_names":     {"description": "the artifacts uploaded for the task"},

	"Lease.token":      {"description": "the lease token: lease operations (heartbeat, complete, fail, reschedule, cancel-ack) send it as lease_token"},
	"Lease.expires_at": {"description": "the lease lapses then unless extended by a heartbeat"},

	"TaskReply.deduplicated": {"description": "true when a live task already held the dedup key: this is that task (200)"},
	"TaskReply.replayed":     {"description": "true when the task with the request's id already existed, made by this same request: this is that task (200)"},
	"BatchResult.error":      {"allOf": []obj{ref("Error")}, "properties": obj{"code": obj{"enum": batchItemCodes}}, "description": "why this item was not submitted (field tasks[i].…)"},

	"Queue.paused":          {"description": "claims and push deliveries take nothing from a paused queue; submits go on"},
	"Queue.auto_declared":   {"description": "the queue was declared by a submit (auto_declare)"},
	"Queue.shards":          {"minimum": 1, "maximum": queue.MaxShards, "description": "the claim index's key ranges, fixed at the first declaration"},
	"Queue.max_concurrency": {"minimum": 0, "maximum": queues.MaxConcurrency, "description": "the most tasks of the queue running at once; 0 or absent: no limit"},
	"Queue.max_schedules":   {"minimum": 0, "maximum": queues.MaxSchedules, "description": "the most schedules that fire into the queue (409 too_many_schedules past it); 0 or absent: 100"},
	"Queue.counts":          {"description": "the queue's counts, unless counts=false"},

	"Counts.live":      {"description": "pending or running"},
	"Counts.delayed":   {"description": "live, not available yet"},
	"Counts.running":   {"description": "slots held (queues with max_concurrency)"},
	"Counts.completed": {"description": "completed or archived: present where the bucket layout keeps each queue's records apart"},
	"Counts.at_least":  {"description": "a count stopped at 10 LIST pages: capped names which"},
	"Counts.capped":    {"description": "the counts that stopped at 10 LIST pages (live, failed, cancelled, expired, completed), each a lower bound; the others are exact, and completed is absent while live is capped"},

	"Stats.oldest_pending_at":          {"description": "when the oldest due pending task became available"},
	"Stats.oldest_pending_age_seconds": {"description": "how long it has waited since"},

	"BulkReply.matched":     {"description": "tasks the filter chose in this call"},
	"BulkReply.changed":     {"description": "tasks changed (on a dry run: that would be)"},
	"BulkReply.next_cursor": {"description": "continue with it; absent once every task of the status was examined"},
	"BulkSkip.id":           taskID(),

	"Schedule.id":              scheduleID(),
	"Schedule.cron":            {"description": "5 fields (minute hour day-of-month month day-of-week) or a descriptor (@hourly, @daily, @weekly, @monthly, @yearly, @every 15m)"},
	"Schedule.timezone":        {"description": "the IANA time zone the expression is read in"},
	"Schedule.enabled":         {"description": "false while paused"},
	"Schedule.catch_up_window": {"description": "how far back missed_runs catch_up goes"},
	"Schedule.version":         {"description": "bumped by every write of the definition"},
	"Schedule.last_run_at":     {"description": "the fire time of the last fire that submitted a task; null before the first"},
	"Schedule.next_run_at":     {"description": "the next fire time; null while paused. It may be in the past when the next tick has yet to fire it"},
	"Schedule.next_runs":       {"description": "the next 5 fire times from next_run_at on (empty while paused)"},
	"Fire.schedule_id":         scheduleID(),
	"Fire.task_id":             described(taskID(), "the task the fire submitted (absent when skipped)"),
	"Fire.skipped":             enum("why no task was submitted: overlap (the task in running_task_id was still pending or running) or invalid (the template no longer makes a valid task; error says why)", schedule.SkippedOverlap, schedule.SkippedInvalid),
	"Fire.trigger":             {"description": "true for a fire made by POST …/trigger, not by the cron"},
	"Fire.missed":              {"description": "earlier due times (up to 1000) not fired because of missed_runs"},

	"Artifact.name":    {"type": "string", "pattern": patternArtifact, "description": "the artifact's name"},
	"Artifact.headers": {"description": "headers to send as they are"},

	"PushDelivery.deadline": {"type": "string", "format": "date-time", "description": "an RFC 3339 date-time in UTC, a little before the lease ends (a tenth of the lease, at most 2s, before it): answer by then, or the delivery is cut off and the lease lapses"},

	"Error.code":  {"enum": errorCodes(), "description": "what went wrong, one of a fixed set; each goes with one HTTP status"},
	"Error.field": {"description": "the request field at fault, in its JSON spelling (tasks[3].ttl for a batch item's); body for the body as a whole (not JSON, not an object, too large), query for the query string; always present on a 400"},

	"SubmitRequest.id":       {"description": "a lowercase UUIDv7 the caller makes: one id is one task (exactly-once submits). Defaults to one the server makes"},
	"BatchTask.id":           {"description": "a lowercase UUIDv7 the caller makes: one id is one task (exactly-once submits). Defaults to one the server makes"},
	"SubmitRequest.wait":     {"description": "a duration or a number of seconds: wait up to this long for the outcome: 200 finished, 202 still going, 504 deadline passed. Only POST /queues/{queue}/tasks/wait waits; the plain route refuses a wait over 0 (400 naming wait)"},
	"SubmitRequest.queue":    {"description": "the path's queue, or left out"},
	"BatchTask.queue":        {"description": "the path's queue, or left out"},
	"ClaimRequest.queue":     {"description": "the path's queue, or left out"},
	"ClaimRequest.wait":      {"description": "a duration or a number of seconds to long-poll for; only POST /queues/{queue}/claim/wait waits, the plain route refuses a wait over 0 (400 naming wait)"},
	"ClaimRequest.max_tasks": {"minimum": 0, "description": "the most tasks to claim at once; defaults to 1"},
	"BatchRequest.tasks": {"type": "array", "minItems": 1, "maxItems": queue.MaxBatch, "items": ref("BatchTask"),
		"description": "the tasks, each as POST /queues/{queue}/tasks takes it (without wait); an invalid one gets an error in its result (field tasks[i]), the others are still submitted"},
	"FailRequest.error":                   {"description": "the failure message, kept as last_error"},
	"FailRequest.retryable":               {"description": "whether another attempt may succeed. Defaults to true"},
	"RescheduleRequest.delay":             {"description": "until the task is available again. Defaults to 0 (now)"},
	"RescheduleRequest.extend_expiration": {"description": "moves the task's deadline later. Defaults to 0"},
	"ArtifactRequest.name":                {"type": "string", "pattern": patternArtifact},
	"ArtifactRequest.size":                {"minimum": 1, "description": "the artifact's size in bytes: the upload must send exactly that many"},
	"QueueRequest.target":                 ref("Target"),
	"ScheduleRequest.id":                  described(scheduleID(), "the schedule's id; required on create, on replace absent or the path's"),
	"ScheduleRequest.enabled":             {"description": "false to create a paused schedule. Defaults to true on create and to unchanged on replace"},
	"ScheduleRequest.catch_up_window":     {"description": "how far back missed_runs catch_up goes; only with catch_up. Defaults to 24h"},
	"BulkRequest.task_type":               {"description": "only tasks of this type"},
	"BulkRequest.older_than":              {"description": "only tasks last changed (updated_at) at least this long ago: a duration such as 90s, 30m, 1h or 7d, or a number of seconds"},
	"BulkRequest.limit":                   {"minimum": 0, "maximum": 100, "description": "most tasks changed by this call; 0 or absent: 100"},
	"BulkRequest.dry_run":                 {"description": "report what would change, write nothing"},
}

// errorCodes are every error code, sorted.
func errorCodes() []string {
	codes := make([]string, 0, len(codeStatus))
	for c := range codeStatus {
		codes = append(codes, c)
	}
	slices.Sort(codes)
	return codes
}

// batchItemCodes are the error codes a batch item's result may carry:
// whatever a single submit may answer, except what concerns the body
// as a whole.
var batchItemCodes = []string{CodeInvalidInput, CodeTooLarge, CodeConflict, CodeQueueNotFound, CodeTooManyQueues, CodeInternal, CodeThrottled, CodeDeadlineExceeded}

// schemas are the document's components.schemas.
func schemas() obj {
	named := map[reflect.Type]string{
		typeOf[wire.Task](): "Task", // a push delivery's task: Task without expires_in_seconds
	}
	for _, c := range components {
		if c.typ != nil {
			named[c.typ] = c.name
		}
	}
	out := obj{}
	for _, c := range components {
		if c.build != nil {
			out[c.name] = c.build()
			continue
		}
		g := &schemaGen{named: named, flow: c.flow, component: c.name}
		out[c.name] = g.define(c.typ)
	}
	return out
}

// schemaGen makes the schema of one component.
type schemaGen struct {
	named     map[reflect.Type]string
	flow      flow
	component string
}

// define returns the schema of the component's own type t.
func (g *schemaGen) define(t reflect.Type) obj {
	if values, ok := enums[t]; ok {
		return obj{"type": "string", "enum": values}
	}
	if t.Kind() == reflect.Struct {
		return g.object(t)
	}
	return g.schema(t)
}

// jsonField is a field of a struct as encoding/json sees it.
type jsonField struct {
	name      string
	typ       reflect.Type
	omitempty bool
}

// jsonFields returns the fields encoding/json encodes of the struct t, in
// order, the promoted fields of embedded structs included (a field of the
// outer struct shadows one of an embedded struct with its name).
func jsonFields(t reflect.Type) []jsonField {
	var direct, promoted []jsonField
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		ft := f.Type
		if f.Anonymous && name == "" {
			et := ft
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				promoted = append(promoted, jsonFields(et)...)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		direct = append(direct, jsonField{name: name, typ: ft, omitempty: slices.Contains(strings.Split(opts, ","), "omitempty")})
	}
	for _, p := range promoted {
		if !slices.ContainsFunc(direct, func(d jsonField) bool { return d.name == p.name }) {
			direct = append(direct, p)
		}
	}
	return direct
}

// object is the closed object schema of the struct t.
func (g *schemaGen) object(t reflect.Type) obj {
	props := obj{}
	var required []string
	for _, f := range jsonFields(t) {
		if hidden[g.component+"."+f.name] {
			continue
		}
		s := g.schema(f.typ)
		always := !f.omitempty && g.flow == outbound
		if always && f.typ.Kind() == reflect.Pointer {
			s = nullable(s)
		}
		doc, ok := fieldDocs[g.component+"."+f.name]
		if _, isRef := s["$ref"]; !ok && !isRef {
			doc = fieldDocs["*."+f.name]
		}
		if _, isRef := s["$ref"]; isRef && len(doc) > 0 && (len(doc) > 1 || doc["description"] == nil) {
			s = obj{} // the doc replaces a reference
		}
		for k, v := range doc {
			s[k] = v
		}
		if _, isRef := s["$ref"]; isRef {
			delete(s, "description") // a $ref says it all; its siblings are ignored by some tools
		}
		props[f.name] = s
		if always {
			required = append(required, f.name)
		}
	}
	if g.flow == inbound {
		required = requestRequired[g.component]
	}
	slices.Sort(required)
	return object(props, required, true)
}

// nullable returns s that also allows null.
func nullable(s obj) obj {
	if t, ok := s["type"].(string); ok {
		s = maps(s)
		s["type"] = []string{t, "null"}
		return s
	}
	return obj{"oneOf": []obj{s, {"type": "null"}}}
}

var (
	typeTime     = typeOf[time.Time]()
	typeDuration = typeOf[queue.Duration]()
	typeRaw      = typeOf[json.RawMessage]()
	typeHeader   = typeOf[http.Header]()
)

// schema is the schema of a value of type t in the component: a
// reference to a named type, an inlined one otherwise.
func (g *schemaGen) schema(t reflect.Type) obj {
	if name, ok := g.named[t]; ok && name != g.component {
		return ref(name)
	}
	switch t {
	case typeTime:
		return dateTime()
	case typeDuration:
		if g.flow == inbound {
			return durationOrSeconds()
		}
		return duration()
	case typeRaw:
		return anyJSON()
	case typeHeader:
		return obj{"type": "object", "additionalProperties": arrayOf(str())}
	}
	if values, ok := enums[t]; ok {
		return obj{"type": "string", "enum": values}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return g.schema(t.Elem())
	case reflect.String:
		return str()
	case reflect.Bool:
		return boolean()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return integer()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return obj{"type": "integer", "minimum": 0}
	case reflect.Float32, reflect.Float64:
		return obj{"type": "number"}
	case reflect.Slice, reflect.Array:
		return arrayOf(g.schema(t.Elem()))
	case reflect.Map:
		return obj{"type": "object", "additionalProperties": g.schema(t.Elem())}
	case reflect.Struct:
		return g.object(t)
	}
	return anyJSON()
}

// targetSchema is a queue's push target: exactly one of lambda, or url
// with the secret that signs its deliveries.
func targetSchema() obj {
	return obj{
		"description": "a queue's push target: a Lambda function, or an https URL with the SSM parameter that holds the secret signing its deliveries",
		"oneOf": []obj{
			object(obj{"lambda": obj{"type": "string", "description": "a function name or ARN, optionally with a version or alias"}}, []string{"lambda"}, true),
			object(obj{
				"url":    obj{"type": "string", "format": "uri", "description": "an https URL (http only where the deployment allows insecure targets, as s3q dev does)"},
				"secret": obj{"type": "string", "description": "the name or ARN of the SSM parameter holding the HMAC secret that signs deliveries (docs/push.md)"},
			}, []string{"url", "secret"}, true),
		},
	}
}

// openAPISchema is the answer of GET /openapi.json: this document.
func openAPISchema() obj {
	open := obj{"type": "object"}
	return object(obj{
		"openapi":    obj{"type": "string", "const": "3.1.0"},
		"info":       open,
		"servers":    arrayOf(open),
		"tags":       arrayOf(open),
		"paths":      open,
		"webhooks":   open,
		"security":   arrayOf(open),
		"components": open,
	}, []string{"openapi", "info", "paths", "components"}, true)
}
