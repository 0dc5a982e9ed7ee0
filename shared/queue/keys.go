package queue

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"time"
)

// The bucket layout, layout version 3 (docs/layout.md). This file is the
// one place where keys are built: every package that reads or writes the
// bucket (the core, schedules, artifacts, dispatch, the CLI) asks it.
//
// Everything of one queue is under q/{queue}/, so a listing, a count or a
// history of one queue reads only its prefix, a team can be granted
// s3://bucket/q/{queue}/* and nothing else, and task and schedule ids are
// unique within their queue only:
//
//	s3q.json                                      the layout version (layout.go)
//	q/{queue}/queue.json                          the declaration; {"shards":N} once deleted
//	q/{queue}/tasks/{r}/{id}.json                 the record; r = hash(id) mod 16, one hex digit
//	q/{queue}/index/                              the claim indexes, one folder: a LIST of it reads both
//	q/{queue}/index/deadline/{s}/{exp}_{avail}_{id}  pending with a deadline (the marker stays while it runs)
//	q/{queue}/index/ready/{s}/{avail}_{id}        pending, no deadline; s = hash(id) mod shards
//	q/{queue}/index/{deadline|ready}/p{n}/{s}/... the same, for priority n other than the default (priority.go)
//	q/{queue}/dedup/{sha256(key)}                 dedup pointer
//	q/{queue}/status/{status}/{id}                a task in a rare status (failed, expired, cancelled)
//	q/{queue}/children/{parent_id}.flag           the task has (had) children
//	q/{queue}/children/{parent_id}/{child_id}     a child that is not terminal
//	q/{queue}/slots/{n}                           a concurrency slot (max_concurrency)
//	q/{queue}/waits/{n}                           a wait hold (waits.go)
//	q/{queue}/artifacts/{id}/{name}               artifacts (presigned URLs)
//	q/{queue}/schedules/{id}.json                 a schedule's definition
//	q/{queue}/schedules/{id}/state.json           its run state
//	q/{queue}/schedules/{id}/history/{t}          one fire
//	q/{queue}/runner.json                         a push queue's dispatch runner lease (package dispatch)
//
// Only time-ordered work that spans queues is global, and its keys name
// the queue and the id:
//
//	sweep/{time}_{kind}_{queue}.{id}              the sweep index, one LIST reads its head:
//	  sweep/{lease_exp}_lease_{queue}.{id}        a running task parked by the sweep (its index_key)
//	  sweep/{at}_event_{queue}.{id}               outbox: follow-up work owed since a transition at {at}
//	  sweep/{gc_at}_artifacts_{queue}.{id}        the task's artifacts fall due for deletion
//	sweep/wake/{minute}_{queue}                   wake-up: the queue may hold a deadline marker due from {minute}
//	due/{t}_{queue}.{schedule_id}_{rev}           the tick's due index
//	targets/{queue}                               the push queues' index (package queues, targets.go)
//	config/task_types.json                        per-task-type defaults
//
// Every index key sorts by time: a fixed-width UTC timestamp comes first,
// so lexical order is time order and "what is due now" is a LIST from the
// start of a prefix. targets/ is the one exception: a small index of the
// queues that have a push target, so that the dispatcher's minute rule
// finds them with one LIST whatever the number of pull queues. Queue names, task ids and schedule ids never hold a
// "." or a "/" (validate.go), so "{queue}.{id}" parses unambiguously.
const (
	// prefixQueues holds one folder per queue.
	prefixQueues = "q/"
	// prefixSweep is the sweep index: every key is {time}_{kind}_{subject}
	// and sorts by time, so one LIST from the start reads the head of all
	// the sweep's work at once (parked leases, the event outbox, artifact
	// deletion).
	prefixSweep = "sweep/"
	// prefixWake holds the wake-ups of the deadline indexes: a key per
	// queue and minute in which one of its deadline markers falls due,
	// written before the marker. It sorts after every time key of
	// prefixSweep (a digit), so a LIST of the sweep index's head never
	// reads into it.
	prefixWake = "sweep/wake/"
	// PrefixDue is the tick's due index (shared/schedule).
	PrefixDue = "due/"
	// PrefixTargets is the push queues' index: targets/{queue} for every
	// queue whose declaration has a target (TargetNote).
	PrefixTargets = "targets/"
)

