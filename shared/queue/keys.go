package queue

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"strings"
	"time"
)

// The bucket layout. Every index key sorts by time: a
// fixed-width UTC timestamp comes first, so lexical order is time order
// and "what is due now" is a LIST from the start of a prefix.
//
//	tasks/{id}.json                          the record
//	ready/{queue}/{shard}/{avail}_{id}       pending, no deadline
//	deadline/{queue}/{shard}/{exp}_{avail}_{id}
//	                                         pending with a deadline (the marker stays while it runs)
//	dedup/{queue}/{sha256(key)}              dedup pointer
//	sweep/{time}_{kind}_{subject}            the sweep index, one LIST reads its head:
//	  sweep/{lease_exp}_lease_{id}           a running task parked by the sweep (its index_key)
//	  sweep/{at}_event_{id}                  outbox: follow-up work owed since a transition at {at}
//	  sweep/{gc_at}_artifacts_{id}           the task's artifacts fall due for deletion
//	  sweep/20000101T000000.000000Z_queue_{name}   the old queue registry: read once as a wake-up, then deleted
//	sweep/wake/{minute}_{queue}              wake-up: the queue may hold a deadline/ marker due from {minute}
//	status/{status}/{queue}/{id}             a task in a rare status (failed, expired, cancelled)
//	children/{parent_id}.flag                the task has (had) children
//	children/{parent_id}/{child_id}          a child that is not terminal
//	artifacts/{id}/{name}                    artifacts (presigned URLs)
//	queues/{name}.json                       a declared queue (queues.go); {} once deleted
//	slots/{queue}/{n}                        a concurrency slot of a queue with max_concurrency (slots.go)
//	push/{queue}/runner.json                 the dispatch runner lease of a push queue (package dispatch)
const (
	prefixTasks    = "tasks/"
	prefixReady    = "ready/"
	prefixDeadline = "deadline/"
	prefixDedup    = "dedup/"
	// prefixSweep is the sweep index: every key is {time}_{kind}_{subject}
	// and sorts by time, so one LIST from the start reads the head of all
	// the sweep's work at once (parked leases, the event outbox, artifact
	// deletion, and the queue registry, which sorts first).
	prefixSweep = "sweep/"
	// prefixWake holds the wake-ups of the deadline index: a key per
	// queue and minute in which one of its deadline/ markers falls due,
	// written before the marker. It sorts after every time key of
	// prefixSweep (a digit), so a LIST of the sweep index's head never
	// reads into it.
	prefixWake = "sweep/wake/"
	// prefixStatus is the index of the rare statuses, so that listing
	// failed, expired or cancelled tasks reads them and not every record.
	prefixStatus    = "status/"
	prefixChildren  = "children/"
	prefixArtifacts = "artifacts/"
)

// DispatchRunnerKey is the key of a push queue's dispatch runner lease:
// the one dispatch run that stays with the queue while its next task is
// due soon (package dispatch). The core never reads it.
func DispatchRunnerKey(queue string) string { return "push/" + queue + "/runner.json" }

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
	// sweepQueue is the old queue registry (one key per queue ever
	// submitted to, at minTime). No longer written: the sweep reads each
	// as a wake-up of its queue and deletes it.
	sweepQueue = "queue"
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

func keyTime(t time.Time) string { return t.UTC().Format(keyTimeLayout) }

func parseKeyTime(s string) (time.Time, error) { return time.Parse(keyTimeLayout, s) }

// TaskKey returns the key of a task record.
func TaskKey(id string) string { return prefixTasks + id + ".json" }

// taskIDFromKey returns the id of tasks/{id}.json, or "" for any other key.
func taskIDFromKey(key string) string {
	if !strings.HasPrefix(key, prefixTasks) || !strings.HasSuffix(key, ".json") {
		return ""
	}
	id := strings.TrimSuffix(strings.TrimPrefix(key, prefixTasks), ".json")
	if validID(id) != nil {
		return ""
	}
	return id
}

// shardOf spreads a queue's markers over n prefixes by a hash of the id.
func shardOf(id string, n int) int {
	if n <= 1 {
		return 0
	}
	h := fnv.New32a()
	h.Write([]byte(id))
	return int(h.Sum32() % uint32(n))
}

func readyPrefix(queue string, shard int) string {
	return fmt.Sprintf("%s%s/%d/", prefixReady, queue, shard)
}

func deadlinePrefix(queue string, shard int) string {
	return fmt.Sprintf("%s%s/%d/", prefixDeadline, queue, shard)
}

// indexKeyFor returns the marker key a pending task belongs under: under
// deadline/ when it has a deadline, else under ready/.
func indexKeyFor(t *Task, shards int) string {
	shard := shardOf(t.ID, shards)
	if t.ExpiresAt != nil {
		return deadlinePrefix(t.Queue, shard) + keyTime(*t.ExpiresAt) + "_" + keyTime(t.AvailableAt) + "_" + t.ID
	}
	return readyPrefix(t.Queue, shard) + keyTime(t.AvailableAt) + "_" + t.ID
}

// leaseKeyFor returns the marker key of a running task parked by the sweep
// until its lease expires.
func leaseKeyFor(id string, leaseExpiresAt time.Time) string {
	return sweepKey(leaseExpiresAt, sweepLease, id)
}

// sweepKey returns a key of the sweep index.
func sweepKey(at time.Time, kind, subject string) string {
	return prefixSweep + keyTime(at) + "_" + kind + "_" + subject
}

