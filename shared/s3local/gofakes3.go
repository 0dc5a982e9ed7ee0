package s3local

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// GoFakeS3Options configures StartGoFakeS3.
type GoFakeS3Options struct {
	// Addr is the address to listen on. Defaults to "127.0.0.1:0", a free
	// loopback port.
	Addr string
	// Bucket is the bucket to create. Defaults to DefaultBucket.
	Bucket string
}

// StartGoFakeS3 serves gofakes3 with its in-memory backend over plain HTTP
// in this process, and creates a versioned bucket on it. Everything stored
// is lost on Close.
//
// gofakes3 honours If-None-Match: * and If-Match on PutObject atomically,
// but has no conditional DELETE. Two things are adjusted to match S3:
// ListObjectVersions lists each key's versions newest first and pages
// them by markers (s3mem lists them oldest first and cannot page a key's
// versions), and every write gets a distinct LastModified (a strictly
// increasing millisecond), so that versions and delete markers can be
// merged in order.
func StartGoFakeS3(opts GoFakeS3Options) (*Server, error) {
	if opts.Addr == "" {
		opts.Addr = "127.0.0.1:0"
	}
	if opts.Bucket == "" {
		opts.Bucket = DefaultBucket
	}
	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("listen for gofakes3: %w", err)
	}
	backend := newestFirst{s3mem.New(s3mem.WithTimeSource(&monotonicClock{}))}
	srv := &http.Server{
		Handler:           gofakes3.New(backend).Server(),
		ReadHeaderTimeout: 10 * time.Second,
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	s := &Server{
		Name:      "gofakes3",
		Endpoint:  "http://" + ln.Addr().String(),
		Region:    "us-east-1",
		AccessKey: "s3q",
		SecretKey: "s3q-secret",
		Bucket:    opts.Bucket,
	}
	s.stop = func() error {
		err := srv.Close()
		if serveErr := <-served; !errors.Is(serveErr, http.ErrServerClosed) {
			return fmt.Errorf("serve gofakes3: %w", serveErr)
		}
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.connect(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("set up gofakes3: %w", err)
	}
	return s, nil
}

// monotonicClock is a gofakes3.TimeSource whose Now is strictly increasing
// at the millisecond precision S3 timestamps carry (it runs ahead of the
// wall clock by at most a millisecond per call made within the same one).
type monotonicClock struct {
	mu   sync.Mutex
	last time.Time
}

var _ gofakes3.TimeSource = (*monotonicClock)(nil)

// Now returns the current UTC time in milliseconds, later than every time
// it returned before.
func (c *monotonicClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now().UTC().Truncate(time.Millisecond)
	if !now.After(c.last) {
		now = c.last.Add(time.Millisecond)
	}
	c.last = now
	return now
}

// Since returns the time elapsed since t.
func (c *monotonicClock) Since(t time.Time) time.Duration { return time.Since(t) }

// newestFirst is the s3mem backend listing the versions of each key newest
// first, as S3 does, instead of oldest first.
type newestFirst struct {
	*s3mem.Backend
}

var _ gofakes3.VersionedBackend = newestFirst{}

// ListBucketVersions lists a page of versions as S3 does: each key's
// newest first, MaxKeys at most, starting after the key marker (or,
// with a version id marker, after that version of the key marker), and a
// truncated page names where the next starts (NextKeyMarker,
// NextVersionIdMarker). s3mem lists each key oldest first, seeks its
// markers inclusively and names no next markers, so a key with more
// versions than a page could not be paged: this lists every version
// under the prefix from the key marker (an in-memory server for tests
// and s3q dev: a page costs what the whole listing does) and cuts the
// page itself.
func (b newestFirst) ListBucketVersions(bucket string, prefix *gofakes3.Prefix, page *gofakes3.ListBucketVersionsPage) (*gofakes3.ListBucketVersionsResult, error) {
	if page == nil {
		page = &gofakes3.ListBucketVersionsPage{}
	}
	all := gofakes3.ListBucketVersionsPage{KeyMarker: page.KeyMarker, HasKeyMarker: page.HasKeyMarker}
	res, err := b.Backend.ListBucketVersions(bucket, prefix, &all)
	if err != nil {
		return res, err
	}
	items := res.Versions
	for i := 0; i < len(items); {
		j := i + 1
		for j < len(items) && versionKey(items[j]) == versionKey(items[i]) {
			j++
		}
		slices.Reverse(items[i:j])
		i = j
	}
	if page.HasKeyMarker {
		skip := 0
		for skip < len(items) && versionKey(items[skip]) <= page.KeyMarker {
			if versionKey(items[skip]) == page.KeyMarker && page.HasVersionIDMarker {
				// After the marker version: every later one of the key stays.
				found := skip
				for found < len(items) && versionKey(items[found]) == page.KeyMarker && items[found].GetVersionID() != page.VersionIDMarker {
					found++
				}
				if found < len(items) && versionKey(items[found]) == page.KeyMarker {
					skip = found + 1
				}
				break
			}
			skip++
		}
		items = items[skip:]
	}
	res.MaxKeys, res.KeyMarker, res.VersionIDMarker = page.MaxKeys, page.KeyMarker, page.VersionIDMarker
	res.IsTruncated, res.NextKeyMarker, res.NextVersionIDMarker = false, "", ""
	if page.MaxKeys > 0 && int64(len(items)) > page.MaxKeys {
		items = items[:page.MaxKeys]
		last := items[len(items)-1]
		res.IsTruncated, res.NextKeyMarker, res.NextVersionIDMarker = true, versionKey(last), last.GetVersionID()
	}
	res.Versions = items
	return res, nil
}

// versionKey returns the key a listed version or delete marker belongs to.
func versionKey(item gofakes3.VersionItem) string {
	switch v := item.(type) {
	case *gofakes3.Version:
		return v.Key
	case *gofakes3.DeleteMarker:
		return v.Key
	}
	return ""
}
