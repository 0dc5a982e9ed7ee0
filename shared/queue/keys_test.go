package queue

import (
	"sort"
	"strings"
	"testing"
	"time"
)

var kt0 = time.Date(2026, 1, 28, 9, 0, 0, 0, time.UTC)

func TestIndexKeysSortByTime(t *testing.T) {
	var keys []string
	var want []string
	for i := 9; i >= 0; i-- {
		task := &Task{ID: NewID(kt0), Queue: "q", AvailableAt: kt0.Add(time.Duration(i) * time.Hour)}
		keys = append(keys, indexKeyFor(task, 1))
	}
	want = append(want, keys...)
	sort.Strings(keys)
	for i := range keys {
		if keys[i] != want[len(want)-1-i] {
			t.Fatalf("lexical order is not time order: %v", keys)
		}
	}
}

func TestParseMarkerReadsWhatIndexKeyForWrites(t *testing.T) {
	exp := kt0.Add(time.Hour)
	task := &Task{ID: NewID(kt0), Queue: "q", AvailableAt: kt0.Add(time.Microsecond), ExpiresAt: &exp}
	key := indexKeyFor(task, 4)
	if !strings.HasPrefix(key, "q/q/index/deadline/") {
		t.Fatalf("key %s", key)
	}
	m, ok := parseMarker(key)
	if !ok || m.id != task.ID || m.queue != "q" || !m.available.Equal(task.AvailableAt) || !m.expires.Equal(exp) {
		t.Fatalf("parseMarker(%s) = %+v, %v", key, m, ok)
	}
	lk := leaseKeyFor("q", task.ID, kt0)
	if m, ok := parseMarker(lk); !ok || !m.lease.Equal(kt0) || m.id != task.ID || m.queue != "q" {
		t.Fatalf("parseMarker(%s) = %+v, %v", lk, m, ok)
	}
	for _, bad := range []string{"q/q/index/ready/0/x", "q/q/index/ready/0/20260128T090000.000000Z_../../x", "other/a_b", "q/q/index/deadline/0/20260128T090000.000000Z_" + task.ID,
		"q/q/index/ready/10/20260128T090000.000000Z_" + task.ID, "q/q/index/ready/20260128T090000.000000Z_" + task.ID, "q/a.b/index/ready/0/20260128T090000.000000Z_" + task.ID,
		"q/q/ready/0/20260128T090000.000000Z_" + task.ID, "q/q/index/0/20260128T090000.000000Z_" + task.ID} { // layout 2, no index
		if _, ok := parseMarker(bad); ok {
			t.Errorf("parseMarker(%q) accepted", bad)
		}
	}
}

func TestEveryKeyOfAQueueIsInItsFolder(t *testing.T) {
	id := NewID(kt0)
	exp := kt0.Add(time.Hour)
	task := &Task{ID: id, Queue: "team-a", AvailableAt: kt0, ExpiresAt: &exp, Status: StatusFailed}
	for _, k := range []string{
		QueueKey("team-a"), TaskKey("team-a", id), indexKeyFor(task, 16), indexKeyFor(&Task{ID: id, Queue: "team-a", AvailableAt: kt0}, 1),
		DedupKey("team-a", "k"), statusKey(task), childKey("team-a", id, id), parentFlagKey("team-a", id),
		slotKey("team-a", 3), ArtifactKey("team-a", id, "out.json"),
		ScheduleKey("team-a", "nightly"), ScheduleStateKey("team-a", "nightly"), ScheduleHistoryPrefix("team-a", "nightly"),
	} {
		if !strings.HasPrefix(k, "q/team-a/") {
			t.Errorf("key %s is outside q/team-a/", k)
		}
	}
	if got := taskIDFromKey("team-a", TaskKey("team-a", id)); got != id {
		t.Fatalf("taskIDFromKey = %q", got)
	}
	if got := taskIDFromKey("team-b", TaskKey("team-a", id)); got != "" {
		t.Fatalf("taskIDFromKey read another queue's key: %q", got)
	}
	at, q, sid, rev, ok := ParseDueKey(DueKey(kt0, "team-a", "night_ly-1", 7), func(s string) bool { return s != "" })
	if !ok || !at.Equal(kt0) || q != "team-a" || sid != "night_ly-1" || rev != 7 {
		t.Fatalf("ParseDueKey = %v %q %q %d %v", at, q, sid, rev, ok)
	}
}