// The folders of a queue, below q/{queue}/.
const (
	dirTasks = "tasks/"
	// dirIndex holds the two claim indexes, dirDeadline then dirReady (in
	// this order of keys), so that one LIST of it reads both while they
	// are empty or sparse: an empty claim costs one LIST.
	dirIndex     = "index/"
	dirReady     = "ready/"    // below dirIndex
	dirDeadline  = "deadline/" // below dirIndex
	dirDedup     = "dedup/"
	dirStatus    = "status/"
	dirChildren  = "children/"
	dirSlots     = "slots/"
	dirWaits     = "waits/"
	dirArtifacts = "artifacts/"
	dirSchedules = "schedules/"
	declName     = "queue.json"
)

// The kinds of entry in the sweep index (sweep/{time}_{kind}_{subject}).
const (
	// sweepLease is a running task parked by the sweep until its lease
	// expires: the record's index_key. Claims never see it.
	sweepLease = "lease"
	// sweepEvent is the outbox: a transition at time owes follow-up work
	// (a Task Expired or Task Dead-Lettered event, the expiry of its
	// pending children, the deletion of its artifacts). Written before the
	// record changes, deleted once the work is done.
	sweepEvent = "event"
	// sweepArtifacts says a task's artifacts fall due for deletion at time.
	sweepArtifacts = "artifacts"
)

// keyTimeLayout is the fixed-width time format of index keys, microsecond
// precision, always UTC: 20260128T170000.000000Z.
const keyTimeLayout = "20060102T150405.000000Z"

// Times in keys must fit the fixed width; requests outside this range are
// rejected before they reach a key.
var (
	minTime = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	maxTime = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)
)

// keyTime formats t for a key: fixed width, UTC, microseconds.
func keyTime(t time.Time) string { return t.UTC().Format(keyTimeLayout) }

// parseKeyTime parses a time keyTime made.
func parseKeyTime(s string) (time.Time, error) { return time.Parse(keyTimeLayout, s) }

// QueuePrefix returns the folder of a queue: q/{queue}/. Deleting a queue
// is deleting this prefix; access to one queue is access to it.
func QueuePrefix(queue string) string { return prefixQueues + queue + "/" }

// QueuesPrefix is the folder of every queue's folder.
const QueuesPrefix = prefixQueues

// QueueKey returns the key of a queue's declaration: q/{queue}/queue.json.
func QueueKey(queue string) string { return QueuePrefix(queue) + declName }

// DispatchRunnerKey is the key of a push queue's dispatch runner lease:
// the one dispatch run that stays with the queue while its next task is
// due soon (package dispatch). The core never reads it.
func DispatchRunnerKey(queue string) string { return QueuePrefix(queue) + "runner.json" }

// TargetKey returns a queue's entry in the push queues' index.
func TargetKey(queue string) string { return PrefixTargets + queue }

// QueueOfTargetKey returns the queue of a TargetKey, or "".
func QueueOfTargetKey(key string) string {
	name, ok := strings.CutPrefix(key, PrefixTargets)
	if !ok || !reQueue.MatchString(name) {
		return ""
	}
	return name
}

// QueueOfDir returns the queue of a q/{queue}/ folder (a common prefix
// of a delimited LIST of QueuesPrefix), or "".
func QueueOfDir(dir string) string {
	name, ok := strings.CutPrefix(dir, prefixQueues)
	if !ok {
		return ""
	}
	name, ok = strings.CutSuffix(name, "/")
	if !ok || !reQueue.MatchString(name) {
		return ""
	}
	return name
}

// RecordShards is how many key ranges a queue's task records spread over,
// whatever its declared shards: records are read by key, never listed by
// a claim, so spreading them costs nothing, and a queue's busiest range is
// then one of its claim indexes (which its shards spread).
const RecordShards = 16

