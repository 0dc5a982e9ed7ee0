package storetest

import (
	"testing"

	"github.com/s3q/s3q/shared/store"
)

var deleteCases = []testCase{
	{"delete_of_a_missing_key_succeeds", func(t testing.TB, s store.Store) {
		if err := s.Delete(t.Context(), "missing"); err != nil {
			t.Fatalf("Delete of a missing key: %v", err)
		}
	}},
	{"delete_removes_the_key_from_get_head_and_list", func(t testing.TB, s store.Store) {
		put(t, s, "d/k", "v1")
		put(t, s, "d/kept", "v1")
		del(t, s, "d/k")
		wantMissing(t, s, "d/k")
		page, err := s.List(t.Context(), "d/", "", 0)
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		if keys := page.Keys(); len(keys) != 1 || keys[0] != "d/kept" {
			t.Errorf("List after Delete = %q, want [d/kept]", keys)
		}
	}},
	{"delete_twice_succeeds", func(t testing.TB, s store.Store) {
		put(t, s, "k", "v1")
		del(t, s, "k")
		del(t, s, "k")
		wantMissing(t, s, "k")
	}},
}
