package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/s3q/s3q/shared/store"
)

// put writes key unconditionally and returns its ETag.
func put(t testing.TB, s store.Store, key, body string) string {
	t.Helper()
	etag, err := s.Put(t.Context(), key, []byte(body))
	if err != nil {
		t.Fatalf("Put(%q): %v", key, err)
	}
	if etag == "" {
		t.Fatalf("Put(%q) returned an empty ETag", key)
	}
	return etag
}

// del deletes key.
func del(t testing.TB, s store.Store, key string) {
	t.Helper()
	if err := s.Delete(t.Context(), key); err != nil {
		t.Fatalf("Delete(%q): %v", key, err)
	}
}

// wantBody checks that key holds body (and etag, when not empty).
func wantBody(t testing.TB, s store.Store, key, body, etag string) {
	t.Helper()
	obj, err := s.Get(t.Context(), key)
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	if !bytes.Equal(obj.Body, []byte(body)) {
		t.Errorf("Get(%q) body = %q, want %q", key, obj.Body, body)
	}
	if etag != "" && obj.ETag != etag {
		t.Errorf("Get(%q) ETag = %s, want %s", key, obj.ETag, etag)
	}
}

// wantMissing checks that Get and Head of key return ErrNotFound.
func wantMissing(t testing.TB, s store.Store, key string) {
	t.Helper()
	if obj, err := s.Get(t.Context(), key); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get(%q) = body %q, error %v; want ErrNotFound", key, obj.Body, err)
	}
	if _, err := s.Head(t.Context(), key); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Head(%q) error = %v, want ErrNotFound", key, err)
	}
}

// wantErr checks that err is target.
func wantErr(t testing.TB, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s error = %v, want %v", what, err, target)
	}
}

// putAll writes body "body-of-<key>" at every key, a few at a time.
func putAll(t testing.TB, s store.Store, keys []string) {
	t.Helper()
	sem := make(chan struct{}, 16)
	errs := make(chan error, len(keys))
	var wg sync.WaitGroup
	for _, key := range keys {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if _, err := s.Put(t.Context(), key, []byte("body-of-"+key)); err != nil {
				errs <- fmt.Errorf("Put(%q): %w", key, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
