package api_test

import (
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/api"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/reqcount"
	"github.com/s3q/s3q/shared/store/memstore"
)

// The attack cases of the API: a hostile or careless caller. Every
// answer is checked by do (checkAnswer: JSON, a code, never a 500).

// newAttackEnv is newEnv with the declarations' options d.
func newAttackEnv(t *testing.T, d queues.Options) *env {
	t.Helper()
	e := &env{t: t, store: memstore.New(), clock: &clock{now: t0}}
	d.Core.ListCacheFor = -1
	e.q, e.decls = queues.New(reqcount.Wrap(e.store), d)
	e.api = api.New(e.q, e.decls, api.Options{Now: e.clock.Now, Logger: slog.New(slog.DiscardHandler)})
	return e
}

// Every route that names a task answers 404 for a task of another
// queue, whether the queue in the path is declared or not, whatever the
// body (a valid lease token of the task included): never a 409, never a
// success, and the task is unchanged.
func TestAttackATaskOfAnotherQueueIsNotFoundOnEveryRoute(t *testing.T) {
	e := newAttackEnv(t, queues.Options{})
	e.do("PUT", "/queues/a", `{}`)
	r := e.do("POST", "/queues/b/tasks", `{"task_type":"t","max_attempts":1}`)
	id := str(r.body, "task.id")
	c := e.do("POST", "/queues/b/claim", `{"lease_for":"10m"}`)
	tok := str(c.body, "tasks.0.lease.token")
	if str(c.body, "tasks.0.task.id") != id || tok == "" {
		t.Fatalf("claim: %s", c.raw)
	}
	before := keys(t, e.store)
	token := `"lease_token":"` + tok + `"`
	for _, queueName := range []string{"a", "never-declared", "default"} {
		base := "/queues/" + queueName + "/tasks/" + id
		for _, rt := range []struct{ method, path, body string }{
			{"GET", base, ""}, {"GET", base + "/history", ""},
			{"POST", base + "/cancel", ""}, {"POST", base + "/retry", ""}, {"POST", base + "/expire", ""},
			{"POST", base + "/heartbeat", `{` + token + `,"lease_for":"1m"}`},
			{"POST", base + "/complete", `{` + token + `,"output":1}`},
			{"POST", base + "/fail", `{` + token + `,"error":"x"}`},
			{"POST", base + "/reschedule", `{` + token + `,"delay":"1m"}`},
			{"POST", base + "/cancel-ack", `{` + token + `}`},
			{"POST", "/queues/" + queueName + "/tasks", `{"task_type":"t","id":"` + id + `"}`},
		} {
			got := e.do(rt.method, rt.path, rt.body)
			if rt.path == "/queues/"+queueName+"/tasks" {
				// A submit with the id of another queue's task makes a
				// task of this queue: ids are unique per queue.
				if got.status == http.StatusConflict {
					t.Errorf("%s %s: 409 %s: another queue's id blocks this queue's", rt.method, rt.path, got.raw)
				}
				continue
			}
			if got.status != http.StatusNotFound {
				t.Errorf("%s %s: %d %s, want 404", rt.method, rt.path, got.status, got.raw)
			}
		}
	}
	after := keys(t, e.store)
	for k, etag := range before {
		if strings.HasPrefix(k, "q/b/") && after[k] != etag {
			t.Errorf("%s changed by requests addressed to other queues", k)
		}
	}
}

// A listing cursor handed out for one queue, replayed against another
// queue (or another route), is refused with a 400 naming the cursor, or
// lists nothing of the first queue: it never leaks the first queue's
// tasks, never answers 500.
func TestAttackACursorOfAnotherQueueLeaksNothing(t *testing.T) {
	e := newAttackEnv(t, queues.Options{})
	var bIDs []string
	for i := 0; i < 3; i++ {
		bIDs = append(bIDs, str(e.do("POST", "/queues/b/tasks", `{"task_type":"t"}`).body, "task.id"))
		e.do("POST", "/queues/a/tasks", `{"task_type":"t"}`)
	}
	r := e.do("GET", "/queues/b/tasks?status=pending&limit=1", "")
	cur := str(r.body, "next_cursor")
	if cur == "" {
		t.Fatalf("no cursor: %s", r.raw)
	}
	for _, rt := range []struct{ method, path, body string }{
		{"GET", "/queues/a/tasks?status=pending&limit=10&cursor=" + cur, ""},
		{"GET", "/queues/a/tasks?limit=10&cursor=" + cur, ""},
		{"GET", "/queues/a/tasks?status=failed&limit=10&cursor=" + cur, ""},
		{"GET", "/queues?cursor=" + cur, ""},
		{"GET", "/queues/a/schedules?cursor=" + cur, ""},
		{"POST", "/queues/a/purge", `{"status":"pending","dry_run":true,"cursor":"` + cur + `"}`},
		{"POST", "/queues/a/bulk/cancel", `{"cursor":"` + cur + `"}`},
	} {
		got := e.do(rt.method, rt.path, rt.body)
		if got.status == http.StatusBadRequest {
			if f := str(got.body, "error.field"); f != "cursor" {
				t.Errorf("%s %s: 400 naming %q, want the cursor: %s", rt.method, rt.path, f, got.raw)
			}
			continue
		}
		if got.status >= 300 && got.status != http.StatusNotFound {
			t.Errorf("%s %s: %d %s, want 400 or an answer", rt.method, rt.path, got.status, got.raw)
		}
		for _, id := range bIDs {
			if strings.Contains(string(got.raw), id) {
				t.Errorf("%s %s leaks queue b's task %s: %s", rt.method, rt.path, id, got.raw)
			}
		}
	}
	// Nothing of queue b was cancelled through queue a.
	for _, id := range bIDs {
		if s := str(e.do("GET", "/queues/b/tasks/"+id, "").body, "task.status"); s != "pending" {
			t.Errorf("queue b's task %s is %s after requests to queue a", id, s)
		}
	}
}