// MaxShards is the most shards a queue's claim indexes spread over.
const MaxShards = 16

// shardOf spreads ids over n key ranges by a hash of the id.
func shardOf(id string, n int) int {
	if n <= 1 {
		return 0
	}
	h := fnv.New32a()
	h.Write([]byte(id))
	return int(h.Sum32() % uint32(n))
}

// shardName is a shard's folder: one hex digit (at most 16 shards), so
// the folders sort in shard order.
func shardName(shard int) string { return strconv.FormatInt(int64(shard), 16) }

// TaskKey returns the key of a task record:
// q/{queue}/tasks/{hash(id) mod 16}/{id}.json.
func TaskKey(queue, id string) string {
	return tasksPrefix(queue) + shardName(shardOf(id, RecordShards)) + "/" + id + ".json"
}

// IsTaskKey reports whether key is a task record's key (TaskKey).
func IsTaskKey(key string) bool {
	name := queueOfKey(key)
	return name != "" && reQueue.MatchString(name) && taskIDFromKey(name, key) != ""
}

// DeadlineMarkerKey returns the claim-index marker of a pending task with
// a deadline, in the given shard (benchmarks and tests that build
// backlogs without the core).
func DeadlineMarkerKey(queue string, shard int, expires, available time.Time, id string) string {
	return deadlinePrefix(queue, shard) + keyTime(expires) + "_" + keyTime(available) + "_" + id
}

// tasksPrefix returns the folder of a queue's task records.
func tasksPrefix(queue string) string { return QueuePrefix(queue) + dirTasks }

// taskIDFromKey returns the id of a record key of queue, or "" for any
// other key.
func taskIDFromKey(queue, key string) string {
	rest, ok := strings.CutPrefix(key, tasksPrefix(queue))
	if !ok {
		return ""
	}
	_, base, ok := strings.Cut(rest, "/")
	if !ok {
		return ""
	}
	id, ok := strings.CutSuffix(base, ".json")
	if !ok || validID(id) != nil || TaskKey(queue, id) != key {
		return ""
	}
	return id
}

// indexesPrefix is the folder of a queue's two claim indexes,
// q/{queue}/index/: one LIST of it reads the head of deadline/ and then
// of ready/, every shard of each, while they are empty or sparse.
func indexesPrefix(queue string) string { return QueuePrefix(queue) + dirIndex }

// deadlineRoot and readyRoot are a queue's claim indexes of the default
// priority, every shard: one LIST of a root reads the heads of all its
// shards while they are sparse. deadlineRoot sorts first in
// indexesPrefix. The indexes of the other priorities are folders inside
// them, after the shards (priorityRoot).
func deadlineRoot(queue string) string { return indexesPrefix(queue) + dirDeadline }
func readyRoot(queue string) string    { return indexesPrefix(queue) + dirReady }

func readyPrefix(queue string, shard int) string {
	return readyRoot(queue) + shardName(shard) + "/"
}

func deadlinePrefix(queue string, shard int) string {
	return deadlineRoot(queue) + shardName(shard) + "/"
}

// indexKeyFor returns the marker key a pending task belongs under: under
// index/deadline/ when it has a deadline, else under index/ready/, in
// the folder of its priority (priorityRoot).
func indexKeyFor(t *Task, shards int) string {
	shard := shardName(shardOf(t.ID, shards)) + "/"
	if t.ExpiresAt != nil {
		return priorityRoot(deadlineRoot(t.Queue), t.priority()) + shard + keyTime(*t.ExpiresAt) + "_" + keyTime(t.AvailableAt) + "_" + t.ID
	}
	return priorityRoot(readyRoot(t.Queue), t.priority()) + shard + keyTime(t.AvailableAt) + "_" + t.ID
}

