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
	if !strings.HasPrefix(key, "deadline/q/") {
		t.Fatalf("key %s", key)
	}
	m, ok := parseMarker(key)
	if !ok || m.id != task.ID || !m.available.Equal(task.AvailableAt) || !m.expires.Equal(exp) {
		t.Fatalf("parseMarker(%s) = %+v, %v", key, m, ok)
	}
	lk := leaseKeyFor(task.ID, kt0)
	if m, ok := parseMarker(lk); !ok || !m.lease.Equal(kt0) || m.id != task.ID {
		t.Fatalf("parseMarker(%s) = %+v, %v", lk, m, ok)
	}
	for _, bad := range []string{"ready/q/0/x", "ready/q/0/20260128T090000.000000Z_../../x", "other/a_b", "deadline/q/0/20260128T090000.000000Z_" + task.ID} {
		if _, ok := parseMarker(bad); ok {
			t.Errorf("parseMarker(%q) accepted", bad)
		}
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
	if !strings.HasPrefix(k, "dedup/q/") || len(k) != len("dedup/q/")+64 {
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
