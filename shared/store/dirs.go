package store

import (
	"context"
	"strings"
)

// DirLister is a Store that lists the folders below a prefix in one
// request (S3's ListObjectsV2 with Delimiter "/", its CommonPrefixes).
// It is optional: ListDirs falls back to plain LISTs without it.
type DirLister interface {
	// ListDirs returns up to limit folders below prefix (each a key prefix
	// ending in "/", the prefix included), in lexical order, starting
	// strictly after startAfter when it is not empty. Truncated is true
	// when more folders may follow. One call is one LIST request.
	ListDirs(ctx context.Context, prefix, startAfter string, limit int) (dirs []string, truncated bool, err error)
}

// ListDirs lists the folders below prefix (see DirLister). A Store that
// is no DirLister is read with one LIST of one key per folder, each
// starting past the folder before: correct, but a request per folder.
// The keys below a folder must sort below "~" after it (s3q's do: they
// are made of A-Z a-z 0-9 . _ -).
func ListDirs(ctx context.Context, s Store, prefix, startAfter string, limit int) ([]string, bool, error) {
	if d, ok := s.(DirLister); ok {
		return d.ListDirs(ctx, prefix, startAfter, limit)
	}
	return listDirsByKeys(ctx, s, prefix, startAfter, limit)
}

// listDirsByKeys is ListDirs without a DirLister.
func listDirsByKeys(ctx context.Context, s Store, prefix, startAfter string, limit int) ([]string, bool, error) {
	limit = ListLimit(limit)
	var dirs []string
	after := startAfter
	for len(dirs) < limit {
		page, err := s.List(ctx, prefix, after, 1)
		if err != nil {
			return dirs, false, err
		}
		if len(page.Items) == 0 {
			return dirs, false, nil
		}
		dir, ok := DirOf(prefix, page.Items[0].Key)
		if !ok {
			after = page.Items[0].Key
			continue
		}
		dirs = append(dirs, dir)
		after = dir + "~"
	}
	return dirs, true, nil
}

// DirOf returns the folder below prefix that key is in, or false when key
// is directly under prefix.
func DirOf(prefix, key string) (string, bool) {
	rest, ok := strings.CutPrefix(key, prefix)
	if !ok {
		return "", false
	}
	i := strings.IndexByte(rest, '/')
	if i < 0 {
		return "", false
	}
	return prefix + rest[:i+1], true
}

// AllDirs iterates over every folder below prefix, a page of ListDirs at
// a time.
func AllDirs(ctx context.Context, s Store, prefix string) func(yield func(string, error) bool) {
	return func(yield func(string, error) bool) {
		after := ""
		for {
			dirs, truncated, err := ListDirs(ctx, s, prefix, after, MaxListLimit)
			if err != nil {
				yield("", err)
				return
			}
			for _, d := range dirs {
				if !yield(d, nil) {
					return
				}
			}
			if !truncated || len(dirs) == 0 {
				return
			}
			after = dirs[len(dirs)-1] + "~"
		}
	}
}
