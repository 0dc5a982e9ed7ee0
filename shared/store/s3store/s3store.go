// Package s3store implements store.Store on Amazon S3 or any S3-compatible
// server (versitygw, gofakes3, MinIO, LocalStack) through aws-sdk-go-v2.
//
// Conditional writes map onto PutObject's If-None-Match: * and If-Match
// headers. ETags are passed through exactly as the server sends them, quotes
// included, so an ETag read from Get or Put can be handed back to PutIfMatch
// unchanged. Every SDK error is translated in one place (mapError).
package s3store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3q/s3q/shared/store"
)

var _ store.Store = (*Store)(nil)

// Store is a store.Store on one S3 bucket, optionally confined to a key
// prefix. It is safe for concurrent use.
type Store struct {
	client *s3.Client
	bucket string
	prefix string

	// idempotent and conditional are the per-request options of requests
	// that may be repeated (fully retried) and of conditional writes
	// (retried on throttling only).
	idempotent, conditional []func(*s3.Options)
}

// New returns a Store on bucket through client. Every key is stored as
// prefix+key, and List strips prefix from the keys it returns, so several
// stores (one per test, say) can share a bucket under different prefixes.
// prefix may be empty.
//
// The Store sets its own retry policy on each request, whatever client was
// built with: throttling and transient failures are retried with
// exponential backoff, and a conditional write is retried only when the
// server refused it unprocessed (throttling), so that a 412 always means
// that someone else's write won.
func New(client *s3.Client, bucket, prefix string) *Store {
	return newStore(client, bucket, prefix, defaultRetryPolicy)
}

func newStore(client *s3.Client, bucket, prefix string, p retryPolicy) *Store {
	idempotent, conditional := p.retryers()
	return &Store{
		client:      client,
		bucket:      bucket,
		prefix:      prefix,
		idempotent:  []func(*s3.Options){func(o *s3.Options) { o.Retryer = idempotent }, attemptTimeout(p.AttemptTimeout)},
		conditional: []func(*s3.Options){func(o *s3.Options) { o.Retryer = conditional }, attemptTimeout(p.AttemptTimeout)},
	}
}

// Get returns the current body and ETag of key.
func (s *Store) Get(ctx context.Context, key string) (store.Object, error) {
	return s.get(ctx, key, "")
}

// GetVersion returns the body of one version of key.
func (s *Store) GetVersion(ctx context.Context, key, versionID string) (store.Object, error) {
	if versionID == "" {
		// An empty version ID would read the current object.
		return store.Object{}, fmt.Errorf("get %s version %q: %w", key, versionID, store.ErrNotFound)
	}
	return s.get(ctx, key, versionID)
}

func (s *Store) get(ctx context.Context, key, versionID string) (store.Object, error) {
	in := &s3.GetObjectInput{Bucket: &s.bucket, Key: aws.String(s.prefix + key)}
	what := key
	if versionID != "" {
		in.VersionId = &versionID
		what = fmt.Sprintf("%s version %s", key, versionID)
	}
	out, err := s.client.GetObject(ctx, in, s.idempotent...)
	if err != nil {
		return store.Object{}, fmt.Errorf("get %s: %w", what, mapCallError(ctx, err))
	}
	defer out.Body.Close()
	body, err := io.ReadAll(out.Body)
	if err != nil {
		return store.Object{}, fmt.Errorf("read %s: %w", what, mapCallError(ctx, err))
	}
	return store.Object{
		Key:          key,
		Body:         body,
		ETag:         aws.ToString(out.ETag),
		VersionID:    aws.ToString(out.VersionId),
		LastModified: aws.ToTime(out.LastModified),
	}, nil
}

// Head returns the ETag, size and modification time of key.
func (s *Store) Head(ctx context.Context, key string) (store.Info, error) {
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{
		Bucket: &s.bucket,
		Key:    aws.String(s.prefix + key),
	}, s.idempotent...)
	if err != nil {
		return store.Info{}, fmt.Errorf("head %s: %w", key, mapCallError(ctx, err))
	}
	return store.Info{
		Key:          key,
		ETag:         aws.ToString(out.ETag),
		Size:         aws.ToInt64(out.ContentLength),
		LastModified: aws.ToTime(out.LastModified),
	}, nil
}

// PutIfAbsent creates key only if nothing exists there (If-None-Match: *).
func (s *Store) PutIfAbsent(ctx context.Context, key string, body []byte, opts ...store.PutOption) (string, error) {
	etag, err := s.put(ctx, key, body, opts, func(in *s3.PutObjectInput) { in.IfNoneMatch = aws.String("*") })
	if err != nil {
		return "", fmt.Errorf("put %s if absent: %w", key, err)
	}
	return etag, nil
}

