package faultrun

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/store"
)

// maxProblems is how many findings of one kind a report describes.
const maxProblems = 5

// record is a task record with what the audit needs of its input.
type record struct {
	queue.Task
	n        int    // the submit number in the input
	versions string // status@updated_at of each version, oldest first
}

// audit reads every task record and its versions straight from the
// server and fills the report's findings.
func audit(ctx context.Context, st store.Store, subs []submitted, rep *Report) error {
	var keys []string
	for info, err := range store.All(ctx, st, queue.QueuesPrefix) {
		if err != nil {
			return fmt.Errorf("faultrun: audit: %w", err)
		}
		if !queue.IsTaskKey(info.Key) {
			continue
		}
		keys = append(keys, info.Key)
	}
	recs := make([]record, len(keys))
	runTwice := make([][]string, len(keys))
	errs := make([]error, len(keys))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i, k := range keys {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			recs[i], runTwice[i], errs[i] = auditTask(ctx, st, k)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return fmt.Errorf("faultrun: audit: %w", err)
		}
	}

	problems := map[string]int{}
	note := func(kind, format string, args ...any) {
		if problems[kind]++; problems[kind] <= maxProblems {
			rep.Problems = append(rep.Problems, kind+": "+fmt.Sprintf(format, args...))
		}
	}

	rep.Tasks = len(recs)
	rep.Statuses = map[queue.Status]int{}
	byID := map[string]*record{}
	byN := map[int][]string{}
	byKey := map[string][]*record{}
	for i := range recs {
		r := &recs[i]
		rep.Statuses[r.Status]++
		byID[r.ID] = r
		byN[r.n] = append(byN[r.n], r.ID)
		if r.DedupKey != "" {
			byKey[r.DedupKey] = append(byKey[r.DedupKey], r)
		}
		for _, p := range runTwice[i] {
			rep.RunTwice++
			note("run_twice", "%s", p)
		}
	}
	for n, ids := range byN {
		if len(ids) > 1 {
			rep.Duplicates += len(ids) - 1
			note("duplicate", "submit %d made tasks %v", n, ids)
		}
	}

	created := map[string]submitted{} // task id → the submit that made it
	for i, s := range subs {
		if !s.ok {
			rep.SubmitErrors++
			continue
		}
		rep.Accepted++
		r, ok := byID[s.taskID]
		switch {
		case !ok:
			rep.Lost++
			note("lost", "submit %d was answered with task %s, which is not in the bucket", i, s.taskID)
		case !r.Status.Terminal():
			rep.Lost++
			rep.Unfinished++
			note("lost", "task %s of submit %d is still %s at the end", r.ID, i, r.Status)
		}
		if !s.dedup {
			created[s.taskID] = s // made by this submit (a replay: by an earlier attempt of it)
			if s.taskID != s.id {
				rep.WrongAnswers++
				note("wrong_answer", "submit %d sent id %s and was answered with task %s", i, s.id, s.taskID)
			}
		}
	}

	for key, rs := range byKey {
		holders, err := pointerHolders(ctx, st, key)
		if err != nil {
			return fmt.Errorf("faultrun: audit: %w", err)
		}
		held := map[string]bool{}
		for _, h := range holders {
			held[h] = true
		}
		for _, r := range rs {
			if !held[r.ID] {
				rep.DedupViolations++
				note("dedup_violation", "key %s: task %s never held the key's pointer (holders %v)", key, r.ID, holders)
			}
		}
		// Each task that took the pointer from another must have taken it
		// after that one ended: a take-over whose answer came back before
		// the previous holder's end time took a live task's key.
		for j := 1; j < len(holders); j++ {
			x, y := holders[j-1], holders[j]
			rx, ok := byID[x]
			sy, heard := created[y]
			if x == "" || y == "" || !ok || !heard {
				continue // released, never created, or unknown to the client
			}
			end, ended := endOf(rx.Task)
			if !ended || sy.end.Before(end) {
				rep.DedupViolations++
				note("dedup_violation", "key %s: task %s took the key (its submit answered at %s) while task %s was live (until %v, versions %s)",
					key, y, sy.end.Format(time.RFC3339Nano), x, end.Format(time.RFC3339Nano), rx.versions)
			}
		}
	}
	return nil
}