// Queue names at and past their length limit, odd characters, and
// declarations with huge or odd fields: a 400 naming the field, nothing
// written; a name at the limit works on every route.
func TestAttackQueueNamesAndDeclarationsAtTheirLimits(t *testing.T) {
	e := newAttackEnv(t, queues.Options{})
	long := strings.Repeat("q", 64)
	for _, p := range []struct{ method, path, body string }{
		{"PUT", "/queues/" + long, `{"max_concurrency":2}`},
		{"POST", "/queues/" + long + "/tasks", `{"task_type":"t"}`},
		{"POST", "/queues/" + long + "/pause", ""},
		{"POST", "/queues/" + long + "/resume", ""},
		{"GET", "/queues/" + long + "/stats", ""},
	} {
		if r := e.do(p.method, p.path, p.body); r.status >= 300 {
			t.Fatalf("%s %s: %d %s", p.method, p.path, r.status, r.raw)
		}
	}
	if r := e.do("POST", "/queues/"+long+"/claim", `{"lease_for":"1m"}`); r.status != http.StatusOK {
		t.Fatalf("claim of a queue named at the limit: %d %s", r.status, r.raw)
	}
	before := keys(t, e.store)
	for _, name := range []string{long + "q", "a.b", "a%2Fb", "%20", "..", "a%00b", "%C3%A9"} {
		for _, p := range []struct{ method, path, body string }{
			{"PUT", "/queues/" + name, `{}`},
			{"POST", "/queues/" + name + "/tasks", `{"task_type":"t"}`},
			{"POST", "/queues/" + name + "/pause", ""},
			{"DELETE", "/queues/" + name, ""},
		} {
			r := e.do(p.method, p.path, p.body)
			if r.status != http.StatusBadRequest && r.status != http.StatusNotFound {
				t.Errorf("%s %s: %d %s, want 400 (or 404 where the router has no route)", p.method, p.path, r.status, r.raw)
			}
			if r.status == http.StatusBadRequest && str(r.body, "error.field") != "queue" {
				t.Errorf("%s %s: 400 naming %q, want queue", p.method, p.path, str(r.body, "error.field"))
			}
		}
	}
	for _, body := range []string{
		`{"shards":17}`, `{"shards":-1}`, `{"max_concurrency":-1}`, `{"max_concurrency":1e12}`,
		`{"max_attempts":-5}`, `{"max_attempts":1000000000000}`, `{"ttl":"-1s"}`, `{"ttl":"9999999999h"}`,
		`{"timeout":"0s"}`, `{"timeout":"13h"}`, `{"ttl_from":"tomorrow"}`, `{"name":"other"}`,
		`{"paused":true}`, `{"auto_declared":true}`, `{"created_at":"2000-01-01T00:00:00Z"}`,
		`{"target":{"url":"https://` + strings.Repeat("a", 70000) + `.example/"}}`,
		`{"target":{"url":"ftp://example.com/"}}`, `{"target":{}}`, `{"target":"https://example.com/"}`,
		`{"max_concurrency":"2"}`, `[]`, `null`, `{"ttl":{"s":1}}`,
	} {
		r := e.do("PUT", "/queues/odd", body)
		if r.status < 400 || r.status >= 500 {
			t.Errorf("PUT /queues/odd %.80s: %d %.200s, want a 4xx", body, r.status, r.raw)
		}
	}
	after := keys(t, e.store)
	for k := range after {
		if _, ok := before[k]; !ok {
			t.Errorf("a refused request wrote %s", k)
		}
	}
}

