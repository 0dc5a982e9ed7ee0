package queuetest

import (
	"strings"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/store/storefault"
)

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
