package queue

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/s3q/s3q/shared/internal/clip"
	"github.com/s3q/s3q/shared/store"
)

// reArtifact is what an artifact name may be: it becomes the last part of
// artifacts/{task_id}/{name}, so no "/", no "..", no control characters.
var reArtifact = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// ValidateArtifactName checks an artifact name before it becomes a key:
// 1-128 of A-Z a-z 0-9 . _ -, starting with a letter or digit, no "..".
func ValidateArtifactName(name string) error {
	if !reArtifact.MatchString(name) || strings.Contains(name, "..") {
		return invalid("name", "%q is not an artifact name: use 1-128 of A-Z a-z 0-9 . _ -, starting with a letter or digit, and no '..'", clip.Input(name))
	}
	return nil
}

// ceilMinute rounds t up to the next whole minute (t itself if whole).
// Artifact deletion times are kept at minute precision so that many URLs
// issued within a minute cost one record write, not one each.
func ceilMinute(t time.Time) time.Time {
	m := t.Truncate(time.Minute)
	if m.Equal(t) {
		return t
	}
	return m.Add(time.Minute)
}

// MaxArtifacts is the most artifacts (distinct names) one task may have:
// each name is recorded on the task, so that presigned URLs, which cost
// nothing to ask for, cannot fill the bucket with objects of one task.
const MaxArtifacts = 100

// ArtifactRequest prepares the upload of a task's artifacts.
type ArtifactRequest struct {
	// ID is the task's id or its queue/id reference.
	ID string
	// Name is the artifact to be uploaded: a name the task does not have
	// yet is recorded on it. Defaults to "": no name is recorded, only
	// the artifacts' deletion time is made sure of.
	Name string
	// TTL is how long the URLs issued now live, more than 0 (capped by
	// the task's deadline).
	TTL time.Duration
}

// ReserveArtifact prepares the upload of an artifact for a task at now
// and returns the task and the expiry of URLs issued now: min(now +
// req.TTL, expires_at). It makes sure the sweep deletes the task's
// artifacts no earlier than that expiry (rounded up to the minute) and no
// later than the first sweep after it, or after the task finishes,
// whichever comes first: when the deletion time must move later it
// writes an entry in the sweep index and then the record's
// artifacts_expire_at (one conditional write, which also records a new
// req.Name); otherwise it writes nothing.
//
// A task that is terminal, or whose deadline has passed (the URL would be
// dead on arrival), is a *StateError. A new name past MaxArtifacts is a
// *ValidationError on name wrapping ErrTooLarge; a TTL not above 0 one on
// artifact_ttl.
func (q *Queue) ReserveArtifact(ctx context.Context, req ArtifactRequest, now time.Time) (Task, time.Time, error) {
	name, ttl := req.Name, req.TTL
	now = norm(now)
	queue, id, err := q.locate(req.ID)
	if err != nil {
		return Task{}, time.Time{}, err
	}
	if ttl <= 0 {
		return Task{}, time.Time{}, invalid("artifact_ttl", "must be more than 0")
	}
	for i := 0; i < maxCASAttempts; i++ {
		cur, etag, err := q.load(ctx, queue, id)
		if err != nil {
			return Task{}, time.Time{}, err
		}
		if cur.Status.Terminal() {
			return Task{}, time.Time{}, &StateError{ID: id, Op: "upload artifacts for", Status: cur.Status}
		}
		until := cur.ArtifactURLExpiry(ttl, now)
		if !until.After(now) {
			return Task{}, time.Time{}, &StateError{ID: id, Op: "upload artifacts for", Status: cur.Status, Reason: "its deadline has passed"}
		}
		gc := ceilMinute(until)
		newName := name != "" && !slices.Contains(cur.ArtifactNames, name)
		if newName && len(cur.ArtifactNames) >= MaxArtifacts {
			return Task{}, time.Time{}, &ValidationError{Field: "name", Err: ErrTooLarge, Message: fmt.Sprintf(
				"task %s has %d artifacts, the most a task may have: upload under a name it has", id, len(cur.ArtifactNames))}
		}
		later := cur.ArtifactsExpireAt == nil || gc.After(*cur.ArtifactsExpireAt)
		if !later && !newName {
			return cur, until, nil
		}
		next := cur.clone()
		if later {
			next.ArtifactsExpireAt = &gc // its sweep entry first (side_artifacts.go)
		}
		if newName {
			next.ArtifactNames = append(slices.Clone(cur.ArtifactNames), name)
		}
		next.UpdatedAt = now
		if _, err := q.commit(ctx, &cur, etag, &next, cleanInline); err != nil {
			if errors.Is(err, store.ErrPrecondition) {
				continue
			}
			return Task{}, time.Time{}, err
		}
		return next, until, nil
	}
	return Task{}, time.Time{}, fmt.Errorf("reserve artifacts of task %s: %w", id, ErrConflict)
}

// ArtifactReadExpiry returns when a presigned GET URL issued at now for
// one of the task's artifacts expires: min(now + ttl, expires_at), and no
// later than the artifacts' deletion. ok is false when no artifact can be
// read at now (none was ever reserved, or they are past their time).
func (t *Task) ArtifactReadExpiry(ttl time.Duration, now time.Time) (until time.Time, ok bool) {
	if t.ArtifactsExpireAt == nil {
		return time.Time{}, false
	}
	until = t.ArtifactURLExpiry(ttl, now)
	if t.ArtifactsExpireAt.Before(until) {
		until = *t.ArtifactsExpireAt
	}
	return until, until.After(now)
}

// deleteArtifacts deletes every object under q/{queue}/artifacts/{id}/ and returns
// how many it deleted.
func (q *Queue) deleteArtifacts(ctx context.Context, queue, id string) (int, error) {
	prefix := ArtifactPrefix(queue, id)
	n := 0
	for it, err := range store.All(ctx, q.store, prefix) {
		if err != nil {
			return n, fmt.Errorf("list %s: %w", prefix, err)
		}
		if err := q.store.Delete(ctx, it.Key); err != nil {
			return n, fmt.Errorf("delete %s: %w", it.Key, err)
		}
		n++
	}
	return n, nil
}