// endOf returns when a task became terminal, and false if it has not.
func endOf(t queue.Task) (time.Time, bool) {
	for _, at := range []*time.Time{t.CompletedAt, t.FailedAt, t.CancelledAt, t.ExpiredAt} {
		if at != nil {
			return *at, true
		}
	}
	return time.Time{}, false
}

// auditTask reads one task's record and its versions, and describes each
// claim that started it while an earlier lease was still valid (a running
// version whose lease token differs from the running version before it,
// written, by its updated_at, before that version's lease expired) and
// each version that made a finished task live again.
func auditTask(ctx context.Context, st store.Store, key string) (record, []string, error) {
	obj, err := st.Get(ctx, key)
	if err != nil {
		return record{}, nil, err
	}
	var rec record
	if err := json.Unmarshal(obj.Body, &rec.Task); err != nil {
		return record{}, nil, fmt.Errorf("%s: %w", key, err)
	}
	var in struct {
		N int `json:"n"`
	}
	_ = json.Unmarshal(rec.Input, &in)
	rec.n = in.N

	versions, err := store.AllVersions(ctx, st, key)
	if err != nil {
		return rec, nil, err
	}
	var tasks []queue.Task // oldest first
	var written []time.Time
	for _, v := range slices.Backward(versions) {
		if v.DeleteMarker {
			continue
		}
		written = append(written, v.LastModified)
		o, err := st.GetVersion(ctx, key, v.VersionID)
		if err != nil {
			return rec, nil, err
		}
		var t queue.Task
		if err := json.Unmarshal(o.Body, &t); err != nil {
			return rec, nil, fmt.Errorf("%s version %s: %w", key, v.VersionID, err)
		}
		tasks = append(tasks, t)
	}
	var vs []string
	for i, t := range tasks {
		vs = append(vs, string(t.Status)+"@"+t.UpdatedAt.Format("15:04:05.000000")+"(written "+written[i].Format("15:04:05.000")+")")
	}
	rec.versions = strings.Join(vs, " ")
	var problems []string
	for i := 1; i < len(tasks); i++ {
		prev, cur := tasks[i-1], tasks[i]
		if prev.Status.Terminal() && !cur.Status.Terminal() {
			// The run never retries a task: once finished, it stays so.
			problems = append(problems, fmt.Sprintf("task %s: %s again (attempt %d) after it was %s",
				rec.ID, cur.Status, cur.Attempt, prev.Status))
			continue
		}
		if prev.Status != queue.StatusRunning || cur.Status != queue.StatusRunning || prev.LeaseToken == cur.LeaseToken {
			continue
		}
		if prev.LeaseExpiresAt != nil && cur.UpdatedAt.Before(*prev.LeaseExpiresAt) {
			problems = append(problems, fmt.Sprintf("task %s: attempt %d started at %s under attempt %d's lease (until %s)",
				rec.ID, cur.Attempt, cur.UpdatedAt.Format(time.RFC3339Nano), prev.Attempt, prev.LeaseExpiresAt.Format(time.RFC3339Nano)))
		}
	}
	return rec, problems, nil
}

// pointerHolders returns the task each version of a dedup key's pointer
// named, oldest first, "" for a released pointer, with repeats collapsed.
func pointerHolders(ctx context.Context, st store.Store, dedupKey string) ([]string, error) {
	key := queue.DedupKey("default", dedupKey)
	versions, err := store.AllVersions(ctx, st, key)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, v := range slices.Backward(versions) {
		if v.DeleteMarker {
			out = append(out, "")
			continue
		}
		o, err := st.GetVersion(ctx, key, v.VersionID)
		if err != nil {
			return nil, err
		}
		var p struct {
			TaskID string `json:"task_id"`
		}
		_ = json.Unmarshal(o.Body, &p)
		if len(out) == 0 || out[len(out)-1] != p.TaskID {
			out = append(out, p.TaskID)
		}
	}
	return out, nil
}
