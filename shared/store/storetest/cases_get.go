package storetest

import (
	"errors"
	"testing"

	"github.com/s3q/s3q/shared/store"
)

var getCases = []testCase{
	{"get_of_a_missing_key_returns_not_found", func(t testing.TB, s store.Store) {
		_, err := s.Get(t.Context(), "missing")
		wantErr(t, "Get", err, store.ErrNotFound)
		if errors.Is(err, store.ErrRetryable) || errors.Is(err, store.ErrPrecondition) {
			t.Errorf("Get error = %v, want only ErrNotFound", err)
		}
	}},
	{"head_of_a_missing_key_returns_not_found", func(t testing.TB, s store.Store) {
		_, err := s.Head(t.Context(), "missing")
		wantErr(t, "Head", err, store.ErrNotFound)
	}},
	{"get_returns_the_body_and_etag_that_put_wrote", func(t testing.TB, s store.Store) {
		etag := put(t, s, "k", "hello")
		obj, err := s.Get(t.Context(), "k")
		if err != nil {
			t.Fatalf("Get: %v", err)
		}
		if obj.Key != "k" || string(obj.Body) != "hello" || obj.ETag != etag {
			t.Errorf("Get = key %q body %q etag %s; want k, hello, %s", obj.Key, obj.Body, obj.ETag, etag)
		}
		if obj.LastModified.IsZero() {
			t.Errorf("Get LastModified is zero")
		}
	}},
	{"get_of_an_empty_body_returns_an_empty_body", func(t testing.TB, s store.Store) {
		put(t, s, "empty", "")
		obj, err := s.Get(t.Context(), "empty")
		if err != nil {
			t.Fatalf("Get: %v", err)
		}
		if len(obj.Body) != 0 {
			t.Errorf("Get body = %q, want empty", obj.Body)
		}
	}},
	{"head_returns_the_etag_size_and_modification_time", func(t testing.TB, s store.Store) {
		etag := put(t, s, "k", "twelve bytes")
		info, err := s.Head(t.Context(), "k")
		if err != nil {
			t.Fatalf("Head: %v", err)
		}
		if info.Key != "k" || info.ETag != etag || info.Size != 12 {
			t.Errorf("Head = key %q etag %s size %d; want k, %s, 12", info.Key, info.ETag, info.Size, etag)
		}
		if info.LastModified.IsZero() {
			t.Errorf("Head LastModified is zero")
		}
	}},
}
