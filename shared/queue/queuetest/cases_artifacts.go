package queuetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/internal/check"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/store"
	"github.com/s3q/s3q/shared/store/storefault"
)

// runReplayArtifactsCases are the artifacts cases of runReplay (groups.go).
func runReplayArtifactsCases(t *testing.T, f Factory) {

	t.Run("a_task_has_at_most_max_artifacts_names", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		task := e.submit(queue.SubmitRequest{}, t0)
		if _, _, err := e.q.ReserveArtifact(ctx, queue.ArtifactRequest{ID: task.Ref(), Name: "a.txt", TTL: time.Hour}, t0); err != nil {
			t.Fatal(err)
		}
		// Fill the names up to one short of the bound, in place.
		obj, err := e.s.Get(ctx, queue.TaskKey(task.Queue, task.ID))
		if err != nil {
			t.Fatal(err)
		}
		var rec map[string]any
		if err := json.Unmarshal(obj.Body, &rec); err != nil {
			t.Fatal(err)
		}
		names := []any{"a.txt"}
		for i := 1; i < queue.MaxArtifacts-1; i++ {
			names = append(names, fmt.Sprintf("n%d", i))
		}
		rec["artifact_names"] = names
		body, _ := json.Marshal(rec)
		if _, err := e.s.PutIfMatch(ctx, queue.TaskKey(task.Queue, task.ID), body, obj.ETag); err != nil {
			t.Fatal(err)
		}
		if _, _, err := e.q.ReserveArtifact(ctx, queue.ArtifactRequest{ID: task.Ref(), Name: "last.txt", TTL: time.Hour}, t0.Add(time.Second)); err != nil {
			t.Fatalf("the last name allowed: %v", err)
		}
		before := e.raw(task.ID)
		_, _, err = e.q.ReserveArtifact(ctx, queue.ArtifactRequest{ID: task.Ref(), Name: "one-more.txt", TTL: time.Hour}, t0.Add(2*time.Second))
		var ve *queue.ValidationError
		if !errors.As(err, &ve) || ve.Field != "name" || !errors.Is(err, queue.ErrTooLarge) {
			t.Fatalf("a name past the bound: %v", err)
		}
		if string(e.raw(task.ID)) != string(before) {
			t.Fatal("the refused name wrote the record")
		}
		// A name the task has is still fine.
		if _, _, err := e.q.ReserveArtifact(ctx, queue.ArtifactRequest{ID: task.Ref(), Name: "a.txt", TTL: time.Hour}, t0.Add(3*time.Second)); err != nil {
			t.Fatalf("a name the task has: %v", err)
		}
		if got := e.get(task.ID); len(got.ArtifactNames) != queue.MaxArtifacts {
			t.Fatalf("%d names recorded", len(got.ArtifactNames))
		}
	})
}