// outboxKey returns the outbox entry of a transition of t (at t.UpdatedAt).
func outboxKey(t *Task) string { return sweepKey(t.UpdatedAt, sweepEvent, t.ID) }

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

// queueOfMarker returns the queue of a deadline/ or ready/ marker key.
func queueOfMarker(key string) string {
	for _, p := range []string{prefixDeadline, prefixReady} {
		if rest, ok := strings.CutPrefix(key, p); ok {
			name, _, _ := strings.Cut(rest, "/")
			return name
		}
	}
	return ""
}

// indexedStatus reports whether tasks in status s have a status/ marker:
// the rare ones, failed (dead-lettered), expired and cancelled. Completed
// is the common end and pending and running move too often; listing them
// scans the records, a bounded number per call.
func indexedStatus(s Status) bool {
	return s == StatusFailed || s == StatusExpired || s == StatusCancelled
}

// statusKey returns the status/ marker of a task in an indexed status, or
// "" for any other status: status/{status}/{queue}/{id}.
func statusKey(t *Task) string {
	if !indexedStatus(t.Status) {
		return ""
	}
	return statusPrefix(t.Status, t.Queue) + t.ID
}

// statusPrefix returns the prefix of the status/ markers of status in
// queue, or of every queue when queue is "".
func statusPrefix(status Status, queue string) string {
	if queue == "" {
		return prefixStatus + string(status) + "/"
	}
	return prefixStatus + string(status) + "/" + queue + "/"
}

// childKey returns the marker that lists a child under its parent while
// the child is not terminal: children/{parent_id}/{child_id}.
func childKey(parentID, childID string) string {
	return prefixChildren + parentID + "/" + childID
}

func childrenPrefix(parentID string) string { return prefixChildren + parentID + "/" }

// parentFlagKey returns the flag that a task has (or had) children:
// children/{parent_id}.flag, outside the prefix of its children's markers
// (and not named like it: a file-backed server such as versitygw cannot
// hold both "a" and "a/b"). The sweep HEADs it (a GET-class request)
// before it LISTs the children of an expired task, so that expiring a
// task without children costs no LIST.
func parentFlagKey(parentID string) string { return prefixChildren + parentID + ".flag" }

// ArtifactPrefix returns the prefix under which a task's artifacts live.
func ArtifactPrefix(taskID string) string { return prefixArtifacts + taskID + "/" }

// ArtifactKey returns the key of one artifact of a task. Both parts must
// have been validated (ValidateID, ValidateArtifactName).
func ArtifactKey(taskID, name string) string { return ArtifactPrefix(taskID) + name }

// sweepEntry is a parsed key of the sweep index.
type sweepEntry struct {
	key     string
	at      time.Time
	kind    string
	subject string // a task id, or a queue name for sweepQueue
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
	e := sweepEntry{key: key, at: at, kind: parts[1], subject: parts[2]}
	switch e.kind {
	case sweepQueue:
		if !reQueue.MatchString(e.subject) {
			return sweepEntry{}, false
		}
	case sweepLease, sweepEvent, sweepArtifacts:
		if validID(e.subject) != nil {
			return sweepEntry{}, false
		}
	default:
		return sweepEntry{}, false
	}
	return e, true
}

// DedupKey returns the key of the pointer that holds a dedup key in a queue.
func DedupKey(queue, dedupKey string) string {
	sum := sha256.Sum256([]byte(dedupKey))
	return prefixDedup + queue + "/" + hex.EncodeToString(sum[:])
}

// marker is a parsed index key.
type marker struct {
	key       string
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

// parseMarker parses a ready/, deadline/ or sweep/ lease key. It returns false
// for anything else, which callers skip: keys are hints, never trusted.
func parseMarker(key string) (marker, bool) {
	m := marker{key: key}
	base := key[strings.LastIndexByte(key, '/')+1:]
	parts := strings.Split(base, "_")
	var err error
	switch {
	case strings.HasPrefix(key, prefixReady) && len(parts) == 2:
		m.available, err = parseKeyTime(parts[0])
		m.id = parts[1]
	case strings.HasPrefix(key, prefixDeadline) && len(parts) == 3:
		if m.expires, err = parseKeyTime(parts[0]); err == nil {
			m.available, err = parseKeyTime(parts[1])
		}
		m.id = parts[2]
	case strings.HasPrefix(key, prefixSweep):
		e, ok := parseSweepKey(key)
		if !ok || e.kind != sweepLease {
			return marker{}, false
		}
		m.lease, m.id = e.at, e.subject
	default:
		return marker{}, false
	}
	if err != nil || validID(m.id) != nil {
		return marker{}, false
	}
	return m, true
}

// claimIndexPrefixes returns the prefixes of a queue's claim indexes that
// hold its live tasks' markers, for counting them with LISTs: deadline/
// then ready/, per shard.
func claimIndexPrefixes(queue string, shards int) []string {
	var out []string
	for shard := 0; shard < shards; shard++ {
		out = append(out, deadlinePrefix(queue, shard), readyPrefix(queue, shard))
	}
	return out
}

// recordPrefixes returns the prefixes that hold the records of one queue
// and nothing else, for counting them with LISTs (QueueCounts.Completed);
// none in this layout, where every queue's records share tasks/. A layout
// with a folder per queue returns its record prefix (one per shard).
func recordPrefixes(queue string, shards int) []string { return nil }