// MaxQueues: under auto_declare, submits to more distinct queues than
// the limit are refused past it with a 4xx and declare nothing; with
// declarations required an undeclared queue is a 404 that declares
// nothing.
func TestAttackManyQueueNamesStopAtMaxQueues(t *testing.T) {
	e := newAttackEnv(t, queues.Options{MaxQueues: 3})
	for i := 0; i < 3; i++ {
		if r := e.do("POST", fmt.Sprintf("/queues/q%d/tasks", i), `{"task_type":"t"}`); r.status != http.StatusCreated {
			t.Fatalf("submit %d: %d %s", i, r.status, r.raw)
		}
	}
	for i := 3; i < 8; i++ {
		r := e.do("POST", fmt.Sprintf("/queues/q%d/tasks", i), `{"task_type":"t"}`)
		if r.status < 400 || r.status >= 500 {
			t.Fatalf("submit to queue %d of at most 3: %d %s", i, r.status, r.raw)
		}
		r = e.do("POST", fmt.Sprintf("/queues/q%d/tasks", i), `{"task_type":"t","dedup_key":"k","id":"019c03d4-be80-7000-8000-00000000000`+fmt.Sprint(i)+`"}`)
		if r.status < 400 || r.status >= 500 {
			t.Fatalf("submit with a dedup key and an id to queue %d of at most 3: %d %s", i, r.status, r.raw)
		}
		if r := e.do("PUT", fmt.Sprintf("/queues/q%d", i), `{}`); r.status < 400 || r.status >= 500 {
			t.Fatalf("declare queue %d of at most 3: %d %s", i, r.status, r.raw)
		}
	}
	for k := range keys(t, e.store) {
		for i := 3; i < 8; i++ {
			if strings.HasPrefix(k, fmt.Sprintf("q/q%d/", i)) {
				t.Errorf("a refused queue left %s", k)
			}
		}
	}
	if r := e.do("GET", "/queues", ""); len(get(r.body, "queues").([]any)) != 3 {
		t.Fatalf("queues listed: %s, want 3", r.raw)
	}

	req := newAttackEnv(t, queues.Options{RequireDeclared: true})
	for i := 0; i < 5; i++ {
		r := req.do("POST", fmt.Sprintf("/queues/u%d/tasks", i), `{"task_type":"t","dedup_key":"k"}`)
		if r.status != http.StatusNotFound {
			t.Fatalf("submit to an undeclared queue: %d %s, want 404", r.status, r.raw)
		}
		if r := req.do("POST", fmt.Sprintf("/queues/u%d/claim", i), `{}`); r.status != http.StatusNotFound {
			t.Fatalf("claim of an undeclared queue: %d %s, want 404", r.status, r.raw)
		}
	}
	if ks := keys(t, req.store); len(ks) != 0 {
		t.Fatalf("requests to undeclared queues wrote %v", ks)
	}
}

// Pause and resume sent many times, at once, with submits and claims
// among them: every answer is a 200 (or a 409 to retry), never a 500;
// the queue ends as the last request left it, and a paused queue hands
// out nothing.
func TestAttackPauseResumeSpam(t *testing.T) {
	e := newAttackEnv(t, queues.Options{})
	e.do("PUT", "/queues/p", `{"max_concurrency":5}`)
	var wg sync.WaitGroup
	for i := 0; i < 40; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			op := []string{"pause", "resume"}[i%2]
			if r := e.do("POST", "/queues/p/"+op, ""); r.status != http.StatusOK && r.status != http.StatusConflict {
				t.Errorf("%s: %d %s", op, r.status, r.raw)
			}
			if r := e.do("POST", "/queues/p/tasks", `{"task_type":"t"}`); r.status != http.StatusCreated {
				t.Errorf("submit: %d %s", r.status, r.raw)
			}
			if r := e.do("POST", "/queues/p/claim", `{"lease_for":"1m"}`); r.status >= 300 && r.status != http.StatusConflict {
				t.Errorf("claim: %d %s", r.status, r.raw)
			}
		}()
	}
	wg.Wait()
	if r := e.do("POST", "/queues/p/pause", ""); r.status != http.StatusOK || get(r.body, "queue.paused") != true {
		t.Fatalf("pause: %d %s", r.status, r.raw)
	}
	e.clock.Advance(time.Hour)
	if r := e.do("POST", "/queues/p/claim", `{"lease_for":"1m"}`); r.status != http.StatusNoContent {
		t.Fatalf("claim of a paused queue: %d %s, want 204", r.status, r.raw)
	}
	if r := e.do("POST", "/queues/p/resume", ""); r.status != http.StatusOK || get(r.body, "queue.paused") == true {
		t.Fatalf("resume: %d %s", r.status, r.raw)
	}
	// The slots the spam's claims took are held by lapsed leases: each
	// claim takes over a few of them (a bounded number of checks), until
	// five tasks run, and no more.
	running := 0
	for i := 0; i < 5 && running < 5; i++ {
		r := e.do("POST", "/queues/p/claim", `{"lease_for":"1m","max_tasks":10}`)
		if r.status == http.StatusOK {
			running += len(get(r.body, "tasks").([]any))
		}
	}
	if running != 5 {
		t.Fatalf("claims after resume started %d tasks, want 5 (max_concurrency 5)", running)
	}
	if r := e.do("POST", "/queues/p/claim", `{"lease_for":"1m","max_tasks":10}`); r.status != http.StatusNoContent {
		t.Fatalf("a claim with every slot held: %d %s, want 204", r.status, r.raw)
	}
}