// The sweep's entry for the deletion of a task's artifacts
// (side_artifacts.go).
func runSideArtifacts(t *testing.T, f Factory) {
	// entries returns the artifacts entries of the sweep index.
	entries := func(e *env) []string {
		var out []string
		for _, k := range e.keys("sweep/") {
			if strings.Contains(k, "_artifacts_") {
				out = append(out, k)
			}
		}
		return out
	}

	t.Run("an_artifacts_entry_exists_for_each_later_time_the_record_has_named_until_the_sweep_reaches_it", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		a := e.submit(queue.SubmitRequest{}, t0)
		if _, _, err := e.q.ReserveArtifact(ctx, queue.ArtifactRequest{ID: a.Ref(), TTL: 10 * time.Minute}, t0); err != nil {
			t.Fatal(err)
		}
		wantKeyCount(t, "artifacts entries", entries(e), 1)
		// An earlier time than the record's writes nothing.
		if _, _, err := e.q.ReserveArtifact(ctx, queue.ArtifactRequest{ID: a.Ref(), TTL: time.Minute}, t0); err != nil {
			t.Fatal(err)
		}
		wantKeyCount(t, "artifacts entries", entries(e), 1)
		if _, _, err := e.q.ReserveArtifact(ctx, queue.ArtifactRequest{ID: a.Ref(), TTL: 20 * time.Minute}, t0); err != nil {
			t.Fatal(err)
		}
		wantKeyCount(t, "artifacts entries", entries(e), 2)
		e.sweep(t0.Add(time.Hour), nil)
		wantKeys(t, "artifacts entries after the sweep", entries(e))
	})

	t.Run("a_reservation_whose_record_write_fails_leaves_a_stale_entry_that_the_sweep_deletes_and_the_task_untouched", func(t *testing.T) {
		t.Parallel()
		e, fs := newLossEnv(t, f)
		a := e.submit(queue.SubmitRequest{}, t0)
		recordWriteFails(t, e, fs, "default", a.Ref(), func() error {
			_, _, err := e.q.ReserveArtifact(ctx, queue.ArtifactRequest{ID: a.Ref(), TTL: 10 * time.Minute}, t0)
			return err
		})
		if got := e.get(a.Ref()); got.ArtifactsExpireAt != nil {
			t.Fatalf("artifacts_expire_at %s after a failed reservation", got.ArtifactsExpireAt)
		}
		wantKeyCount(t, "artifacts entries", entries(e), 1)
		e.sweep(t0.Add(time.Hour), nil)
		wantKeys(t, "artifacts entries after the sweep", entries(e))
		wantStatus(t, e.get(a.Ref()), queue.StatusPending)
		if _, _, err := e.q.ReserveArtifact(ctx, queue.ArtifactRequest{ID: a.Ref(), TTL: 10 * time.Minute}, t0.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		wantKeyCount(t, "artifacts entries", entries(e), 1)
	})

	t.Run("a_reservation_whose_entry_answer_was_lost_writes_one_entry_and_the_sweep_deletes_the_artifacts_once", func(t *testing.T) {
		t.Parallel()
		e, fs := newLossEnv(t, f)
		a := e.submit(queue.SubmitRequest{}, t0)
		lose(fs, storefault.OpPut, "sweep/")
		if _, _, err := e.q.ReserveArtifact(ctx, queue.ArtifactRequest{ID: a.Ref(), TTL: 10 * time.Minute}, t0); err != nil {
			t.Fatal(err)
		}
		wantHits(t, fs, 1)
		wantKeyCount(t, "artifacts entries", entries(e), 1)
		e.put(queue.ArtifactKey(queue.DefaultQueue, a.ID, "out.bin"))
		if rep := e.sweep(t0.Add(time.Hour), nil); rep.ArtifactsDeleted != 1 {
			t.Fatalf("the sweep deleted %d artifacts, want 1", rep.ArtifactsDeleted)
		}
		wantKeys(t, "artifacts entries after the sweep", entries(e))
	})

	t.Run("two_reservations_racing_from_one_version_leave_the_records_time_with_its_entry", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		a := e.submit(queue.SubmitRequest{}, t0)
		p1, p2 := e.cached(a.Ref()), e.cached(a.Ref())
		errs := race(
			func() error {
				_, _, err := p1.ReserveArtifact(ctx, queue.ArtifactRequest{ID: a.Ref(), TTL: 10 * time.Minute}, t0)
				return err
			},
			func() error {
				_, _, err := p2.ReserveArtifact(ctx, queue.ArtifactRequest{ID: a.Ref(), TTL: 20 * time.Minute}, t0)
				return err
			},
		)
		if errs[0] != nil || errs[1] != nil {
			t.Fatalf("reservations: %v", errs)
		}
		got := e.get(a.Ref())
		if got.ArtifactsExpireAt == nil || !got.ArtifactsExpireAt.Equal(t0.Add(20*time.Minute)) {
			t.Fatalf("artifacts_expire_at %v, want the later reservation's", got.ArtifactsExpireAt)
		}
		found := false
		for _, k := range entries(e) {
			found = found || strings.Contains(k, a.ID) && strings.HasPrefix(k, "sweep/"+keyTime(t0.Add(20*time.Minute)))
		}
		if !found {
			t.Fatalf("no entry for the record's time: %v", entries(e))
		}
	})
}