// indexRootOf returns the claim index root (deadlineRoot, readyRoot, or
// the folder of a priority in one, priorityRoot) a marker key is under,
// or "".
func indexRootOf(key string) string {
	rest, ok := strings.CutPrefix(key, prefixQueues)
	if !ok {
		return ""
	}
	name, rest, ok := strings.Cut(rest, "/")
	if !ok {
		return ""
	}
	rest, ok = strings.CutPrefix(rest, dirIndex)
	if !ok {
		return ""
	}
	for _, dir := range []string{dirDeadline, dirReady} {
		if rest, ok := strings.CutPrefix(rest, dir); ok {
			return indexesPrefix(name) + dir + priorityDirOf(rest)
		}
	}
	return ""
}

// shardDirOf returns the shard folder a marker key is in (its key up to
// and including the shard component).
func shardDirOf(key string) string { return key[:strings.LastIndexByte(key, '/')+1] }

// lastShard reports whether dir, a shard's folder, is the last of shards
// (or past it): nothing of the index sorts after it.
func lastShard(dir string, shards int) bool {
	name := dir[:len(dir)-1]
	n, err := strconv.ParseInt(name[strings.LastIndexByte(name, '/')+1:], 16, 64)
	return err == nil && int(n) >= shards-1
}

// afterDir is a start-after key past every key in dir: the names in a
// shard's folder start with a digit, and the shards' folders of an index
// root are hex digits, which all sort below '~'.
func afterDir(dir string) string { return dir + "~" }

// leaseKeyFor returns the marker key of a running task parked by the sweep
// until its lease expires.
func leaseKeyFor(queue, id string, leaseExpiresAt time.Time) string {
	return sweepKey(leaseExpiresAt, sweepLease, queue, id)
}

// sweepKey returns a key of the sweep index.
func sweepKey(at time.Time, kind, queue, id string) string {
	return prefixSweep + keyTime(at) + "_" + kind + "_" + queue + "." + id
}

// outboxKey returns the outbox entry of a transition of t (at t.UpdatedAt).
func outboxKey(t *Task) string { return sweepKey(t.UpdatedAt, sweepEvent, t.Queue, t.ID) }

// wakeKey returns the wake-up of a queue's deadline index for the minute
// holding at: sweep/wake/{minute}_{queue}.
func wakeKey(queue string, at time.Time) string {
	return prefixWake + keyTime(at.Truncate(time.Minute)) + "_" + queue
}

// wakeEntry is a parsed wake-up: from at on, the sweep reads the head of
// queue's deadline index.
type wakeEntry struct {
	key   string
	at    time.Time
	queue string
}

// parseWakeKey parses a sweep/wake/ key. It returns false for anything
// else, which the sweep skips.
func parseWakeKey(key string) (wakeEntry, bool) {
	rest, ok := strings.CutPrefix(key, prefixWake)
	if !ok {
		return wakeEntry{}, false
	}
	ts, name, ok := strings.Cut(rest, "_")
	if !ok || !reQueue.MatchString(name) {
		return wakeEntry{}, false
	}
	at, err := parseKeyTime(ts)
	if err != nil {
		return wakeEntry{}, false
	}
	return wakeEntry{key: key, at: at, queue: name}, true
}

// queueOfKey returns the queue of a key under q/{queue}/, or "".
func queueOfKey(key string) string {
	rest, ok := strings.CutPrefix(key, prefixQueues)
	if !ok {
		return ""
	}
	name, _, _ := strings.Cut(rest, "/")
	return name
}

// indexedStatus reports whether tasks in status s have a status marker:
// the rare ones, failed (dead-lettered), expired and cancelled. Completed
// is the common end and pending and running move too often; listing them
// scans the queue's records, a bounded number per call.
func indexedStatus(s Status) bool {
	return s == StatusFailed || s == StatusExpired || s == StatusCancelled
}

// statusKey returns the status marker of a task in an indexed status, or
// "" for any other status: q/{queue}/status/{status}/{id}.
func statusKey(t *Task) string {
	if !indexedStatus(t.Status) {
		return ""
	}
	return statusPrefix(t.Status, t.Queue) + t.ID
}

// statusPrefix returns the prefix of the status markers of status in queue.
func statusPrefix(status Status, queue string) string {
	return QueuePrefix(queue) + dirStatus + string(status) + "/"
}