// PutIfMatch replaces key only if its ETag is etag (If-Match).
func (s *Store) PutIfMatch(ctx context.Context, key string, body []byte, etag string, opts ...store.PutOption) (string, error) {
	if etag == "" {
		// No object has an empty ETag, and an empty If-Match header would
		// make the write unconditional.
		return "", fmt.Errorf("put %s if match %q: %w", key, etag, store.ErrPrecondition)
	}
	newETag, err := s.put(ctx, key, body, opts, func(in *s3.PutObjectInput) { in.IfMatch = &etag })
	if errors.Is(err, store.ErrNotFound) {
		// S3 answers If-Match on a missing key (or a delete marker) with
		// 404 NoSuchKey; for the store it is a lost compare-and-swap.
		err = store.ErrPrecondition
	}
	if err != nil {
		return "", fmt.Errorf("put %s if match %s: %w", key, etag, err)
	}
	return newETag, nil
}

// Put writes key unconditionally.
func (s *Store) Put(ctx context.Context, key string, body []byte, opts ...store.PutOption) (string, error) {
	etag, err := s.put(ctx, key, body, opts, nil)
	if err != nil {
		return "", fmt.Errorf("put %s: %w", key, err)
	}
	return etag, nil
}

// put sends one PutObject with opts; condition, when not nil, sets its
// conditional header, and the request is then retried on throttling only.
func (s *Store) put(ctx context.Context, key string, body []byte, opts []store.PutOption, condition func(*s3.PutObjectInput)) (string, error) {
	in := &s3.PutObjectInput{
		Bucket:        &s.bucket,
		Key:           aws.String(s.prefix + key),
		Body:          bytes.NewReader(body),
		ContentLength: aws.Int64(int64(len(body))),
	}
	if tags := store.PutOptionsOf(opts...).Tags; tags != "" {
		in.Tagging = aws.String(tags) // x-amz-tagging, for lifecycle rules
	}
	retry := s.idempotent
	if condition != nil {
		condition(in)
		retry = s.conditional
	}
	out, err := s.client.PutObject(ctx, in, retry...)
	if err != nil {
		return "", mapCallError(ctx, err)
	}
	return aws.ToString(out.ETag), nil
}

// Delete removes key; a missing key is not an error.
func (s *Store) Delete(ctx context.Context, key string) error {
	_, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{
		Bucket: &s.bucket,
		Key:    aws.String(s.prefix + key),
	}, s.idempotent...)
	if err != nil {
		err = mapCallError(ctx, err)
		if errors.Is(err, store.ErrNotFound) { // S3 answers 204; some servers 404
			return nil
		}
		return fmt.Errorf("delete %s: %w", key, err)
	}
	return nil
}

// List returns up to limit keys under prefix after startAfter, in one
// ListObjectsV2 request.
func (s *Store) List(ctx context.Context, prefix, startAfter string, limit int) (store.Page, error) {
	in := &s3.ListObjectsV2Input{
		Bucket:  &s.bucket,
		Prefix:  aws.String(s.prefix + prefix),
		MaxKeys: aws.Int32(int32(store.ListLimit(limit))),
	}
	if startAfter != "" {
		in.StartAfter = aws.String(s.prefix + startAfter)
	}
	out, err := s.client.ListObjectsV2(ctx, in, s.idempotent...)
	if err != nil {
		return store.Page{}, fmt.Errorf("list %s after %q: %w", prefix, startAfter, mapCallError(ctx, err))
	}
	page := store.Page{
		Items:     make([]store.Info, 0, len(out.Contents)),
		Truncated: aws.ToBool(out.IsTruncated),
	}
	for _, o := range out.Contents {
		page.Items = append(page.Items, store.Info{
			Key:          strings.TrimPrefix(aws.ToString(o.Key), s.prefix),
			ETag:         aws.ToString(o.ETag),
			Size:         aws.ToInt64(o.Size),
			LastModified: aws.ToTime(o.LastModified),
		})
	}
	return page, nil
}

// ListDirs implements store.DirLister: one ListObjectsV2 request with
// Delimiter "/", its CommonPrefixes.
func (s *Store) ListDirs(ctx context.Context, prefix, startAfter string, limit int) ([]string, bool, error) {
	in := &s3.ListObjectsV2Input{
		Bucket:    &s.bucket,
		Prefix:    aws.String(s.prefix + prefix),
		Delimiter: aws.String("/"),
		MaxKeys:   aws.Int32(int32(store.ListLimit(limit))),
	}
	if startAfter != "" {
		in.StartAfter = aws.String(s.prefix + startAfter)
	}
	out, err := s.client.ListObjectsV2(ctx, in, s.idempotent...)
	if err != nil {
		return nil, false, fmt.Errorf("list folders of %s after %q: %w", prefix, startAfter, mapCallError(ctx, err))
	}
	dirs := make([]string, 0, len(out.CommonPrefixes))
	for _, p := range out.CommonPrefixes {
		dir := strings.TrimPrefix(aws.ToString(p.Prefix), s.prefix)
		if dir > startAfter {
			dirs = append(dirs, dir)
		}
	}
	return dirs, aws.ToBool(out.IsTruncated), nil
}

