package faultrun

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/store"
	"github.com/s3q/s3q/shared/store/memstore"
)

var at = time.Date(2026, 1, 28, 9, 0, 0, 0, time.UTC)

func sec(n int) time.Time { return at.Add(time.Duration(n) * time.Second) }

func ptrTime(t time.Time) *time.Time { return &t }

// putTask writes the versions of one task record, oldest first.
func putTask(t *testing.T, st store.Store, versions ...queue.Task) {
	t.Helper()
	for _, v := range versions {
		b, _ := json.Marshal(v)
		if _, err := st.Put(context.Background(), queue.TaskKey(v.Queue, v.ID), b); err != nil {
			t.Fatal(err)
		}
	}
}

func putPointer(t *testing.T, st store.Store, key string, holders ...string) {
	t.Helper()
	for _, h := range holders {
		b, _ := json.Marshal(map[string]string{"task_id": h})
		if _, err := st.Put(context.Background(), queue.DedupKey("default", key), b); err != nil {
			t.Fatal(err)
		}
	}
}

func task(id string, n int, status queue.Status, updated time.Time) queue.Task {
	return queue.Task{ID: id, Queue: "default", Status: status, UpdatedAt: updated, CreatedAt: sec(0),
		Input: json.RawMessage(fmt.Sprintf(`{"n":%d}`, n))}
}

func done(t queue.Task, end time.Time) queue.Task {
	t.Status, t.CompletedAt, t.UpdatedAt = queue.StatusCompleted, &end, end
	return t
}

func running(t queue.Task, token string, at time.Time, lease time.Duration) queue.Task {
	t.Status, t.LeaseToken, t.UpdatedAt, t.LeaseExpiresAt = queue.StatusRunning, token, at, ptrTime(at.Add(lease))
	return t
}

func TestAudit(t *testing.T) {
	ids := make([]string, 10)
	for i := range ids {
		ids[i] = queue.DerivedID(at, fmt.Sprint(i))
	}
	st := memstore.New()
	// 0: clean. 1 and 2: one submit made two tasks. 3: claimed twice
	// under one lease. 4: never finished. 5 then 6: 6 took the dedup key
	// while 5 was live. 7: holds a dedup key without the pointer.
	putTask(t, st, task(ids[0], 0, queue.StatusPending, sec(0)), done(task(ids[0], 0, queue.StatusPending, sec(0)), sec(2)))
	putTask(t, st, done(task(ids[1], 1, queue.StatusPending, sec(0)), sec(2)))
	putTask(t, st, done(task(ids[2], 1, queue.StatusPending, sec(0)), sec(2)))
	t3 := task(ids[3], 3, queue.StatusPending, sec(0))
	putTask(t, st, t3, running(t3, "a", sec(1), 10*time.Second), running(t3, "b", sec(5), 10*time.Second), done(t3, sec(6)))
	putTask(t, st, task(ids[4], 4, queue.StatusPending, sec(0)))
	t5, t6 := task(ids[5], 5, queue.StatusPending, sec(0)), task(ids[6], 6, queue.StatusPending, sec(1))
	t5.DedupKey, t6.DedupKey = "k", "k"
	putTask(t, st, t5, done(t5, sec(9)))
	putTask(t, st, t6, done(t6, sec(3)))
	putPointer(t, st, "k", ids[5], ids[6])
	t7 := task(ids[7], 7, queue.StatusPending, sec(0))
	t7.DedupKey = "j"
	putTask(t, st, done(t7, sec(1)))
	putPointer(t, st, "j", ids[8])
	// 8: completed, then running again.
	t8 := task(ids[8], 8, queue.StatusPending, sec(0))
	putTask(t, st, done(t8, sec(1)), running(t8, "c", sec(2), time.Minute), done(t8, sec(3)))

	subs := []submitted{
		{id: ids[0], taskID: ids[0], ok: true, end: sec(0)},
		{id: ids[1], taskID: ids[1], ok: true, end: sec(0)},
		{},
		{id: ids[3], taskID: ids[3], ok: true, end: sec(0)},
		{id: ids[4], taskID: ids[4], ok: true, end: sec(0)},
		{id: ids[5], taskID: ids[5], ok: true, end: sec(0)},
		{id: ids[6], taskID: ids[6], ok: true, end: sec(2)},
		{id: ids[7], taskID: ids[7], ok: true, end: sec(0)},
		{id: ids[8], taskID: ids[8], ok: true, end: sec(0)},
		{id: ids[9], taskID: ids[9], ok: true, end: sec(0)}, // answered, never stored
		{id: "x", taskID: ids[0], dedup: false, ok: true, end: sec(0)},
	}
	var rep Report
	if err := audit(context.Background(), st, subs, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Tasks != 9 || rep.Duplicates != 1 || rep.RunTwice != 2 || rep.Lost != 2 || rep.Unfinished != 1 ||
		rep.DedupViolations != 2 || rep.Accepted != 10 || rep.SubmitErrors != 1 || rep.WrongAnswers != 1 {
		t.Errorf("%s\n%s\n%v", rep.Line(), rep.Detail(), rep.Problems)
	}
	if rep.Err() == nil {
		t.Error("Err is nil")
	}
	if (Report{}).Err() != nil {
		t.Error("a clean report has an error")
	}
}