// childKey returns the marker that lists a child under its parent while
// the child is not terminal: q/{queue}/children/{parent_id}/{child_id}.
// A parent and its children are in one queue.
func childKey(queue, parentID, childID string) string {
	return childrenPrefix(queue, parentID) + childID
}

func childrenPrefix(queue, parentID string) string {
	return QueuePrefix(queue) + dirChildren + parentID + "/"
}

// parentFlagKey returns the flag that a task has (or had) children:
// q/{queue}/children/{parent_id}.flag, outside the prefix of its
// children's markers (and not named like it: a file-backed server such as
// versitygw cannot hold both "a" and "a/b"). The sweep HEADs it (a
// GET-class request) before it LISTs the children of an expired task, so
// that expiring a task without children costs no LIST.
func parentFlagKey(queue, parentID string) string {
	return QueuePrefix(queue) + dirChildren + parentID + ".flag"
}

// ArtifactPrefix returns the prefix under which a task's artifacts live.
func ArtifactPrefix(queue, taskID string) string {
	return QueuePrefix(queue) + dirArtifacts + taskID + "/"
}

// ArtifactKey returns the key of one artifact of a task. Every part must
// have been validated (ValidateQueueName, ValidateID, ValidateArtifactName).
func ArtifactKey(queue, taskID, name string) string { return ArtifactPrefix(queue, taskID) + name }

// DedupKey returns the key of the pointer that holds a dedup key in a queue.
func DedupKey(queue, dedupKey string) string {
	sum := sha256.Sum256([]byte(dedupKey))
	return QueuePrefix(queue) + dirDedup + hex.EncodeToString(sum[:])
}

// waitPrefix and waitKey are a queue's wait holds (waits.go).
func waitPrefix(queue string) string { return QueuePrefix(queue) + dirWaits }

func waitKey(queue string, n int) string { return fmt.Sprintf("%s%04d", waitPrefix(queue), n) }

// slotPrefix and slotKey are a queue's concurrency slots (side_slot.go).
func slotPrefix(queue string) string { return QueuePrefix(queue) + dirSlots }

func slotKey(queue string, n int) string { return fmt.Sprintf("%s%04d", slotPrefix(queue), n) }

// SchedulesPrefix returns the folder of a queue's schedules.
func SchedulesPrefix(queue string) string { return QueuePrefix(queue) + dirSchedules }

// ScheduleKey returns the key of a schedule's definition:
// q/{queue}/schedules/{id}.json. The id must have been validated
// (schedule.ValidateID).
func ScheduleKey(queue, id string) string { return SchedulesPrefix(queue) + id + ".json" }

// ScheduleDir returns the folder of a schedule's state and history:
// q/{queue}/schedules/{id}/.
func ScheduleDir(queue, id string) string { return SchedulesPrefix(queue) + id + "/" }

// ScheduleStateKey returns the key of a schedule's run state.
func ScheduleStateKey(queue, id string) string { return ScheduleDir(queue, id) + "state.json" }

// ScheduleHistoryPrefix returns the prefix of a schedule's fire history.
func ScheduleHistoryPrefix(queue, id string) string { return ScheduleDir(queue, id) + "history/" }

// DueKey returns a key of the tick's due index:
// due/{at}_{queue}.{schedule_id}_{rev}.
func DueKey(at time.Time, queue, id string, rev int64) string {
	return PrefixDue + keyTime(at) + "_" + queue + "." + id + "_" + strconv.FormatInt(rev, 10)
}

