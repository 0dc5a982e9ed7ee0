package schedule

import (
	"regexp"
	"strings"
	"time"

	"github.com/s3q/s3q/shared/internal/clip"
	"github.com/s3q/s3q/shared/queue"
)

// The bucket layout (shared/queue/keys.go builds every key). A schedule
// lives in the folder of the queue it fires into, and its id is unique
// within that queue only:
//
//	q/{queue}/schedules/{id}.json                 the definition
//	q/{queue}/schedules/{id}/state.json           run state, changed only by compare-and-swap
//	q/{queue}/schedules/{id}/history/{t}          one fire (t = fire time; "{t}_trigger" for Trigger)
//	due/{t}_{queue}.{id}_{rev}                    empty marker: look at the schedule at or after t
//
// Times in keys are fixed-width UTC with microseconds, so lexical order is
// time order and "what is due" is a LIST from the start of due/ that stops
// at the first future key. rev is the state revision that wrote the
// marker: it makes every marker key unique, so deleting one can never
// remove a marker a later state names.
//
// Inside the package a schedule is named by its reference, {queue}/{id}
// (ref), which every key function takes.
const (
	historyDir    = "history/"
	triggerSuffix = "_trigger"
)

// ref returns the reference of schedule id in queue: {queue}/{id}.
func ref(queueName, id string) string { return queueName + "/" + id }

// splitRef splits a reference made by ref; a bare id is in the default
// queue.
func splitRef(r string) (queueName, id string) {
	queueName, id, ok := strings.Cut(r, "/")
	if !ok {
		return queue.DefaultQueue, r
	}
	return queueName, id
}

// ref returns the definition's reference.
func (d *Definition) ref() string { return ref(d.Queue, d.ID) }

// ref returns the state's reference.
func (st *State) ref() string { return ref(st.Queue, st.ScheduleID) }

// keyTimeLayout is the fixed-width time format of keys (as in shared/queue):
// 20260128T170000.000000Z.
const keyTimeLayout = "20060102T150405.000000Z"

func keyTime(t time.Time) string { return t.UTC().Format(keyTimeLayout) }

// MaxIDBytes is the longest schedule id.
const MaxIDBytes = 128

var reID = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// ValidateID checks a schedule id before it becomes part of a key: 1-128
// of A-Z a-z 0-9 _ -. So no "/", no "..", no control characters.
func ValidateID(id string) error {
	if !reID.MatchString(id) {
		if id == "" {
			return invalid("id", "is required")
		}
		return invalid("id", "%q is not a schedule id: use 1-%d of A-Z a-z 0-9 _ -", clip.Input(id), MaxIDBytes)
	}
	return nil
}

// DefinitionKey returns the key of a schedule's definition.
func DefinitionKey(r string) string { return queue.ScheduleKey(splitRef(r)) }

// StateKey returns the key of a schedule's run state.
func StateKey(r string) string { return queue.ScheduleStateKey(splitRef(r)) }

// HistoryPrefix returns the prefix of a schedule's fire history.
func HistoryPrefix(r string) string { return queue.ScheduleHistoryPrefix(splitRef(r)) }

func historyKey(r string, fireTime time.Time, trigger bool) string {
	k := HistoryPrefix(r) + keyTime(fireTime)
	if trigger {
		k += triggerSuffix
	}
	return k
}

// DuePrefix is the prefix of the due index.
const DuePrefix = queue.PrefixDue

// DueKey returns the key of the due marker that makes the tick look at
// schedule r (a reference) at or after at, written by state revision rev.
func DueKey(at time.Time, r string, rev int64) string { return dueKey(at, r, rev) }

func dueKey(at time.Time, r string, rev int64) string {
	q, id := splitRef(r)
	return queue.DueKey(at, q, id, rev)
}

// dueMarker is a parsed due/ key; id is the schedule's reference.
type dueMarker struct {
	key string
	at  time.Time
	id  string
	rev int64
}

// parseDueKey parses a due/ key; ok is false for anything else.
func parseDueKey(key string) (dueMarker, bool) {
	at, q, id, rev, ok := queue.ParseDueKey(key, reID.MatchString)
	if !ok {
		return dueMarker{}, false
	}
	return dueMarker{key: key, at: at, id: ref(q, id), rev: rev}, true
}

// idFromDefinitionKey returns the id of a definition key below prefix
// (queue.SchedulesPrefix), or "".
func idFromDefinitionKey(prefix, key string) string {
	rest, ok := strings.CutPrefix(key, prefix)
	if !ok {
		return ""
	}
	id, ok := strings.CutSuffix(rest, ".json")
	if !ok || !reID.MatchString(id) {
		return ""
	}
	return id
}

// subtreeOf returns the id whose folder below prefix holds key, or "".
func subtreeOf(prefix, key string) string {
	rest, ok := strings.CutPrefix(key, prefix)
	if !ok {
		return ""
	}
	i := strings.IndexByte(rest, '/')
	if i < 0 {
		return ""
	}
	return rest[:i]
}

// afterSubtree is a start-after key past every key of a schedule's
// folder (their next characters are all below '~').
func afterSubtree(r string) string { return queue.ScheduleDir(splitRef(r)) + "~" }

var reHistoryCursor = regexp.MustCompile(`^[0-9]{8}T[0-9]{6}\.[0-9]{6}Z(_trigger)?$`)
