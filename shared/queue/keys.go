package queue

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"strings"
	"time"
)

// The bucket layout (DESIGN.md §7). Every index key sorts by time: a
// fixed-width UTC timestamp comes first, so lexical order is time order
// and "what is due now" is a LIST from the start of a prefix.
const (
	prefixTasks    = "tasks/"
	prefixReady    = "ready/"
	prefixDeadline = "deadline/"
	prefixLeases   = "leases/"
	prefixDedup    = "dedup/"
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

// leaseKeyFor returns the marker key of a running task parked by lease expiry.
func leaseKeyFor(id string, leaseExpiresAt time.Time) string {
	return prefixLeases + keyTime(leaseExpiresAt) + "_" + id
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

// parseMarker parses a ready/, deadline/ or leases/ key. It returns false
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
	case strings.HasPrefix(key, prefixLeases) && len(parts) == 2:
		m.lease, err = parseKeyTime(parts[0])
		m.id = parts[1]
	default:
		return marker{}, false
	}
	if err != nil || validID(m.id) != nil {
		return marker{}, false
	}
	return m, true
}