// ParseDueKey parses a key DueKey made; ok is false for anything else.
// validID checks the schedule id.
func ParseDueKey(key string, validID func(string) bool) (at time.Time, queue, id string, rev int64, ok bool) {
	rest, found := strings.CutPrefix(key, PrefixDue)
	if !found || len(rest) < len(keyTimeLayout)+6 || rest[len(keyTimeLayout)] != '_' {
		return time.Time{}, "", "", 0, false
	}
	at, err := parseKeyTime(rest[:len(keyTimeLayout)])
	if err != nil {
		return time.Time{}, "", "", 0, false
	}
	rest = rest[len(keyTimeLayout)+1:]
	i := strings.LastIndexByte(rest, '_')
	if i < 0 {
		return time.Time{}, "", "", 0, false
	}
	rev, err = strconv.ParseInt(rest[i+1:], 10, 64)
	queue, id, found = strings.Cut(rest[:i], ".")
	if err != nil || rev < 0 || !found || !reQueue.MatchString(queue) || !validID(id) {
		return time.Time{}, "", "", 0, false
	}
	return at, queue, id, rev, true
}

// sweepEntry is a parsed key of the sweep index.
type sweepEntry struct {
	key   string
	at    time.Time
	kind  string
	queue string
	id    string
}

// parseSweepKey parses a sweep/ key. It returns false for anything else,
// which the sweep skips.
func parseSweepKey(key string) (sweepEntry, bool) {
	rest, ok := strings.CutPrefix(key, prefixSweep)
	if !ok {
		return sweepEntry{}, false
	}
	parts := strings.SplitN(rest, "_", 3)
	if len(parts) != 3 {
		return sweepEntry{}, false
	}
	at, err := parseKeyTime(parts[0])
	if err != nil {
		return sweepEntry{}, false
	}
	e := sweepEntry{key: key, at: at, kind: parts[1]}
	switch e.kind {
	case sweepLease, sweepEvent, sweepArtifacts:
	default:
		return sweepEntry{}, false
	}
	e.queue, e.id, ok = strings.Cut(parts[2], ".")
	if !ok || !reQueue.MatchString(e.queue) || validID(e.id) != nil {
		return sweepEntry{}, false
	}
	return e, true
}

// marker is a parsed index key.
type marker struct {
	key       string
	queue     string
	id        string
	available time.Time // zero for lease markers
	expires   time.Time // zero when the marker is not under deadline/
	lease     time.Time // lease markers only
}

// due reports whether the marker's task may be claimable at now, judged
// from the key alone.
func (m marker) due(now time.Time) bool { return !m.available.After(now) }

// expired reports whether the marker's deadline has passed at now.
func (m marker) expired(now time.Time) bool { return !m.expires.IsZero() && !now.Before(m.expires) }

// parseMarker parses an index/ready/, index/deadline/ or sweep/ lease key. It returns false
// for anything else, which callers skip: keys are hints, never trusted.
func parseMarker(key string) (marker, bool) {
	m := marker{key: key}
	if strings.HasPrefix(key, prefixSweep) {
		e, ok := parseSweepKey(key)
		if !ok || e.kind != sweepLease {
			return marker{}, false
		}
		m.lease, m.queue, m.id = e.at, e.queue, e.id
		return m, true
	}
	root := indexRootOf(key)
	if root == "" {
		return marker{}, false
	}
	m.queue = queueOfKey(key)
	shard, base, ok := strings.Cut(key[len(root):], "/")
	if !ok || len(shard) != 1 || !reQueue.MatchString(m.queue) {
		return marker{}, false
	}
	parts := strings.Split(base, "_")
	var err error
	ready := strings.HasPrefix(root[len(indexesPrefix(m.queue)):], dirReady)
	switch {
	case ready && len(parts) == 2:
		m.available, err = parseKeyTime(parts[0])
		m.id = parts[1]
	case !ready && len(parts) == 3:
		if m.expires, err = parseKeyTime(parts[0]); err == nil {
			m.available, err = parseKeyTime(parts[1])
		}
		m.id = parts[2]
	default:
		return marker{}, false
	}
	if err != nil || validID(m.id) != nil {
		return marker{}, false
	}
	return m, true
}

// recordPrefixes returns the prefixes that hold the records of one queue
// and nothing else, for counting them with LISTs (QueueCounts.Completed):
// its records' folder, every record shard.
func recordPrefixes(queue string, shards int) []string { return []string{tasksPrefix(queue)} }
