// Package memstore is an in-memory store.Store with the semantics of a
// versioned S3 bucket: MD5 ETags, atomic conditional writes, lexical
// listing and a version history per key. It exists for fast unit runs of
// the same conformance suites that prove behaviour on real S3 servers.
package memstore

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/s3q/s3q/shared/store"
)

var _ store.Store = (*Store)(nil)

// Store is an in-memory, versioned, concurrency-safe object store.
// The zero value is not usable; call New.
type Store struct {
	mu      sync.Mutex
	objects map[string][]version // newest last; the last may be a delete marker
	seq     int64
	clock   func() time.Time
}

type version struct {
	id      string
	body    []byte
	etag    string
	deleted bool
	at      time.Time
}

// New returns an empty store.
func New() *Store {
	return &Store{objects: make(map[string][]version), clock: time.Now}
}

func etagOf(body []byte) string {
	sum := md5.Sum(body)
	return `"` + hex.EncodeToString(sum[:]) + `"`
}

// current returns the live version of key, if any. Callers hold mu.
func (s *Store) current(key string) (version, bool) {
	vs := s.objects[key]
	if len(vs) == 0 || vs[len(vs)-1].deleted {
		return version{}, false
	}
	return vs[len(vs)-1], true
}

// write appends a version. Callers hold mu.
func (s *Store) write(key string, body []byte, deleted bool) version {
	s.seq++
	v := version{id: fmt.Sprintf("v%012d", s.seq), deleted: deleted, at: s.clock().UTC()}
	if !deleted {
		v.body = append([]byte(nil), body...)
		v.etag = etagOf(body)
	}
	s.objects[key] = append(s.objects[key], v)
	return v
}

func (s *Store) object(key string, v version) store.Object {
	return store.Object{Key: key, Body: append([]byte(nil), v.body...), ETag: v.etag, VersionID: v.id, LastModified: v.at}
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, key string) (store.Object, error) {
	if err := ctx.Err(); err != nil {
		return store.Object{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.current(key)
	if !ok {
		return store.Object{}, fmt.Errorf("get %s: %w", key, store.ErrNotFound)
	}
	return s.object(key, v), nil
}

// Head implements store.Store.
func (s *Store) Head(ctx context.Context, key string) (store.Info, error) {
	if err := ctx.Err(); err != nil {
		return store.Info{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.current(key)
	if !ok {
		return store.Info{}, fmt.Errorf("head %s: %w", key, store.ErrNotFound)
	}
	return store.Info{Key: key, ETag: v.etag, Size: int64(len(v.body)), LastModified: v.at}, nil
}

// PutIfAbsent implements store.Store.
func (s *Store) PutIfAbsent(ctx context.Context, key string, body []byte, opts ...store.PutOption) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.current(key); ok {
		return "", fmt.Errorf("put %s if absent: %w", key, store.ErrPrecondition)
	}
	return s.write(key, body, false).etag, nil
}

// PutIfMatch implements store.Store.
func (s *Store) PutIfMatch(ctx context.Context, key string, body []byte, etag string, opts ...store.PutOption) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.current(key)
	if !ok || v.etag != etag {
		return "", fmt.Errorf("put %s if match: %w", key, store.ErrPrecondition)
	}
	return s.write(key, body, false).etag, nil
}

// Put implements store.Store.
func (s *Store) Put(ctx context.Context, key string, body []byte, opts ...store.PutOption) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.write(key, body, false).etag, nil
}

// Delete implements store.Store. Like S3 with versioning, it leaves a
// delete marker and keeps the older versions.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.current(key); ok {
		s.write(key, nil, true)
	}
	return nil
}

// List implements store.Store.
func (s *Store) List(ctx context.Context, prefix, startAfter string, limit int) (store.Page, error) {
	if err := ctx.Err(); err != nil {
		return store.Page{}, err
	}
	limit = store.ListLimit(limit)
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := make([]string, 0)
	for k := range s.objects {
		if strings.HasPrefix(k, prefix) && k > startAfter {
			if _, ok := s.current(k); ok {
				keys = append(keys, k)
			}
		}
	}
	sort.Strings(keys)
	var page store.Page
	if len(keys) > limit {
		keys, page.Truncated = keys[:limit], true
	}
	page.Items = make([]store.Info, len(keys))
	for i, k := range keys {
		v, _ := s.current(k)
		page.Items[i] = store.Info{Key: k, ETag: v.etag, Size: int64(len(v.body)), LastModified: v.at}
	}
	return page, nil
}

// ListDirs implements store.DirLister.
func (s *Store) ListDirs(ctx context.Context, prefix, startAfter string, limit int) ([]string, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	limit = store.ListLimit(limit)
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := map[string]bool{}
	dirs := []string{}
	for k := range s.objects {
		dir, ok := store.DirOf(prefix, k)
		if !ok || dir <= startAfter || seen[dir] {
			continue
		}
		if _, ok := s.current(k); ok {
			seen[dir] = true
			dirs = append(dirs, dir)
		}
	}
	sort.Strings(dirs)
	if len(dirs) > limit {
		return dirs[:limit], true, nil
	}
	return dirs, false, nil
}

// Versions implements store.Store.
func (s *Store) Versions(ctx context.Context, key, after string, limit int) (store.VersionPage, error) {
	if err := ctx.Err(); err != nil {
		return store.VersionPage{}, err
	}
	limit = store.ListLimit(limit)
	s.mu.Lock()
	defer s.mu.Unlock()
	vs := s.objects[key]
	start := len(vs) - 1 // newest first
	if after != "" {
		start = -1
		for i, v := range vs {
			if v.id == after {
				start = i - 1
			}
		}
	}
	var page store.VersionPage
	for i := start; i >= 0; i-- {
		if len(page.Versions) == limit {
			page.Next = page.Versions[limit-1].VersionID
			break
		}
		v := vs[i]
		page.Versions = append(page.Versions, store.Version{
			Key: key, VersionID: v.id, ETag: v.etag, IsLatest: i == len(vs)-1,
			DeleteMarker: v.deleted, Size: int64(len(v.body)), LastModified: v.at,
		})
	}
	return page, nil
}

// GetVersion implements store.Store.
func (s *Store) GetVersion(ctx context.Context, key, versionID string) (store.Object, error) {
	if err := ctx.Err(); err != nil {
		return store.Object{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range s.objects[key] {
		if v.id == versionID && !v.deleted {
			return s.object(key, v), nil
		}
	}
	return store.Object{}, fmt.Errorf("get %s version %s: %w", key, versionID, store.ErrNotFound)
}
