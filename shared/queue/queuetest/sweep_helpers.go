package queuetest

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/store"
)

// recorder is an EventPublisher that keeps what it delivers. fail, when
// set, decides per event whether delivery fails; callErr fails the whole
// call.
type recorder struct {
	mu      sync.Mutex
	events  []queue.Event
	fail    func(ev queue.Event) error
	callErr error
	calls   int
}

func (r *recorder) Publish(_ context.Context, evs []queue.Event) ([]error, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	if r.callErr != nil {
		return nil, r.callErr
	}
	errs := make([]error, len(evs))
	for i, ev := range evs {
		if r.fail != nil {
			if errs[i] = r.fail(ev); errs[i] != nil {
				continue
			}
		}
		r.events = append(r.events, ev)
	}
	return errs, nil
}

// take returns the events delivered so far and forgets them.
func (r *recorder) take() []queue.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.events
	r.events = nil
	return out
}

// byTask indexes events by task id, failing on a task with two events of
// one type.
func byTask(t testing.TB, evs []queue.Event) map[string]queue.Event {
	t.Helper()
	out := map[string]queue.Event{}
	for _, ev := range evs {
		if prev, ok := out[ev.TaskID]; ok && prev.DetailType == ev.DetailType {
			t.Fatalf("two %q events for task %s", ev.DetailType, ev.TaskID)
		}
		out[ev.TaskID] = ev
	}
	return out
}

// detail decodes an event's detail into a map, to check its exact keys.
func detail(t testing.TB, ev queue.Event) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(ev.Detail, &m); err != nil {
		t.Fatalf("event detail %s: %v", ev.Detail, err)
	}
	return m
}

// sweep runs one sweep of a fresh process at now, publishing to pub.
func (e *env) sweep(now time.Time, pub queue.EventPublisher) queue.SweepReport {
	e.t.Helper()
	opts := queue.SweepOptions{}
	if pub != nil {
		opts.Publisher = pub
	}
	rep, err := e.reopen().Sweep(ctx, now, opts)
	if err != nil {
		e.t.Fatalf("sweep at %s: %v", now.Format(time.RFC3339), err)
	}
	return rep
}

// rewrite changes a stored record in place, as a state the core only
// reaches through a crash or an old version would leave it.
func (e *env) rewrite(id string, fn func(t *queue.Task)) {
	e.t.Helper()
	key := e.recordKey(id)
	obj, err := e.s.Get(ctx, key)
	if err != nil {
		e.t.Fatal(err)
	}
	var task queue.Task
	if err := json.Unmarshal(obj.Body, &task); err != nil {
		e.t.Fatal(err)
	}
	fn(&task)
	body, _ := json.Marshal(task)
	if _, err := e.s.PutIfMatch(ctx, key, body, obj.ETag); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) put(key string) {
	e.t.Helper()
	if _, err := e.s.Put(ctx, key, nil); err != nil {
		e.t.Fatal(err)
	}
}

// putMany writes empty objects at keys, a few at a time.
func (e *env) putMany(keys []string) {
	e.t.Helper()
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for _, k := range keys {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if _, err := e.s.Put(ctx, k, nil); err != nil {
				mu.Lock()
				first = errors.Join(first, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if first != nil {
		e.t.Fatal(first)
	}
}

// keyTime formats a time as index keys do.
func keyTime(t time.Time) string { return t.UTC().Format("20060102T150405.000000Z") }

// counted returns a Queue over a counting view of the env's store.
func (e *env) counted() (*queue.Queue, *store.Counting) {
	c := store.NewCounting(e.s)
	return e.open(c), c
}

// count returns how many events of detail type dt were delivered for
// task id (and not yet taken).
func (r *recorder) count(id, dt string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	id = id[strings.LastIndexByte(id, '/')+1:] // a reference's id
	for _, ev := range r.events {
		if ev.TaskID == id && ev.DetailType == dt {
			n++
		}
	}
	return n
}