func TestRecordsAndMarkersSpreadOverShards(t *testing.T) {
	ranges := map[string]bool{}
	markers := map[string]bool{}
	for i := 0; i < 1000; i++ {
		id := NewID(kt0.Add(time.Duration(i) * time.Millisecond))
		k := TaskKey("q", id)
		ranges[k[:strings.LastIndexByte(k, '/')+1]] = true
		m := indexKeyFor(&Task{ID: id, Queue: "q", AvailableAt: kt0}, 16)
		markers[shardDirOf(m)] = true
		if one := indexKeyFor(&Task{ID: id, Queue: "q", AvailableAt: kt0}, 1); shardDirOf(one) != "q/q/index/ready/0/" {
			t.Fatalf("one shard: %s", one)
		}
	}
	if len(ranges) != RecordShards || len(markers) != 16 {
		t.Fatalf("records in %d ranges, markers in %d", len(ranges), len(markers))
	}
}

func TestParseRef(t *testing.T) {
	id := NewID(kt0)
	if q, got, err := ParseRef("team-a/"+id, "default"); err != nil || q != "team-a" || got != id {
		t.Fatalf("ParseRef = %q %q %v", q, got, err)
	}
	if q, got, err := ParseRef(id, "default"); err != nil || q != "default" || got != id {
		t.Fatalf("ParseRef(bare) = %q %q %v", q, got, err)
	}
	for _, bad := range []string{"a/b/" + id, "a.b/" + id, "/" + id, "a/", "a/x"} {
		if _, _, err := ParseRef(bad, "default"); err == nil {
			t.Errorf("ParseRef(%q) accepted", bad)
		}
	}
	if _, _, err := ParseRef(id, ""); err == nil {
		t.Error("a bare id with no queue accepted")
	}
}

func TestNewIDIsAValidTimeOrderedUUIDv7(t *testing.T) {
	a, b := NewID(kt0), NewID(kt0.Add(time.Millisecond))
	for _, id := range []string{a, b} {
		if err := ValidateID(id); err != nil {
			t.Fatal(err)
		}
	}
	if a >= b {
		t.Fatalf("ids not time-ordered: %s >= %s", a, b)
	}
	if got := idTime(a); !got.Equal(kt0) {
		t.Fatalf("idTime = %s, want %s", got, kt0)
	}
}

func TestValidationKeepsUnsafeNamesOutOfKeys(t *testing.T) {
	for _, id := range []string{"", "../x", "ABCDEF00-0000-7000-8000-000000000000", strings.Repeat("a", 36), "019c03d4-c268-7ae0-a621-dd697ea2b25/"} {
		if ValidateID(id) == nil {
			t.Errorf("ValidateID(%q) accepted", id)
		}
	}
	for _, q := range []string{"", "a/b", "..", "a..b", "a\x00", strings.Repeat("q", 65), "a.b"} {
		if ValidateQueueName(q) == nil {
			t.Errorf("ValidateQueueName(%q) accepted", q)
		}
	}
	for _, tt := range []string{"", "a/b", "..", "x..y", "a b", strings.Repeat("t", 129)} {
		if ValidateTaskType("task_type", tt) == nil {
			t.Errorf("ValidateTaskType(%q) accepted", tt)
		}
	}
	if ValidateTaskType("task_type", "email.send:v2") != nil || ValidateQueueName("high-priority_1") != nil {
		t.Error("rejected a good name")
	}
}

func TestDedupKeyIsHashedIntoTheKey(t *testing.T) {
	k := DedupKey("q", "../../etc/passwd\x00")
	if !strings.HasPrefix(k, "q/q/dedup/") || len(k) != len("q/q/dedup/")+64 {
		t.Fatalf("DedupKey = %s", k)
	}
}

func TestDerivedIDIsStableAndValid(t *testing.T) {
	a, b := DerivedID(kt0, "sched-1"), DerivedID(kt0, "sched-1")
	if a != b || ValidateID(a) != nil {
		t.Fatalf("DerivedID not stable or not valid: %s %s", a, b)
	}
	if DerivedID(kt0, "sched-2") == a || DerivedID(kt0.Add(time.Minute), "sched-1") == a {
		t.Fatal("different inputs gave the same id")
	}
	if !idTime(a).Equal(kt0) {
		t.Fatalf("timestamp %s", idTime(a))
	}
}
