package dispatch_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/dispatch"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
)

func TestTargetsAreValidatedNamingTheField(t *testing.T) {
	for _, c := range []struct {
		t     queues.Target
		http  bool
		field string
	}{
		{queues.Target{}, false, "target"},
		{queues.Target{Lambda: "f", URL: "https://x"}, false, "target.url"},
		{queues.Target{URL: "http://x/", Secret: "s"}, false, "target.url"},
		{queues.Target{URL: "https://x/"}, false, "target.secret"},
		{queues.Target{Lambda: "f", Secret: "s"}, false, "target.secret"},
	} {
		err := queues.ValidateTarget(c.t, c.http)
		if err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%+v: %v, want it to name %s", c.t, err, c.field)
		}
	}
	if err := queues.ValidateTarget(queues.Target{URL: "http://127.0.0.1:9000/", Secret: "s"}, true); err != nil {
		t.Errorf("http in dev: %v", err)
	}
}

type recorder struct {
	mu  sync.Mutex
	got []dispatch.Wake
}

func (r *recorder) Wake(_ context.Context, w dispatch.Wake) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, w)
}

// fixed is a fixed set of push queues.
type fixed map[string]dispatch.PushQueue

func (f fixed) PushQueues(context.Context, time.Time) ([]dispatch.PushQueue, error) {
	var out []dispatch.PushQueue
	for _, p := range f {
		out = append(out, p)
	}
	return out, nil
}

func (f fixed) PushQueue(_ context.Context, name string, _ time.Time) (dispatch.PushQueue, bool, error) {
	p, ok := f[name]
	return p, ok, nil
}

// A submit wakes dispatch once per push queue, for now, whatever the due
// times of its tasks within the next minute (the woken run stays with the
// queue while its next task is due soon), and a warm container passes on
// at most one wake per queue and second.
func TestSubmitWakesAtMostOncePerQueueAndSecond(t *testing.T) {
	now := time.Date(2026, 1, 28, 9, 0, 0, 0, time.UTC)
	clock := now
	rec := &recorder{}
	w := &dispatch.Limited{Next: rec, Now: func() time.Time { return clock }}
	targets := fixed{"push": {Name: "push", Target: queues.Target{Lambda: "f"}}}
	task := func(q string, avail time.Time, st queue.Status) queue.Task {
		return queue.Task{Queue: q, AvailableAt: avail, Status: st}
	}
	tasks := []queue.Task{
		task("push", now, queue.StatusPending), task("push", now, queue.StatusPending), // one wake
		task("pull", now, queue.StatusPending),                     // not a push queue
		task("push", now, queue.StatusExpired),                     // submitted expired
		task("push", now.Add(2*time.Hour), queue.StatusPending),    // left to the minute rule
		task("push", now.Add(10*time.Second), queue.StatusPending), // served by the same wake
	}
	dispatch.OnSubmit(context.Background(), targets, w, tasks, now, nil)
	if len(rec.got) != 1 || !rec.got[0].At.IsZero() {
		t.Fatalf("wakes %+v", rec.got)
	}
	clock = now.Add(1100 * time.Millisecond)
	dispatch.OnSubmit(context.Background(), targets, w, tasks[5:], clock, nil)
	if len(rec.got) != 2 || !rec.got[1].At.IsZero() {
		t.Fatalf("a second later: wakes %+v", rec.got)
	}
	// Sixty submits a second for a minute, due anywhere in the next
	// minute: sixty wakes, at most one for each second.
	rec.got = nil
	start := now.Add(time.Hour)
	for i := range 3600 {
		clock = start.Add(time.Duration(i) * time.Second / 60)
		dispatch.OnSubmit(context.Background(), targets, w, []queue.Task{task("push", clock.Add(time.Duration(i%60)*time.Second), queue.StatusPending)}, clock, nil)
	}
	if len(rec.got) > 61 {
		t.Fatalf("%d wakes in a minute, want at most one a second", len(rec.got))
	}
	seconds := map[time.Time]bool{}
	for _, wk := range rec.got {
		if wk.At.After(clock.Add(dispatch.MaxWakeDelay)) {
			t.Fatalf("a wake for %s: further ahead than MaxWakeDelay", wk.At)
		}
		if !wk.At.IsZero() {
			if seconds[wk.At] {
				t.Fatalf("two wakes for %s", wk.At)
			}
			seconds[wk.At] = true
		}
	}
}