// Versions lists up to limit versions and delete markers of exactly key,
// newest first, after the version after: one ListObjectVersions with key
// as the prefix (and, with after, key and after as the markers).
//
// S3 lists them in one newest-first sequence, but the SDK splits it into
// versions and delete markers, so the two lists are merged back: the latest
// first, then by LastModified, each list keeping the server's order. A
// delete marker and a version of the same LastModified (a server whose
// times have whole seconds: SeaweedFS) are put in the order the server
// listed them, read from the answer itself (versionorder.go). A server
// that lists every delete marker before the versions (versitygw) orders
// such a tie marker first.
//
// A truncated page names where to continue (NextKeyMarker,
// NextVersionIdMarker); where a server leaves them out (gofakes3 does),
// the page continues after its last version of key.
func (s *Store) Versions(ctx context.Context, key, after string, limit int) (store.VersionPage, error) {
	full := s.prefix + key
	in := &s3.ListObjectVersionsInput{Bucket: &s.bucket, Prefix: &full, MaxKeys: aws.Int32(int32(store.ListLimit(limit)))}
	if after != "" {
		in.KeyMarker, in.VersionIdMarker = &full, &after
	}
	out, err := s.client.ListObjectVersions(ctx, in, append(slices.Clip(s.idempotent), withVersionOrder)...)
	if err != nil {
		return store.VersionPage{}, fmt.Errorf("list versions of %s: %w", key, mapCallError(ctx, err))
	}
	order, _ := out.ResultMetadata.Get(versionOrderKey{}).([]versionEntry)
	// key is the smallest key under the prefix key, so its versions
	// come first and any other key ends the listing.
	past := false
	var versions, markers []store.Version
	for _, v := range out.Versions {
		if aws.ToString(v.Key) != full {
			past = true
			continue
		}
		versions = append(versions, store.Version{
			Key:          key,
			VersionID:    aws.ToString(v.VersionId),
			ETag:         aws.ToString(v.ETag),
			IsLatest:     aws.ToBool(v.IsLatest),
			Size:         aws.ToInt64(v.Size),
			LastModified: aws.ToTime(v.LastModified),
		})
	}
	for _, m := range out.DeleteMarkers {
		if aws.ToString(m.Key) != full {
			past = true
			continue
		}
		markers = append(markers, store.Version{
			Key:          key,
			VersionID:    aws.ToString(m.VersionId),
			IsLatest:     aws.ToBool(m.IsLatest),
			DeleteMarker: true,
			LastModified: aws.ToTime(m.LastModified),
		})
	}
	page := store.VersionPage{Versions: mergeNewestFirst(versions, markers, listedBefore(full, order))}
	if past || !aws.ToBool(out.IsTruncated) || len(page.Versions) == 0 {
		return page, nil
	}
	switch next := aws.ToString(out.NextVersionIdMarker); {
	case aws.ToString(out.NextKeyMarker) == full && next != "":
		page.Next = next
	case out.NextKeyMarker == nil || aws.ToString(out.NextKeyMarker) == full:
		page.Next = page.Versions[len(page.Versions)-1].VersionID
	}
	return page, nil
}

// listedBefore returns whether the server listed the entry of key full
// with version id a before that with b, by their places in order; false
// when it did not list both.
func listedBefore(full string, order []versionEntry) func(a, b string) bool {
	at := make(map[string]int, len(order))
	for i, e := range order {
		if e.key == full {
			at[e.versionID] = i
		}
	}
	return func(a, b string) bool {
		i, okA := at[a]
		j, okB := at[b]
		return okA && okB && i < j
	}
}

// mergeNewestFirst merges two newest-first lists of versions of one key:
// the latest first, then the later LastModified of the two heads; on a
// tie, the marker first if listed (a, b) reports it listed first, else the
// version.
func mergeNewestFirst(versions, markers []store.Version, listed func(a, b string) bool) []store.Version {
	merged := make([]store.Version, 0, len(versions)+len(markers))
	for len(versions) > 0 && len(markers) > 0 {
		v, m := versions[0], markers[0]
		tie := m.LastModified.Equal(v.LastModified) && listed(m.VersionID, v.VersionID)
		if m.IsLatest || (!v.IsLatest && (m.LastModified.After(v.LastModified) || tie)) {
			merged, markers = append(merged, m), markers[1:]
		} else {
			merged, versions = append(merged, v), versions[1:]
		}
	}
	merged = append(merged, versions...)
	return append(merged, markers...)
}
