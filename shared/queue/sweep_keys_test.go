package queue

import (
	"sort"
	"testing"
	"time"
)

func TestSweepKeysParseAndWakeupsSortAfterEveryTime(t *testing.T) {
	id := NewID(kt0)
	keys := []string{
		sweepKey(kt0.Add(time.Hour), sweepLease, "my_queue-1", id),
		sweepKey(kt0, sweepEvent, "my_queue-1", id),
		sweepKey(kt0.Add(time.Minute), sweepArtifacts, "q", id),
		wakeKey("my_queue-1", minTime),
	}
	sorted := append([]string(nil), keys...)
	sort.Strings(sorted)
	if sorted[0] != keys[1] || sorted[1] != keys[2] || sorted[2] != keys[0] || sorted[3] != keys[3] {
		t.Fatalf("order %v", sorted)
	}
	for i, want := range []struct {
		kind, queue string
		at          time.Time
	}{{sweepLease, "my_queue-1", kt0.Add(time.Hour)}, {sweepEvent, "my_queue-1", kt0}, {sweepArtifacts, "q", kt0.Add(time.Minute)}} {
		e, ok := parseSweepKey(keys[i])
		if !ok || e.kind != want.kind || e.queue != want.queue || e.id != id || !e.at.Equal(want.at) {
			t.Fatalf("parseSweepKey(%s) = %+v %v", keys[i], e, ok)
		}
	}
	w, ok := parseWakeKey(wakeKey("my_queue-1", kt0.Add(90*time.Second)))
	if !ok || w.queue != "my_queue-1" || !w.at.Equal(kt0.Add(time.Minute)) {
		t.Fatalf("parseWakeKey = %+v %v", w, ok)
	}
	for _, bad := range []string{"sweep/wake/x_q", "sweep/wake/" + keyTime(kt0) + "_a/b", "sweep/wake/" + keyTime(kt0)} {
		if w, ok := parseWakeKey(bad); ok {
			t.Fatalf("parseWakeKey(%s) = %+v", bad, w)
		}
	}
	for _, bad := range []string{
		wakeKey("q", kt0), "sweep/", "sweep/x_event_q." + id, "sweep/" + keyTime(kt0) + "_other_q." + id,
		"sweep/" + keyTime(kt0) + "_event_q.not-an-id", "sweep/" + keyTime(kt0) + "_event_" + id,
		"sweep/" + keyTime(kt0) + "_event_a/b." + id, "ready/" + keyTime(kt0) + "_event_q." + id,
	} {
		if e, ok := parseSweepKey(bad); ok {
			t.Fatalf("parseSweepKey(%s) = %+v", bad, e)
		}
	}
	if _, ok := parseMarker(sweepKey(kt0, sweepEvent, "q", id)); ok {
		t.Fatal("an outbox entry parsed as an index marker")
	}
}

func TestFollowUpIsDueOnEntryToExpiredOrFailedOrToAnEndWithArtifacts(t *testing.T) {
	later := kt0.Add(time.Hour)
	for _, tc := range []struct {
		cur, next Task
		want      bool
	}{
		{Task{Status: StatusPending}, Task{Status: StatusExpired}, true},
		{Task{}, Task{Status: StatusExpired}, true}, // expired on arrival
		{Task{Status: StatusRunning}, Task{Status: StatusFailed}, true},
		{Task{Status: StatusExpired}, Task{Status: StatusExpired}, false}, // noting the event
		{Task{Status: StatusFailed}, Task{Status: StatusFailed}, false},
		{Task{Status: StatusRunning}, Task{Status: StatusCompleted}, false},
		{Task{Status: StatusRunning}, Task{Status: StatusCompleted, UpdatedAt: kt0, ArtifactsExpireAt: &later}, true},
		{Task{Status: StatusRunning}, Task{Status: StatusCompleted, UpdatedAt: later, ArtifactsExpireAt: &kt0}, false},
		{Task{Status: StatusRunning}, Task{Status: StatusPending}, false},
	} {
		if got := followUpDue(&tc.cur, &tc.next); got != tc.want {
			t.Fatalf("%s -> %s: %v, want %v", tc.cur.Status, tc.next.Status, got, tc.want)
		}
	}
}

func TestCeilMinute(t *testing.T) {
	for in, want := range map[time.Duration]time.Duration{0: 0, time.Microsecond: time.Minute, 59 * time.Second: time.Minute, time.Minute: time.Minute, 61 * time.Second: 2 * time.Minute} {
		if got := ceilMinute(kt0.Add(in)); !got.Equal(kt0.Add(want)) {
			t.Fatalf("ceilMinute(+%s) = %s", in, got)
		}
	}
}
