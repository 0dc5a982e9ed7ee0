package tasktypes_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/store"
	"github.com/s3q/s3q/shared/store/memstore"
	"github.com/s3q/s3q/shared/tasktypes"
)

var (
	ctx = context.Background()
	t0  = time.Date(2026, 1, 28, 9, 0, 0, 0, time.UTC)
)

func TestParseReadsEveryField(t *testing.T) {
	defs, err := tasktypes.Parse([]byte(`{"task_types": {
		"email.send": {"ttl": "1h", "max_attempts": 5},
		"report.build": {"ttl": "7d", "ttl_from": "first_attempt", "timeout": "15m"},
		"plain": {},
		"secs": {"ttl": 90}
	}}`))
	if err != nil {
		t.Fatal(err)
	}
	if d := defs["email.send"]; *d.TTL != time.Hour || d.MaxAttempts != 5 || d.TTLFrom != "" || d.Timeout != 0 {
		t.Fatalf("email.send: %+v", d)
	}
	if d := defs["report.build"]; *d.TTL != 7*24*time.Hour || d.TTLFrom != queue.TTLFromFirstAttempt || d.Timeout != 15*time.Minute {
		t.Fatalf("report.build: %+v", d)
	}
	if d, ok := defs["plain"]; !ok || d.TTL != nil {
		t.Fatalf("plain: %+v", d)
	}
	if d := defs["secs"]; *d.TTL != 90*time.Second {
		t.Fatalf("secs: %+v", d)
	}
	for _, empty := range []string{"", "{}", ` {"task_types": {}} `} {
		if defs, err := tasktypes.Parse([]byte(empty)); err != nil || len(defs) != 0 {
			t.Fatalf("%q: %v %v", empty, defs, err)
		}
	}
}

func TestParseRejectsABadFileWithAClearError(t *testing.T) {
	for _, tc := range []struct{ doc, want string }{
		{`{"task_type": {}}`, `unknown field "task_type"`},
		{`{"task_types": {"a": {"tll": "1h"}}}`, `task type "a": unknown field "tll"`},
		{`{"task_types": {"a": {"ttl": "soon"}}}`, `task type "a": bad duration "soon"`},
		{`{"task_types": {"a": {"ttl": "0s"}}}`, `task type "a": ttl: must be more than 0`},
		{`{"task_types": {"a": {"ttl": "-1h"}}}`, `task type "a": ttl: must be more than 0`},
		{`{"task_types": {"a": {"ttl_from": "claim"}}}`, `task type "a": ttl_from: "claim" is not one of submission, first_attempt`},
		{`{"task_types": {"a": {"max_attempts": 0}}}`, `task type "a": max_attempts: must be between 1 and 1000`},
		{`{"task_types": {"a": {"max_attempts": "3"}}}`, `task type "a": max_attempts: want a number, got string`},
		{`{"task_types": {"a": {"timeout": "13h"}}}`, `task type "a": timeout: must be more than 0 and at most 12h`},
		{`{"task_types": {"bad type": {}}}`, `task type "bad type": "bad type" is not a task type`},
		{`{"task_types": {"a..b": {}}}`, `task type "a..b"`},
		{`{"task_types": []}`, `task_types: want an object, got array`},
		{`[]`, `want an object, got array`},
		{`{"task_types": {}} {}`, `trailing data`},
		{`{"task_types": `, `unexpected EOF`},
	} {
		_, err := tasktypes.Parse([]byte(tc.doc))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "config/task_types.json: ") {
			t.Errorf("%s: err = %v, want one containing %q", tc.doc, err, tc.want)
		}
	}
}

func TestSourceCachesTheFileAndKeepsTheLastGoodVersion(t *testing.T) {
	mem := memstore.New()
	counting := store.NewCounting(mem)
	src := tasktypes.NewSource(counting, time.Minute)
	write := func(doc string) {
		if _, err := mem.Put(ctx, tasktypes.Key, []byte(doc)); err != nil {
			t.Fatal(err)
		}
	}
	lookup := func(now time.Time) (queue.TypeDefaults, bool, error) {
		return src.TaskTypeDefaults(ctx, "mail", now)
	}
	// No file: no defaults, and the answer is cached too.
	if _, ok, err := lookup(t0); ok || err != nil {
		t.Fatalf("no file: %v %v", ok, err)
	}
	write(`{"task_types": {"mail": {"ttl": "1h"}}}`)
	if _, ok, _ := lookup(t0.Add(59 * time.Second)); ok {
		t.Fatal("the cache was not used")
	}
	d, ok, err := lookup(t0.Add(time.Minute))
	if err != nil || !ok || *d.TTL != time.Hour {
		t.Fatalf("after the cache: %+v %v %v", d, ok, err)
	}
	if c := counting.Counts(); c.Get != 2 {
		t.Fatalf("%d GETs, want 2", c.Get)
	}
	// A bad version keeps the last good one serving; Err says why.
	write(`{"task_types": {"mail": {"ttl": "forever"}}}`)
	d, ok, err = lookup(t0.Add(2 * time.Minute))
	if err != nil || !ok || *d.TTL != time.Hour || src.Err() == nil {
		t.Fatalf("bad version: %+v %v %v (Err %v)", d, ok, err, src.Err())
	}
	// With no good version ever read, a bad file is an error.
	fresh := tasktypes.NewSource(mem, 0)
	if _, _, err := fresh.TaskTypeDefaults(ctx, "mail", t0); err == nil || !strings.Contains(err.Error(), `task type "mail": bad duration "forever"`) {
		t.Fatalf("fresh source on a bad file: %v", err)
	}
}

func TestRequestValuesWinOverTaskTypeDefaults(t *testing.T) {
	mem := memstore.New()
	if _, err := mem.Put(ctx, tasktypes.Key, []byte(`{"task_types": {"mail": {"ttl": "1h", "ttl_from": "first_attempt", "max_attempts": 7, "timeout": "1m"}}}`)); err != nil {
		t.Fatal(err)
	}
	q := queues.NewQueue(mem, queues.Options{Core: queue.Options{TypeDefaults: tasktypes.NewSource(mem, 0), DefaultTTL: 24 * time.Hour}})
	res, err := q.Submit(ctx, queue.SubmitRequest{TaskType: "mail"}, t0)
	if err != nil {
		t.Fatal(err)
	}
	task := res.Task
	if task.ExpiresAt != nil || task.TTL == nil || task.TTL.Std() != time.Hour || task.TTLFrom != queue.TTLFromFirstAttempt || task.MaxAttempts != 7 || task.Timeout.Std() != time.Minute {
		t.Fatalf("type defaults: %+v", task)
	}
	ttl := queue.Duration(5 * time.Minute)
	timeout := queue.Duration(2 * time.Minute)
	res, err = q.Submit(ctx, queue.SubmitRequest{TaskType: "mail", TTL: &ttl, TTLFrom: queue.TTLFromSubmission, MaxAttempts: 2, Timeout: &timeout}, t0)
	if err != nil {
		t.Fatal(err)
	}
	task = res.Task
	if task.ExpiresAt == nil || !task.ExpiresAt.Equal(t0.Add(5*time.Minute)) || task.MaxAttempts != 2 || task.Timeout.Std() != 2*time.Minute {
		t.Fatalf("request values: %+v", task)
	}
	res, err = q.Submit(ctx, queue.SubmitRequest{TaskType: "other"}, t0)
	if err != nil || res.Task.ExpiresAt == nil || !res.Task.ExpiresAt.Equal(t0.Add(24*time.Hour)) {
		t.Fatalf("global default: %+v %v", res.Task.ExpiresAt, err)
	}
}
