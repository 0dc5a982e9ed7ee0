package store

import (
	"bytes"
	"context"
	"errors"
)

// OwnAttempts is how many times CreateOwn tries a create whose answer was
// lost and whose key is still absent on the re-read.
const OwnAttempts = 3

// CreateOwn creates key with body (PutIfAbsent) and recognises its own
// write when the answer was lost: after an error other than
// ErrPrecondition it reads key back, and when the stored object is ours
// (mine(stored body), or equal to body when mine is nil) the write landed
// and CreateOwn returns its ETag. A key that is still absent is created
// again, up to OwnAttempts times in all. A key that already existed, or
// that holds another writer's object after a lost answer, returns
// ErrPrecondition. When the re-read fails too, the write's own error is
// returned: it MAY have been applied. opts go with every PutIfAbsent.
func CreateOwn(ctx context.Context, s Store, key string, body []byte, mine func(stored []byte) bool, opts ...PutOption) (string, error) {
	if mine == nil {
		mine = func(stored []byte) bool { return bytes.Equal(stored, body) }
	}
	var err error
	for i := 0; i < OwnAttempts; i++ {
		var etag string
		if etag, err = s.PutIfAbsent(ctx, key, body, opts...); err == nil {
			return etag, nil
		}
		if i == 0 && errors.Is(err, ErrPrecondition) {
			return "", err // it existed before this call
		}
		obj, gerr := s.Get(ctx, key)
		switch {
		case gerr == nil && mine(obj.Body):
			return obj.ETag, nil
		case gerr == nil:
			if errors.Is(err, ErrPrecondition) {
				return "", err
			}
			return "", ErrPrecondition
		case errors.Is(gerr, ErrNotFound):
			continue // not written (or deleted meanwhile): create it again
		default:
			return "", err
		}
	}
	return "", err
}

// SwapOwn replaces key by body if its ETag is etag (PutIfMatch) and
// recognises its own write when the answer was lost: after an error other
// than ErrPrecondition it reads key back, and when the stored object is
// ours (mine, or equal to body when mine is nil) returns its ETag. Every
// body a compare-and-swap writer makes must be unique to it (a token, a
// time) for this to hold. opts go with the PutIfMatch.
func SwapOwn(ctx context.Context, s Store, key string, body []byte, etag string, mine func(stored []byte) bool, opts ...PutOption) (string, error) {
	newETag, err := s.PutIfMatch(ctx, key, body, etag, opts...)
	if err == nil || errors.Is(err, ErrPrecondition) {
		return newETag, err
	}
	if mine == nil {
		mine = func(stored []byte) bool { return bytes.Equal(stored, body) }
	}
	if obj, gerr := s.Get(ctx, key); gerr == nil && mine(obj.Body) {
		return obj.ETag, nil
	}
	return "", err
}

// PutOwn writes key unconditionally (an idempotent write such as an empty
// marker) and recognises its own write when the answer was lost: after an
// error it reads key back and succeeds when key holds body.
func PutOwn(ctx context.Context, s Store, key string, body []byte, opts ...PutOption) (string, error) {
	etag, err := s.Put(ctx, key, body, opts...)
	if err == nil {
		return etag, nil
	}
	if obj, gerr := s.Get(ctx, key); gerr == nil && bytes.Equal(obj.Body, body) {
		return obj.ETag, nil
	}
	return "", err
}

// DeleteOwn deletes key and recognises its own delete when the answer was
// lost: after an error it checks key and succeeds when key is gone.
func DeleteOwn(ctx context.Context, s Store, key string) error {
	err := s.Delete(ctx, key)
	if err == nil {
		return nil
	}
	if _, herr := s.Head(ctx, key); errors.Is(herr, ErrNotFound) {
		return nil
	}
	return err
}
