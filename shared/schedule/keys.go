package schedule

import (
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/s3q/s3q/shared/internal/clip"
)

// The bucket layout:
//
//	schedules/{id}.json                 the definition
//	schedules/{id}/state.json           run state, changed only by compare-and-swap
//	schedules/{id}/history/{t}          one fire (t = fire time; "{t}_trigger" for Trigger)
//	due/{t}_{id}_{rev}                  empty marker: look at schedule id at or after t
//
// Times in keys are fixed-width UTC with microseconds, so lexical order is
// time order and "what is due" is a LIST from the start of due/ that stops
// at the first future key. rev is the state revision that wrote the
// marker: it makes every marker key unique, so deleting one can never
// remove a marker a later state names.
const (
	prefixSchedules = "schedules/"
	prefixDue       = "due/"
	historyDir      = "/history/"
	triggerSuffix   = "_trigger"
)

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
func DefinitionKey(id string) string { return prefixSchedules + id + ".json" }

// StateKey returns the key of a schedule's run state.
func StateKey(id string) string { return prefixSchedules + id + "/state.json" }

// HistoryPrefix returns the prefix of a schedule's fire history.
func HistoryPrefix(id string) string { return prefixSchedules + id + historyDir }

func historyKey(id string, fireTime time.Time, trigger bool) string {
	k := HistoryPrefix(id) + keyTime(fireTime)
	if trigger {
		k += triggerSuffix
	}
	return k
}

// DuePrefix is the prefix of the due index.
const DuePrefix = prefixDue

// DueKey returns the key of the due marker that makes the tick look at
// schedule id at or after at, written by state revision rev.
func DueKey(at time.Time, id string, rev int64) string { return dueKey(at, id, rev) }

func dueKey(at time.Time, id string, rev int64) string {
	return prefixDue + keyTime(at) + "_" + id + "_" + strconv.FormatInt(rev, 10)
}

// dueMarker is a parsed due/ key.
type dueMarker struct {
	key string
	at  time.Time
	id  string
	rev int64
}

// parseDueKey parses due/{t}_{id}_{rev}; ok is false for anything else.
func parseDueKey(key string) (dueMarker, bool) {
	rest, ok := strings.CutPrefix(key, prefixDue)
	if !ok || len(rest) < len(keyTimeLayout)+4 || rest[len(keyTimeLayout)] != '_' {
		return dueMarker{}, false
	}
	at, err := time.Parse(keyTimeLayout, rest[:len(keyTimeLayout)])
	if err != nil {
		return dueMarker{}, false
	}
	rest = rest[len(keyTimeLayout)+1:]
	i := strings.LastIndexByte(rest, '_')
	if i < 0 {
		return dueMarker{}, false
	}
	rev, err := strconv.ParseInt(rest[i+1:], 10, 64)
	id := rest[:i]
	if err != nil || rev < 0 || !reID.MatchString(id) {
		return dueMarker{}, false
	}
	return dueMarker{key: key, at: at, id: id, rev: rev}, true
}

// idFromDefinitionKey returns the id of schedules/{id}.json, or "".
func idFromDefinitionKey(key string) string {
	rest, ok := strings.CutPrefix(key, prefixSchedules)
	if !ok {
		return ""
	}
	id, ok := strings.CutSuffix(rest, ".json")
	if !ok || !reID.MatchString(id) {
		return ""
	}
	return id
}

// subtreeOf returns the id whose schedules/{id}/ subtree holds key, or "".
func subtreeOf(key string) string {
	rest, ok := strings.CutPrefix(key, prefixSchedules)
	if !ok {
		return ""
	}
	i := strings.IndexByte(rest, '/')
	if i < 0 {
		return ""
	}
	return rest[:i]
}

// afterSubtree is a start-after key past every key of schedules/{id}/
// (their next characters are all below '~').
func afterSubtree(id string) string { return prefixSchedules + id + "/~" }

var reHistoryCursor = regexp.MustCompile(`^[0-9]{8}T[0-9]{6}\.[0-9]{6}Z(_trigger)?$`)
