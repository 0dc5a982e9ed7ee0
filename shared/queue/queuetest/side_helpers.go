package queuetest

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/store/storefault"
)

// The side record cases (runSide*, each in the cases file of its
// record's behaviour: doc.go): one function per kind of record
// written beside a task record (shared/queue/side_*.go). Each proves the
// protocol for its kind: the side record exists exactly while its record
// needs it; written before the record's write, it is a harmless stale
// hint when that write fails, and the reader that meets it repairs it; a
// lost answer on its own write is recognised (nothing doubled); and of
// two writers racing from one version, exactly one wins and its side
// record is there.

func runSides(t *testing.T, f Factory) {
	for _, kind := range []struct {
		name string
		run  func(*testing.T, Factory)
	}{
		{"dedup_pointer", runSideDedup}, {"claim_marker", runSideMarker}, {"outbox_entry", runSideOutbox},
		{"child_hints", runSideChild}, {"status_entry", runSideStatus}, {"concurrency_slot", runSideSlot},
		{"artifacts_entry", runSideArtifacts},
	} {
		t.Run(kind.name, func(t *testing.T) { kind.run(t, f) })
	}
}

// recordWriteFails runs fn while every write of a task record of the
// named queue fails unapplied (a store that refuses it, as after a crash
// of the writer at that point): the side records written before it land.
// It checks that fn failed, that the record of ref (when it existed) is
// unchanged, and that the failure hit a record write.
func recordWriteFails(t testing.TB, e *env, fs *storefault.Store, name, ref string, fn func() error) {
	t.Helper()
	var before []byte
	if ref != "" {
		before = e.raw(ref)
	}
	fs.FailMatching("", "q/"+name+"/tasks/", storefault.FailBefore, 1000)
	err := fn()
	fs.Disarm()
	if fs.Hits() == 0 {
		t.Fatalf("no record write was made (err %v)", err)
	}
	if err == nil {
		t.Fatal("the transition succeeded though its record write failed")
	}
	if ref != "" && !bytes.Equal(e.raw(ref), before) {
		t.Fatalf("the record changed though its write failed:\n%s\nwas\n%s", e.raw(ref), before)
	}
}

// race runs fns at once, each on its own goroutine, and returns their
// errors in order.
func race(fns ...func() error) []error {
	errs := make([]error, len(fns))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, fn := range fns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = fn()
		}()
	}
	close(start)
	wg.Wait()
	return errs
}

// oneWinner fails unless exactly one of errs is nil, and returns its
// index.
func oneWinner(t testing.TB, errs []error) int {
	t.Helper()
	win := -1
	for i, err := range errs {
		if err != nil {
			continue
		}
		if win >= 0 {
			t.Fatalf("writers %d and %d both won (errors %v)", win, i, errs)
		}
		win = i
	}
	if win < 0 {
		t.Fatalf("no writer won: %v", errs)
	}
	return win
}

// cached returns a fresh process that has read ref, so that its next
// transition of the task starts from the version read now (a live
// record is cached; see shared/queue/recs.go).
func (e *env) cached(ref string) *queue.Queue {
	e.t.Helper()
	q := e.reopen()
	if _, err := q.Get(ctx, ref); err != nil {
		e.t.Fatal(err)
	}
	return q
}

// taskIDIn returns the task a side record at key names (a slot, a dedup
// pointer), or "" when it names none (free).
func (e *env) taskIDIn(key string) string {
	e.t.Helper()
	obj, err := e.s.Get(ctx, key)
	if err != nil {
		e.t.Fatalf("get %s: %v", key, err)
	}
	var v struct {
		TaskID string `json:"task_id"`
	}
	_ = json.Unmarshal(obj.Body, &v)
	return v.TaskID
}

// raceRetries retries the tasks refs at once, each from a process of its
// own, and returns the index of the one retry that won.
func (e *env) raceRetries(now time.Time, refs ...string) int {
	e.t.Helper()
	fns := make([]func() error, len(refs))
	for i, ref := range refs {
		q := e.reopen()
		fns[i] = func() error { _, err := q.Retry(ctx, ref, now); return err }
	}
	return oneWinner(e.t, race(fns...))
}

// wantEvents sweeps at now and fails unless the sweep published n
// events, one per task; it returns them by task.
func (e *env) wantEvents(now time.Time, n int) map[string]queue.Event {
	e.t.Helper()
	pub := &recorder{}
	e.sweep(now, pub)
	evs := byTask(e.t, pub.take())
	if len(evs) != n {
		e.t.Fatalf("the sweep at %s published %d events, want %d", now.Format(time.RFC3339), len(evs), n)
	}
	return evs
}

// outbox returns the outbox entries of the sweep index.
func (e *env) outbox() []string {
	var out []string
	for _, k := range e.keys("sweep/") {
		if strings.Contains(k, "_event_") {
			out = append(out, k)
		}
	}
	return out
}

// wantKeyCount fails unless there are n keys in keys.
func wantKeyCount(t testing.TB, what string, keys []string, n int) {
	t.Helper()
	if len(keys) != n {
		t.Fatalf("%d %s, want %d: %v", len(keys), what, n, keys)
	}
}
