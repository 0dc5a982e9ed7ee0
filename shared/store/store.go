// Package store is the object-store contract s3q is built on: a bucket of
// keys holding bytes, with the two conditional writes that S3 offers
// (create-only and compare-and-swap on the ETag). Every rule about tasks,
// leases and schedules lives above it, in shared/queue and shared/schedule;
// a Store only gets, puts, lists and deletes.
//
// Implementations: s3store (aws-sdk-go-v2, any S3-compatible server) and
// memstore (in memory, the same semantics, for fast unit runs). Wrappers in
// this package count requests by kind (Counting); storefault injects
// failures for tests. The storetest package is the conformance suite every
// implementation passes.
package store

import (
	"context"
	"time"
)

// Store is the object-store contract. Keys are plain strings without a
// leading slash; callers validate anything user-supplied before it becomes a
// key. ETags are opaque strings, compared as given (quotes included).
//
// Errors: ErrNotFound, ErrPrecondition and ErrRetryable are the only
// sentinels a caller branches on (with errors.Is). An error that is none of
// them is a bug or a configuration problem (missing bucket, bad credentials).
// A write that returns ErrRetryable or an unclassified error MAY have been
// applied; one that returns ErrPrecondition was NOT applied.
type Store interface {
	// Get returns the current body and ETag of key.
	// It MUST return ErrNotFound when key does not exist.
	Get(ctx context.Context, key string) (Object, error)

	// Head returns the ETag, size and modification time of key without its
	// body. It MUST return ErrNotFound when key does not exist.
	Head(ctx context.Context, key string) (Info, error)

	// PutIfAbsent creates key with body only if no object exists at key
	// (S3 If-None-Match: *), and returns the new ETag.
	// It MUST return ErrPrecondition, and write nothing, when key exists.
	// Of many concurrent PutIfAbsent calls on one key, exactly one succeeds.
	PutIfAbsent(ctx context.Context, key string, body []byte, opts ...PutOption) (etag string, err error)

	// PutIfMatch replaces key with body only if its current ETag equals etag
	// (S3 If-Match), and returns the new ETag.
	// It MUST return ErrPrecondition, and write nothing, when key does not
	// exist or its ETag differs. Of many concurrent PutIfMatch calls with
	// the same etag, at most one succeeds.
	PutIfMatch(ctx context.Context, key string, body []byte, etag string, opts ...PutOption) (newETag string, err error)

	// Put writes key unconditionally and returns the new ETag.
	Put(ctx context.Context, key string, body []byte, opts ...PutOption) (etag string, err error)

	// Delete removes key. Deleting a key that does not exist MUST succeed
	// (S3 semantics). Delete is unconditional: correctness never depends on
	// a conditional DELETE, which LocalStack, MinIO and gofakes3 lack.
	Delete(ctx context.Context, key string) error

	// List returns up to limit keys under prefix in lexical (byte) order,
	// starting strictly after startAfter when it is not empty. limit <= 0
	// or > 1000 means 1000 (one S3 page). Page.Truncated MUST be true when
	// more keys follow; the caller continues with startAfter set to the
	// last returned key. One call is one LIST request.
	List(ctx context.Context, prefix, startAfter string, limit int) (Page, error)

	// Versions lists up to limit stored versions of exactly key (not of
	// other keys sharing it as a prefix), newest first, delete markers
	// included, starting after the version whose id is after ("" starts
	// from the newest). limit <= 0 or > 1000 means 1000. VersionPage.Next
	// MUST be the after of the next page when more versions follow, and
	// empty when none do; a page MAY hold fewer than limit versions (a
	// server that cuts pages short) and still have a Next. A key that
	// never existed has no versions: an empty page and no error. A store
	// without versioning returns the current object as its only version.
	// One call is one LIST request.
	Versions(ctx context.Context, key, after string, limit int) (VersionPage, error)

	// GetVersion returns the body of one version of key.
	// It MUST return ErrNotFound for an unknown version.
	GetVersion(ctx context.Context, key, versionID string) (Object, error)
}

// Object is a body read from the store with its ETag.
type Object struct {
	Key          string
	Body         []byte
	ETag         string
	VersionID    string
	LastModified time.Time
}

// Info describes a stored object without its body.
type Info struct {
	Key          string
	ETag         string
	Size         int64
	LastModified time.Time
}

// Page is one page of a List.
type Page struct {
	Items     []Info
	Truncated bool
}

// Keys returns the keys of the page in order.
func (p Page) Keys() []string {
	keys := make([]string, len(p.Items))
	for i, it := range p.Items {
		keys[i] = it.Key
	}
	return keys
}

// Version is one stored version of a key.
type Version struct {
	Key          string
	VersionID    string
	ETag         string
	IsLatest     bool
	DeleteMarker bool
	Size         int64
	LastModified time.Time
}

// VersionPage is one page of the versions of a key, newest first.
type VersionPage struct {
	Versions []Version
	// Next is the version id to continue after; empty on the last page.
	Next string
}

// MaxListLimit is the most keys one List call returns.
const MaxListLimit = 1000

// ListLimit normalises a List limit: <= 0 or > MaxListLimit means MaxListLimit.
func ListLimit(limit int) int {
	if limit <= 0 || limit > MaxListLimit {
		return MaxListLimit
	}
	return limit
}
