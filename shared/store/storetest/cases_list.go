package storetest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/s3q/s3q/shared/store"
)

var listCases = []testCase{
	{"list_returns_the_keys_under_a_prefix_in_byte_order", func(t testing.TB, s store.Store) {
		// '-' < '.' < '/' < '0' < 'A' < '_' < 'a' in bytes; a file system
		// walk that visits directory "a" before file "a-b" gets this wrong.
		want := []string{"p/A", "p/a-b", "p/a.c", "p/a/b", "p/a/c/d", "p/a0", "p/a_", "p/b"}
		keys := slices.Clone(want)
		slices.Reverse(keys)
		putAll(t, s, keys)
		page := list(t, s, "p/", "", 0)
		if got := page.Keys(); !slices.Equal(got, want) {
			t.Errorf("List keys = %q, want %q", got, want)
		}
		if page.Truncated {
			t.Errorf("List Truncated = true for %d keys", len(want))
		}
	}},
	{"list_returns_the_etag_size_and_modification_time", func(t testing.TB, s store.Store) {
		etag := put(t, s, "k", "five!")
		page := list(t, s, "k", "", 0)
		if len(page.Items) != 1 {
			t.Fatalf("List items = %+v, want one", page.Items)
		}
		it := page.Items[0]
		if it.Key != "k" || it.ETag != etag || it.Size != 5 || it.LastModified.IsZero() {
			t.Errorf("List item = %+v, want key k, ETag %s, size 5 and a time", it, etag)
		}
	}},
	{"list_with_a_prefix_leaves_out_keys_outside_it", func(t testing.TB, s store.Store) {
		putAll(t, s, []string{"q-1", "q/1", "q/2", "q0/1", "q2/1", "r/1"})
		if got, want := list(t, s, "q/", "", 0).Keys(), []string{"q/1", "q/2"}; !slices.Equal(got, want) {
			t.Errorf("List(q/) = %q, want %q", got, want)
		}
		if got, want := list(t, s, "q", "", 0).Keys(), []string{"q-1", "q/1", "q/2", "q0/1", "q2/1"}; !slices.Equal(got, want) {
			t.Errorf("List(q) = %q, want %q", got, want)
		}
	}},
	{"list_of_an_empty_prefix_is_empty_and_not_truncated", func(t testing.TB, s store.Store) {
		put(t, s, "elsewhere", "x")
		page := list(t, s, "nothing/", "", 0)
		if len(page.Items) != 0 || page.Truncated {
			t.Errorf("List of an empty prefix = %+v", page)
		}
	}},
	{"list_starts_strictly_after_start_after", func(t testing.TB, s store.Store) {
		putAll(t, s, []string{"s/1", "s/2", "s/3", "s/4"})
		if got, want := list(t, s, "s/", "s/2", 0).Keys(), []string{"s/3", "s/4"}; !slices.Equal(got, want) {
			t.Errorf("List after s/2 = %q, want %q", got, want)
		}
		// startAfter need not be a stored key.
		if got, want := list(t, s, "s/", "s/2x", 0).Keys(), []string{"s/3", "s/4"}; !slices.Equal(got, want) {
			t.Errorf("List after s/2x = %q, want %q", got, want)
		}
		if got := list(t, s, "s/", "s/4", 0).Keys(); len(got) != 0 {
			t.Errorf("List after the last key = %q, want none", got)
		}
	}},
	{"list_with_a_limit_is_truncated_and_continues_after_the_last_key", func(t testing.TB, s store.Store) {
		var want []string
		for i := range 7 {
			want = append(want, fmt.Sprintf("l/%02d", i))
		}
		putAll(t, s, want)
		var got []string
		var truncated []bool
		after := ""
		for range 10 {
			page := list(t, s, "l/", after, 3)
			got = append(got, page.Keys()...)
			truncated = append(truncated, page.Truncated)
			if !page.Truncated {
				break
			}
			after = page.Items[len(page.Items)-1].Key
		}
		if !slices.Equal(got, want) {
			t.Errorf("paged keys = %q, want %q", got, want)
		}
		if !slices.Equal(truncated, []bool{true, true, false}) {
			t.Errorf("pages Truncated = %v, want [true true false]", truncated)
		}
	}},
	{"list_without_a_limit_returns_one_full_page_of_1000_keys", func(t testing.TB, s store.Store) {
		const n = store.MaxListLimit + 5
		keys := make([]string, n)
		for i := range keys {
			keys[i] = fmt.Sprintf("m/%04d", i)
		}
		putAll(t, s, keys)
		for _, limit := range []int{0, -1, store.MaxListLimit + 1} {
			page := list(t, s, "m/", "", limit)
			if len(page.Items) != store.MaxListLimit || !page.Truncated {
				t.Errorf("List limit %d = %d keys, truncated %v; want %d, true", limit, len(page.Items), page.Truncated, store.MaxListLimit)
			}
		}
		page := list(t, s, "m/", keys[store.MaxListLimit-1], 0)
		if got, want := page.Keys(), keys[store.MaxListLimit:]; !slices.Equal(got, want) || page.Truncated {
			t.Errorf("List of the rest = %q (truncated %v), want %q", got, page.Truncated, want)
		}
	}},
}

// list lists keys and fails the test on error.
func list(t testing.TB, s store.Store, prefix, startAfter string, limit int) store.Page {
	t.Helper()
	page, err := s.List(t.Context(), prefix, startAfter, limit)
	if err != nil {
		t.Fatalf("List(%q, %q, %d): %v", prefix, startAfter, limit, err)
	}
	return page
}
