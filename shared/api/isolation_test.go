package api_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/api"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/schedule"
	"github.com/s3q/s3q/shared/store"
	"github.com/s3q/s3q/shared/store/memstore"
)

// keyRecorder is a store that records, while on, every key a request
// names and every prefix a LIST reads.
type keyRecorder struct {
	store.Store
	mu   sync.Mutex
	on   bool
	seen []string
}

func (r *keyRecorder) note(k string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.on {
		r.seen = append(r.seen, k)
	}
}

func (r *keyRecorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.seen
	r.seen = nil
	return out
}

func (r *keyRecorder) Get(ctx context.Context, key string) (store.Object, error) {
	r.note(key)
	return r.Store.Get(ctx, key)
}

func (r *keyRecorder) Head(ctx context.Context, key string) (store.Info, error) {
	r.note(key)
	return r.Store.Head(ctx, key)
}

func (r *keyRecorder) PutIfAbsent(ctx context.Context, key string, body []byte, opts ...store.PutOption) (string, error) {
	r.note(key)
	return r.Store.PutIfAbsent(ctx, key, body, opts...)
}

func (r *keyRecorder) PutIfMatch(ctx context.Context, key string, body []byte, etag string, opts ...store.PutOption) (string, error) {
	r.note(key)
	return r.Store.PutIfMatch(ctx, key, body, etag, opts...)
}

func (r *keyRecorder) Put(ctx context.Context, key string, body []byte, opts ...store.PutOption) (string, error) {
	r.note(key)
	return r.Store.Put(ctx, key, body, opts...)
}

func (r *keyRecorder) Delete(ctx context.Context, key string) error {
	r.note(key)
	return r.Store.Delete(ctx, key)
}

func (r *keyRecorder) List(ctx context.Context, prefix, startAfter string, limit int) (store.Page, error) {
	r.note(prefix)
	if startAfter != "" {
		r.note(startAfter)
	}
	page, err := r.Store.List(ctx, prefix, startAfter, limit)
	for _, it := range page.Items {
		r.note(it.Key) // what the LIST showed
	}
	return page, err
}

func (r *keyRecorder) ListDirs(ctx context.Context, prefix, startAfter string, limit int) ([]string, bool, error) {
	r.note(prefix)
	return store.ListDirs(ctx, r.Store, prefix, startAfter, limit)
}

func (r *keyRecorder) Versions(ctx context.Context, key, after string, limit int) (store.VersionPage, error) {
	r.note(key)
	return r.Store.Versions(ctx, key, after, limit)
}

func (r *keyRecorder) GetVersion(ctx context.Context, key, versionID string) (store.Object, error) {
	r.note(key)
	return r.Store.GetVersion(ctx, key, versionID)
}

// Ten queues hold tasks in every status and a schedule each. Listing,
// counting and showing queue q3, its tasks' histories and its schedules
// read, list and name only keys under q/q3/, and every cursor they hand
// out names only q3's objects: another queue's data costs q3's routes
// nothing and leaks into none of their answers.
func TestOneQueuesRoutesTouchOnlyItsFolder(t *testing.T) {
	rec := &keyRecorder{Store: memstore.New()}
	clk := &clock{now: t0}
	q, decls := queues.New(rec, queues.Options{Core: queue.Options{ListCacheFor: -1}})
	sc := schedule.New(rec, q, schedule.Options{})
	e := &env{t: t, store: rec, q: q, clock: clk, logs: &bytes.Buffer{},
		api: api.New(q, decls, api.Options{Now: clk.Now, Schedules: sc, Logger: slog.New(slog.DiscardHandler)})}
	ids := map[string][]string{}
	for i := 0; i < 10; i++ {
		name := fmt.Sprintf("q%d", i)
		e.do("PUT", "/queues/"+name, `{}`)
		for j := 0; j < 6; j++ {
			r := e.do("POST", "/queues/"+name+"/tasks", `{"task_type":"t","max_attempts":1,"ttl":"1h"}`)
			ids[name] = append(ids[name], str(r.body, "task.id"))
		}
		// completed, failed, cancelled, expired, running; one stays pending
		for _, end := range []string{"complete", "fail", "cancel", ""} {
			c := e.do("POST", "/queues/"+name+"/claim", `{"lease_for":"1m"}`)
			id, tok := str(c.body, "tasks.0.task.id"), str(c.body, "tasks.0.lease.token")
			if end != "" {
				e.do("POST", "/queues/"+name+"/tasks/"+id+"/"+end, `{"lease_token":"`+tok+`","error":"x","retryable":false}`)
			}
		}
		r := e.do("POST", "/queues/"+name+"/tasks", `{"task_type":"t"}`)
		e.do("POST", "/queues/"+name+"/tasks/"+str(r.body, "task.id")+"/expire", ``)
		e.do("POST", "/queues/"+name+"/schedules", `{"id":"nightly","task_type":"t","cron":"0 2 * * *"}`)
		e.do("POST", "/queues/"+name+"/schedules", `{"id":"hourly","task_type":"t","cron":"0 * * * *"}`)
	}
	clk.Advance(time.Minute)
	id := ids["q3"][0]
	paths := []string{
		"/queues/q3", "/queues/q3/stats",
		"/queues/q3/tasks/" + id, "/queues/q3/tasks/" + id + "/history", "/queues/q3/tasks/" + id + "/history?limit=1",
		"/queues/q3/schedules", "/queues/q3/schedules?limit=1", "/queues/q3/schedules/nightly", "/queues/q3/schedules/nightly/history",
	}
	for _, st := range []string{"", "status=pending&", "status=running&", "status=completed&", "status=failed&", "status=cancelled&", "status=expired&"} {
		for _, limit := range []string{"1", "100"} {
			paths = append(paths, "/queues/q3/tasks?"+st+"limit="+limit)
		}
	}
	for i := 0; i < len(paths); i++ {
		p := paths[i]
		rec.mu.Lock()
		rec.on = true
		rec.mu.Unlock()
		r := e.do("GET", p, "")
		rec.mu.Lock()
		rec.on = false
		rec.mu.Unlock()
		if r.status != http.StatusOK {
			t.Fatalf("GET %s: %d %s", p, r.status, r.raw)
		}
		for _, k := range rec.take() {
			if !strings.HasPrefix(k, "q/q3/") {
				t.Errorf("GET %s touched %s, outside q/q3/", p, k)
			}
		}
		for _, other := range []string{"q0", "q1", "q2", "q4", "q9"} {
			for _, oid := range ids[other] {
				if bytes.Contains(r.raw, []byte(oid)) {
					t.Errorf("GET %s names task %s of queue %s: %s", p, oid, other, r.raw)
				}
			}
		}
		// Follow every cursor: the next pages keep to the folder too.
		if c := str(r.body, "next_cursor"); c != "" {
			base, _, _ := strings.Cut(p, "&cursor=")
			sep := "?"
			if strings.Contains(base, "?") {
				sep = "&"
			}
			paths = append(paths, base+sep+"cursor="+c)
		}
	}
	if len(paths) < 30 {
		t.Fatalf("only %d requests checked", len(paths))
	}
}