// runSweepArtifactsCases are the artifacts cases of runSweep (groups.go).
func runSweepArtifactsCases(t *testing.T, f Factory) {

	t.Run("artifacts_are_deleted_once_past_their_time_or_once_the_task_finishes", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, f)
		put := func(id string, names ...string) {
			name, id, _ := strings.Cut(e.ref(id), "/")
			for _, n := range names {
				e.put(queue.ArtifactKey(name, id, n))
			}
		}
		a := e.submit(queue.SubmitRequest{}, t0)
		got, until, err := e.q.ReserveArtifact(ctx, queue.ArtifactRequest{ID: a.Ref(), TTL: 10 * time.Minute}, t0.Add(30*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if !until.Equal(t0.Add(10*time.Minute + 30*time.Second)) {
			t.Fatalf("url expiry %s", until)
		}
		wantTime(t, "artifacts_expire_at", got.ArtifactsExpireAt, t0.Add(11*time.Minute))
		put(a.ID, "in.bin", "notes.txt")
		// More URLs within the minute cost one GET and write nothing.
		q, counts := e.counted()
		if _, _, err := q.ReserveArtifact(ctx, queue.ArtifactRequest{ID: a.Ref(), TTL: 10 * time.Minute}, t0.Add(40*time.Second)); err != nil {
			t.Fatal(err)
		}
		if c := counts.Counts(); c != (store.Counts{Get: 1}) {
			t.Fatalf("second reservation: %v", c)
		}
		if rep := e.sweep(t0.Add(11*time.Minute-time.Second), nil); rep.ArtifactsDeleted != 0 {
			t.Fatalf("early: %+v", rep)
		}
		if rep := e.sweep(t0.Add(11*time.Minute), nil); rep.ArtifactsDeleted != 2 {
			t.Fatalf("due: %+v", rep)
		}
		wantKeys(t, "artifacts", e.inQueues("/artifacts/"))
		wantKeys(t, "hints", e.hints())

		// The task's deadline bounds the URLs.
		b := e.submit(queue.SubmitRequest{TTL: check.Dur("5m")}, t0)
		if _, until, err := e.q.ReserveArtifact(ctx, queue.ArtifactRequest{ID: b.Ref(), TTL: time.Hour}, t0); err != nil || !until.Equal(t0.Add(5*time.Minute)) {
			t.Fatalf("bounded: %s %v", until, err)
		}
		_, _, err = e.q.ReserveArtifact(ctx, queue.ArtifactRequest{ID: b.Ref(), TTL: time.Hour}, t0.Add(5*time.Minute))
		wantState(t, err, queue.StatusPending)

		// A finished task's artifacts go at the next sweep.
		c := e.submit(queue.SubmitRequest{Queue: "c"}, t0)
		if _, _, err := e.q.ReserveArtifact(ctx, queue.ArtifactRequest{ID: c.Ref(), TTL: time.Hour}, t0); err != nil {
			t.Fatal(err)
		}
		put(c.ID, "out.json")
		cl := e.claim(queue.ClaimRequest{Queue: "c"}, t0)[0]
		if _, err := e.q.Complete(ctx, queue.CompleteRequest{ID: c.Ref(), LeaseToken: cl.Lease.Token}, t0.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		_, _, err = e.q.ReserveArtifact(ctx, queue.ArtifactRequest{ID: c.Ref(), TTL: time.Hour}, t0.Add(time.Minute))
		wantState(t, err, queue.StatusCompleted)
		if rep := e.sweep(t0.Add(2*time.Minute), nil); rep.ArtifactsDeleted != 1 {
			t.Fatalf("finished: %+v", rep)
		}
		wantKeys(t, "artifacts", e.inQueues("/artifacts/"))

		// A later reservation moves the time: the earlier entry is let go.
		d := e.submit(queue.SubmitRequest{Queue: "d"}, t0)
		for _, when := range []time.Duration{0, 5 * time.Minute} {
			if _, _, err := e.q.ReserveArtifact(ctx, queue.ArtifactRequest{ID: d.Ref(), TTL: 10 * time.Minute}, t0.Add(when)); err != nil {
				t.Fatal(err)
			}
		}
		put(d.ID, "x")
		if rep := e.sweep(t0.Add(10*time.Minute), nil); rep.ArtifactsDeleted != 0 {
			t.Fatalf("superseded: %+v", rep)
		}
		if rep := e.sweep(t0.Add(time.Hour), nil); rep.ArtifactsDeleted != 1 {
			t.Fatalf("due: %+v", rep)
		}
		wantKeys(t, "artifacts", e.inQueues("/artifacts/"))
		wantKeys(t, "hints", e.hints())

		_, _, err = e.q.ReserveArtifact(ctx, queue.ArtifactRequest{ID: queue.NewID(t0), TTL: time.Hour}, t0)
		check.Err(t, err, queue.ErrNotFound)
		for _, bad := range []string{"", "../x", "a/b", ".hidden", "a..b", strings.Repeat("x", 129), "tab\tname"} {
			check.Field(t, queue.ValidateArtifactName(bad), "name")
		}
	})
}
