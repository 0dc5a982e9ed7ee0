package api_test

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/api"
	"github.com/s3q/s3q/shared/store/memstore"
)

// Each request reads the clock (Options.Now) once, so that the core and
// the answer see the same time: a heartbeat's new lease and the
// expires_in_seconds of its answer come from one now.
func TestEachRequestReadsTheClockOnce(t *testing.T) {
	var reads atomic.Int64
	// A clock a second later at every read: a second read in one request
	// would show in its answer.
	tick := func() time.Time { return t0.Add(time.Duration(reads.Add(1)) * time.Second) }
	e := newEnv(t, memstore.New(), api.Options{Now: tick})
	var id, token string
	do := func(method, path, body string) response {
		t.Helper()
		path = strings.ReplaceAll(path, "{id}", id)
		body = strings.ReplaceAll(body, "{token}", token)
		before := reads.Load()
		r := e.do(method, path, body)
		if r.status >= 300 {
			t.Fatalf("%s %s: %d %s", method, path, r.status, r.raw)
		}
		if n := reads.Load() - before; n != 1 {
			t.Errorf("%s %s read the clock %d times, want 1", method, path, n)
		}
		return r
	}
	id = str(do("POST", "/queues/default/tasks", `{"task_type":"a","ttl":"1h"}`).body, "task.id")
	token = str(do("POST", "/queues/default/claim", `{"lease_for":"1m"}`).body, "tasks.0.lease.token")
	hb := do("POST", "/queues/default/tasks/{id}/heartbeat", `{"lease_token":"{token}","lease_for":"10m"}`)
	lease, err1 := time.Parse(time.RFC3339Nano, str(hb.body, "lease.expires_at"))
	exp, err2 := time.Parse(time.RFC3339Nano, str(hb.body, "task.expires_at"))
	if err1 != nil || err2 != nil {
		t.Fatalf("heartbeat answer %s", hb.raw)
	}
	if got, want := hb.body["task"].(map[string]any)["expires_in_seconds"], exp.Sub(lease.Add(-10*time.Minute)).Seconds(); got != want {
		t.Errorf("heartbeat: expires_in_seconds %v, want %v (at the new lease's now)", got, want)
	}
	do("GET", "/queues/default/tasks/{id}", ``)
	do("POST", "/queues/default/tasks/{id}/complete", `{"lease_token":"{token}"}`)
	do("GET", "/queues/default/tasks?status=completed", ``)
}
