package deadline_test

import (
	"testing"
	"time"

	"github.com/s3q/s3q/shared/deadline"
	"github.com/s3q/s3q/shared/queue"
)

var t0 = time.Date(2026, 1, 28, 9, 0, 0, 0, time.UTC)

func task(ttl time.Duration) *queue.Task {
	t := &queue.Task{ID: queue.NewID(t0), CreatedAt: t0}
	if ttl >= 0 {
		exp := t0.Add(ttl)
		t.ExpiresAt = &exp
	}
	return t
}

func TestRemainingAndShouldAbort(t *testing.T) {
	tk := task(10 * time.Minute)
	if left, ok := deadline.Remaining(tk, t0.Add(4*time.Minute)); !ok || left != 6*time.Minute {
		t.Fatalf("remaining %s %v", left, ok)
	}
	if left, ok := deadline.Remaining(tk, t0.Add(11*time.Minute)); !ok || left != -time.Minute {
		t.Fatalf("remaining past the deadline %s %v", left, ok)
	}
	if _, ok := deadline.Remaining(task(-1), t0); ok {
		t.Fatal("a task without deadline has remaining time")
	}
	g := deadline.Guard{AbortMargin: time.Minute}
	for _, tc := range []struct {
		at   time.Duration
		want bool
	}{{0, false}, {8*time.Minute + 59*time.Second, false}, {9 * time.Minute, true}, {time.Hour, true}} {
		if got := g.ShouldAbort(tk, t0.Add(tc.at)); got != tc.want {
			t.Fatalf("should abort at +%s = %v", tc.at, got)
		}
	}
	free := task(-1)
	if deadline.ShouldAbort(free, t0.Add(1000*time.Hour), time.Minute) {
		t.Fatal("a task without deadline aborted")
	}
	free.CancelRequested = true
	if !deadline.ShouldAbort(free, t0, 0) {
		t.Fatal("a cancel request does not abort")
	}
}

func TestArtifactTimesAreBoundedByTheDeadline(t *testing.T) {
	g := deadline.Guard{ArtifactTTL: time.Hour}
	short, long, free := task(10*time.Minute), task(48*time.Hour), task(-1)
	if got := g.ArtifactLifetime(short); !got.Equal(t0.Add(10 * time.Minute)) {
		t.Fatalf("lifetime bounded by expires_at: %s", got)
	}
	if got := g.ArtifactLifetime(long); !got.Equal(t0.Add(time.Hour)) {
		t.Fatalf("lifetime bounded by the artifact ttl: %s", got)
	}
	if got := g.ArtifactLifetime(free); !got.Equal(t0.Add(time.Hour)) {
		t.Fatalf("lifetime without deadline: %s", got)
	}
	now := t0.Add(30 * time.Minute)
	if got := g.URLExpiry(long, now); !got.Equal(now.Add(time.Hour)) {
		t.Fatalf("url expiry from now: %s", got)
	}
	if got := g.URLExpiry(short, now.Add(-25*time.Minute)); !got.Equal(t0.Add(10 * time.Minute)) {
		t.Fatalf("url expiry bounded by expires_at: %s", got)
	}
}

func TestWaitUntilStopsAtTheDeadline(t *testing.T) {
	until, first, ok := deadline.WaitUntil(task(10*time.Second), t0, 25*time.Second)
	if !ok || !first || !until.Equal(t0.Add(10*time.Second)) {
		t.Fatalf("%s %v %v", until, first, ok)
	}
	until, first, ok = deadline.WaitUntil(task(time.Hour), t0, 25*time.Second)
	if !ok || first || !until.Equal(t0.Add(25*time.Second)) {
		t.Fatalf("%s %v %v", until, first, ok)
	}
	if _, _, ok := deadline.WaitUntil(task(0), t0, 25*time.Second); ok {
		t.Fatal("a wait on a task past its deadline")
	}
}