// A batch that repeats one dedup key, or one id, makes one task: the
// repeats answer it (deduplicated, or replayed), and a repeat of the id
// with another request is a conflict on id; never two tasks, whatever
// order the batch's items land in.
func TestAttackABatchRepeatingAKeyOrAnIdMakesOneTask(t *testing.T) {
	e := newAttackEnv(t, queues.Options{})
	id := "019c03d4-be80-7000-8000-000000000001"
	r := e.do("POST", "/queues/a/tasks/batch", `{"tasks":[
		{"task_type":"t","dedup_key":"k"},{"task_type":"t","dedup_key":"k"},{"task_type":"u","dedup_key":"k"},
		{"task_type":"t","id":"`+id+`"},{"task_type":"t","id":"`+id+`"},{"task_type":"other","id":"`+id+`"}]}`)
	if r.status != http.StatusOK {
		t.Fatalf("batch: %d %s", r.status, r.raw)
	}
	results := get(r.body, "results").([]any)
	if len(results) != 6 {
		t.Fatalf("%d results, want 6: %s", len(results), r.raw)
	}
	keyed := map[string]bool{}
	for i := 0; i < 3; i++ {
		if tid := str(results[i], "task.id"); tid != "" {
			keyed[tid] = true
		}
	}
	if len(keyed) != 1 {
		t.Fatalf("three submits of one dedup key answered tasks %v, want one: %s", keyed, r.raw)
	}
	// The items of a batch run at once: whichever of the three with the
	// id lands first makes the task, the one repeating its request
	// replays it, the others are conflicts on id.
	made := map[string]bool{}
	for i := 3; i < 6; i++ {
		if got := str(results[i], "task.id"); got != "" {
			if got != id {
				t.Fatalf("result %d names task %s, want %s", i, got, id)
			}
			made[str(results[i], "task.task_type")] = true
		} else if code := str(results[i], "error.code"); code != "conflict" {
			t.Fatalf("result %d: %v, want the task or a conflict", i, results[i])
		}
	}
	if len(made) != 1 {
		t.Fatalf("the id answered tasks of types %v, want one task: %s", made, r.raw)
	}
	tasks := 0
	for k := range keys(t, e.store) {
		if strings.HasPrefix(k, "q/a/tasks/") {
			tasks++
		}
	}
	if tasks != 2 {
		t.Fatalf("%d task records, want 2", tasks)
	}
}

// A schedule's id and a task's artifacts addressed through another queue
// are not found: 404, never 409, nothing changed.
func TestAttackSchedulesAndArtifactsOfAnotherQueueAreNotFound(t *testing.T) {
	e := newEnvEveryRoute(t)
	e.do("PUT", "/queues/a", `{}`)
	if r := e.do("POST", "/queues/b/schedules", `{"id":"nightly","task_type":"t","cron":"0 2 * * *"}`); r.status != http.StatusCreated {
		t.Fatalf("create schedule: %d %s", r.status, r.raw)
	}
	id := str(e.do("POST", "/queues/b/tasks", `{"task_type":"t"}`).body, "task.id")
	e.do("POST", "/queues/b/claim", `{"lease_for":"10m"}`)
	before := keys(t, e.store)
	for _, rt := range []struct{ method, path, body string }{
		{"GET", "/queues/a/schedules/nightly", ""},
		{"DELETE", "/queues/a/schedules/nightly", ""},
		{"POST", "/queues/a/schedules/nightly/pause", ""},
		{"POST", "/queues/a/schedules/nightly/resume", ""},
		{"POST", "/queues/a/schedules/nightly/trigger", ""},
		{"GET", "/queues/a/schedules/nightly/history", ""},
		{"POST", "/queues/a/tasks/" + id + "/artifacts", `{"name":"f","size":1}`},
		{"GET", "/queues/a/tasks/" + id + "/artifacts/f", ""},
	} {
		if r := e.do(rt.method, rt.path, rt.body); r.status != http.StatusNotFound {
			t.Errorf("%s %s: %d %s, want 404", rt.method, rt.path, r.status, r.raw)
		}
	}
	after := keys(t, e.store)
	for k, etag := range before {
		if strings.HasPrefix(k, "q/b/") && after[k] != etag {
			t.Errorf("%s changed by requests addressed to queue a", k)
		}
	}
}
