package storetest

import (
	"testing"

	"github.com/s3q/s3q/shared/store"
)

var putCases = []testCase{
	{"put_if_absent_creates_a_missing_key", func(t testing.TB, s store.Store) {
		etag, err := s.PutIfAbsent(t.Context(), "k", []byte("first"))
		if err != nil {
			t.Fatalf("PutIfAbsent: %v", err)
		}
		if etag == "" {
			t.Fatalf("PutIfAbsent returned an empty ETag")
		}
		wantBody(t, s, "k", "first", etag)
	}},
	{"put_if_absent_on_an_existing_key_returns_precondition_and_keeps_the_body", func(t testing.TB, s store.Store) {
		etag, err := s.PutIfAbsent(t.Context(), "k", []byte("first"))
		if err != nil {
			t.Fatalf("PutIfAbsent: %v", err)
		}
		_, err = s.PutIfAbsent(t.Context(), "k", []byte("second"))
		wantErr(t, "second PutIfAbsent", err, store.ErrPrecondition)
		wantBody(t, s, "k", "first", etag)
	}},
	{"put_if_absent_after_delete_creates_the_key", func(t testing.TB, s store.Store) {
		put(t, s, "k", "old")
		del(t, s, "k")
		etag, err := s.PutIfAbsent(t.Context(), "k", []byte("new"))
		if err != nil {
			t.Fatalf("PutIfAbsent after Delete: %v", err)
		}
		wantBody(t, s, "k", "new", etag)
	}},
	{"put_if_match_with_the_current_etag_replaces_the_body", func(t testing.TB, s store.Store) {
		etag := put(t, s, "k", "v1")
		newETag, err := s.PutIfMatch(t.Context(), "k", []byte("v2"), etag)
		if err != nil {
			t.Fatalf("PutIfMatch: %v", err)
		}
		if newETag == "" || newETag == etag {
			t.Errorf("PutIfMatch ETag = %q, want a new one (old %s)", newETag, etag)
		}
		wantBody(t, s, "k", "v2", newETag)
	}},
	{"put_if_match_accepts_the_etag_of_put_if_absent_and_of_itself", func(t testing.TB, s store.Store) {
		etag, err := s.PutIfAbsent(t.Context(), "k", []byte("v1"))
		if err != nil {
			t.Fatalf("PutIfAbsent: %v", err)
		}
		for _, body := range []string{"v2", "v3", "v4"} {
			if etag, err = s.PutIfMatch(t.Context(), "k", []byte(body), etag); err != nil {
				t.Fatalf("PutIfMatch(%s): %v", body, err)
			}
		}
		wantBody(t, s, "k", "v4", etag)
	}},
	{"put_if_match_with_a_stale_etag_returns_precondition_and_keeps_the_body", func(t testing.TB, s store.Store) {
		stale := put(t, s, "k", "v1")
		current := put(t, s, "k", "v2")
		_, err := s.PutIfMatch(t.Context(), "k", []byte("v3"), stale)
		wantErr(t, "PutIfMatch with a stale ETag", err, store.ErrPrecondition)
		wantBody(t, s, "k", "v2", current)
	}},
	{"put_if_match_with_an_etag_of_another_key_returns_precondition", func(t testing.TB, s store.Store) {
		other := put(t, s, "other", "other body")
		current := put(t, s, "k", "v1")
		_, err := s.PutIfMatch(t.Context(), "k", []byte("v2"), other)
		wantErr(t, "PutIfMatch", err, store.ErrPrecondition)
		wantBody(t, s, "k", "v1", current)
	}},
	{"put_if_match_with_an_empty_etag_returns_precondition", func(t testing.TB, s store.Store) {
		current := put(t, s, "k", "v1")
		_, err := s.PutIfMatch(t.Context(), "k", []byte("v2"), "")
		wantErr(t, "PutIfMatch with an empty ETag", err, store.ErrPrecondition)
		wantBody(t, s, "k", "v1", current)
	}},
	{"put_if_match_on_a_missing_key_returns_precondition_and_creates_nothing", func(t testing.TB, s store.Store) {
		etag := put(t, s, "elsewhere", "v1")
		_, err := s.PutIfMatch(t.Context(), "k", []byte("v2"), etag)
		wantErr(t, "PutIfMatch on a missing key", err, store.ErrPrecondition)
		wantMissing(t, s, "k")
	}},
	{"put_if_match_after_delete_returns_precondition_and_creates_nothing", func(t testing.TB, s store.Store) {
		etag := put(t, s, "k", "v1")
		del(t, s, "k")
		_, err := s.PutIfMatch(t.Context(), "k", []byte("v2"), etag)
		wantErr(t, "PutIfMatch with the ETag of a deleted object", err, store.ErrPrecondition)
		wantMissing(t, s, "k")
	}},
	{"put_creates_and_replaces_unconditionally", func(t testing.TB, s store.Store) {
		first := put(t, s, "k", "v1")
		wantBody(t, s, "k", "v1", first)
		second := put(t, s, "k", "v2")
		if second == first {
			t.Errorf("Put of a new body kept the ETag %s", first)
		}
		wantBody(t, s, "k", "v2", second)
	}},
	{"put_of_a_key_with_slashes_and_punctuation_round_trips", func(t testing.TB, s store.Store) {
		key := "tasks/q-1/2026-01-02T03:04:05.000006Z_01J+id=x.json"
		etag := put(t, s, key, "body")
		wantBody(t, s, key, "body", etag)
		page, err := s.List(t.Context(), "tasks/", "", 0)
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		if keys := page.Keys(); len(keys) != 1 || keys[0] != key {
			t.Errorf("List keys = %q, want [%q]", keys, key)
		}
	}},
}
