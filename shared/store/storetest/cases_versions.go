package storetest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/s3q/s3q/shared/store"
)

var versionCases = []testCase{
	{"versions_list_every_put_newest_first", func(t testing.TB, s store.Store) {
		e1, e2, e3 := put(t, s, "k", "v1"), put(t, s, "k", "v2"), put(t, s, "k", "v3")
		vs := versions(t, s, "k")
		wantVersions(t, vs, "latest:"+e3, e2, e1)
		for i, body := range []string{"v3", "v2", "v1"} {
			obj, err := s.GetVersion(t.Context(), "k", vs[i].VersionID)
			if err != nil {
				t.Fatalf("GetVersion(%s): %v", vs[i].VersionID, err)
			}
			if string(obj.Body) != body || obj.ETag != vs[i].ETag {
				t.Errorf("GetVersion(%s) = %q %s, want %q %s", vs[i].VersionID, obj.Body, obj.ETag, body, vs[i].ETag)
			}
		}
	}},
	{"versions_list_a_delete_marker_first_after_delete", func(t testing.TB, s store.Store) {
		e1, e2 := put(t, s, "k", "v1"), put(t, s, "k", "v2")
		del(t, s, "k")
		wantVersions(t, versions(t, s, "k"), "latest:marker", e2, e1)
	}},
	{"versions_keep_the_delete_marker_between_a_key_and_its_recreation", func(t testing.TB, s store.Store) {
		e1 := put(t, s, "k", "v1")
		del(t, s, "k")
		e2 := put(t, s, "k", "v2")
		wantVersions(t, versions(t, s, "k"), "latest:"+e2, "marker", e1)
	}},
	{"versions_of_a_key_leave_out_keys_it_prefixes", func(t testing.TB, s store.Store) {
		put(t, s, "a", "a1")
		put(t, s, "ab", "ab1")
		put(t, s, "ab", "ab2")
		put(t, s, "a0", "a01")
		e2 := put(t, s, "a", "a2")
		vs := versions(t, s, "a")
		if len(vs) != 2 || vs[0].ETag != e2 {
			t.Errorf("Versions(a) = %s, want two versions of a, newest %s", describe(vs), e2)
		}
		for _, v := range vs {
			if v.Key != "a" {
				t.Errorf("Versions(a) lists key %q", v.Key)
			}
		}
	}},
	{"versions_of_a_missing_key_are_empty", func(t testing.TB, s store.Store) {
		put(t, s, "missing-not", "x")
		if vs := versions(t, s, "missing"); len(vs) != 0 {
			t.Errorf("Versions of a missing key = %s, want none", describe(vs))
		}
	}},
	{"versions_page_newest_first_after_a_version", func(t testing.TB, s store.Store) {
		var etags []string // oldest first
		for i := range 5 {
			etags = append(etags, put(t, s, "k", fmt.Sprint("v", i)))
		}
		put(t, s, "k0", "a key it prefixes")
		del(t, s, "k")
		var got []string
		after := ""
		for pages := 0; ; pages++ {
			if pages > 10 {
				t.Fatalf("no end after %d pages: %v", pages, got)
			}
			p, err := s.Versions(t.Context(), "k", after, 2)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Versions) > 2 {
				t.Fatalf("a page of limit 2 has %d versions", len(p.Versions))
			}
			for _, v := range p.Versions {
				if v.DeleteMarker {
					got = append(got, "marker")
				} else {
					got = append(got, v.ETag)
				}
			}
			if p.Next == "" {
				break
			}
			after = p.Next
		}
		want := []string{"marker", etags[4], etags[3], etags[2], etags[1], etags[0]}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("pages of 2 = %v, want %v", got, want)
		}
	}},
	{"versions_page_past_1000_versions_without_a_gap_or_a_repeat", func(t testing.TB, s store.Store) {
		const n = 1005
		var etags []string // oldest first
		for i := range n {
			etags = append(etags, put(t, s, "many", fmt.Sprint(i)))
		}
		first, err := s.Versions(t.Context(), "many", "", 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(first.Versions) > store.MaxListLimit || first.Next == "" {
			t.Fatalf("first page: %d versions, next %q; want at most 1000 and a next", len(first.Versions), first.Next)
		}
		vs := versions(t, s, "many")
		if len(vs) != n {
			t.Fatalf("%d versions listed, want %d", len(vs), n)
		}
		seen := map[string]bool{}
		for i, v := range vs {
			if v.ETag != etags[n-1-i] || seen[v.VersionID] {
				t.Fatalf("version %d: %s (seen %v), want %s", i, v.ETag, seen[v.VersionID], etags[n-1-i])
			}
			seen[v.VersionID] = true
		}
	}},
	{"get_version_returns_an_old_body_after_the_key_changed", func(t testing.TB, s store.Store) {
		e1 := put(t, s, "k", "old body")
		put(t, s, "k", "new body")
		vs := versions(t, s, "k")
		if len(vs) != 2 {
			t.Fatalf("Versions = %s, want two", describe(vs))
		}
		obj, err := s.GetVersion(t.Context(), "k", vs[1].VersionID)
		if err != nil {
			t.Fatalf("GetVersion: %v", err)
		}
		if obj.Key != "k" || string(obj.Body) != "old body" || obj.ETag != e1 || obj.VersionID != vs[1].VersionID {
			t.Errorf("GetVersion = %+v, want the old body with ETag %s", obj, e1)
		}
	}},
	{"get_version_of_an_unknown_version_returns_not_found", func(t testing.TB, s store.Store) {
		put(t, s, "other", "x")
		put(t, s, "k", "v1")
		other := versions(t, s, "other")
		if len(other) != 1 {
			t.Fatalf("Versions(other) = %s, want one", describe(other))
		}
		_, err := s.GetVersion(t.Context(), "k", other[0].VersionID)
		wantErr(t, "GetVersion with the version of another key", err, store.ErrNotFound)
		_, err = s.GetVersion(t.Context(), "missing", other[0].VersionID)
		wantErr(t, "GetVersion of a missing key", err, store.ErrNotFound)
	}},
}

// versions lists every version of key, page by page, and fails the test
// on error.
func versions(t testing.TB, s store.Store, key string) []store.Version {
	t.Helper()
	vs, err := store.AllVersions(t.Context(), s, key)
	if err != nil {
		t.Fatalf("Versions(%q): %v", key, err)
	}
	return vs
}

// wantVersions checks vs against a newest-first description: each entry is
// an ETag or "marker" (a delete marker), the first prefixed "latest:".
func wantVersions(t testing.TB, vs []store.Version, want ...string) {
	t.Helper()
	if got := describe(vs); got != "["+strings.Join(want, " ")+"]" {
		t.Errorf("Versions = %s, want [%s]", got, strings.Join(want, " "))
	}
	seen := map[string]bool{}
	for _, v := range vs {
		if v.VersionID == "" || seen[v.VersionID] {
			t.Errorf("Versions has an empty or repeated version ID in %+v", vs)
		}
		seen[v.VersionID] = true
	}
}

// describe renders versions as wantVersions expects them.
func describe(vs []store.Version) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		p := v.ETag
		if v.DeleteMarker {
			p = "marker"
		}
		if v.IsLatest {
			p = "latest:" + p
		}
		parts[i] = p
	}
	return fmt.Sprintf("[%s]", strings.Join(parts, " "))
}
