// Package storefault wraps a store.Store to inject failures into chosen
// requests: a crash before or after a write reaches S3, or an answer lost
// on the network. It is test support for the conformance suites, the
// fault runs and the bench; production code never imports it.
package storefault

import (
	"context"
	"errors"
	"strings"
	"sync"

	"github.com/s3q/s3q/shared/store"
)

// ErrInjected is the failure Store injects. It is wrapped as retryable, as
// a crash or a dropped connection would look to the caller.
var ErrInjected = errors.New("storefault: injected failure")

// FaultMode says what an injected failure does to the request it hits.
type FaultMode int

const (
	// FailBefore fails the request without applying it: the process died
	// before the request reached S3.
	FailBefore FaultMode = iota
	// FailAfter applies the request and then fails it: the process died
	// after S3 applied the write but before it saw the answer.
	FailAfter
	// LoseAnswer applies the request and fails it, and later requests go
	// on working: the answer was lost on the network, the process lives.
	LoseAnswer
)

// Store wraps a store.Store and fails chosen requests, to simulate a crash
// between the writes of a transition. Requests are numbered from 1 in the
// order they start; Fail(n, mode) arms the n-th write (put or delete)
// from now on. Reads are not numbered. It is safe for concurrent use.
type Store struct {
	inner store.Store

	mu      sync.Mutex
	seen    int
	failAt  int
	mode    FaultMode
	failAll bool // after the injected failure, fail every request (the process is dead)
	fired   bool // the armed failure happened

	rule     *faultRule // armed by FailMatching
	ruleHits int        // how many writes the rule failed
}

// The kinds of write, as FailMatching names them.
const (
	OpPutIfAbsent = "put_if_absent"
	OpPutIfMatch  = "put_if_match"
	OpPut         = "put"
	OpDelete      = "delete"
)

// faultRule is a failure armed on writes of one kind under one prefix.
type faultRule struct {
	op, prefix string
	mode       FaultMode
	left       int
}

var _ store.Store = (*Store)(nil)

// New returns a wrapper around inner that injects no failure until armed.
func New(inner store.Store) *Store { return &Store{inner: inner} }

// Fail arms the n-th write from now (n >= 1) to fail with the given mode.
// After it fires, every later request fails too, as a dead process's
// would, until Disarm is called (with LoseAnswer, later requests work).
func (f *Store) Fail(n int, mode FaultMode) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen, f.failAt, f.mode, f.failAll, f.fired = 0, n, mode, false, false
}

// Disarm stops injecting failures: the process has restarted.
func (f *Store) Disarm() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failAt, f.failAll, f.rule = 0, false, nil
}

// FailMatching arms the next count writes of kind op (OpPutIfAbsent,
// OpPutIfMatch, OpPut, OpDelete; "" for any) whose key starts with prefix
// to fail with mode: FailBefore fails them unapplied, FailAfter and
// LoseAnswer apply them and lose their answers. Unlike Fail, the process
// lives: every other request goes on working. It replaces an earlier
// FailMatching; Disarm clears it.
func (f *Store) FailMatching(op, prefix string, mode FaultMode, count int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rule, f.ruleHits = &faultRule{op: op, prefix: prefix, mode: mode, left: count}, 0
}

// Hits returns how many writes the FailMatching rule has failed.
func (f *Store) Hits() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ruleHits
}

// Fired reports whether the armed failure has happened.
func (f *Store) Fired() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failAll || f.fired || f.ruleHits > 0
}

// decide numbers one request and says whether to fail it before or after.
// op is the kind of write ("" for a read) and key its key.
func (f *Store) decide(op, key string) (before, after bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failAll {
		return true, false
	}
	write := op != ""
	if r := f.rule; write && r != nil && r.left > 0 && (r.op == "" || r.op == op) && strings.HasPrefix(key, r.prefix) {
		r.left--
		f.ruleHits++
		return r.mode == FailBefore, r.mode != FailBefore
	}
	if f.failAt == 0 || !write {
		return false, false
	}
	f.seen++
	if f.seen != f.failAt {
		return false, false
	}
	f.fired = true
	f.failAll = f.mode != LoseAnswer
	if f.mode == LoseAnswer {
		f.failAt = 0
	}
	return f.mode == FailBefore, f.mode != FailBefore
}

func injected() error { return store.Retryable(ErrInjected) }

// Get implements store.Store.
func (f *Store) Get(ctx context.Context, key string) (store.Object, error) {
	if before, _ := f.decide("", ""); before {
		return store.Object{}, injected()
	}
	return f.inner.Get(ctx, key)
}

// Head implements store.Store.
func (f *Store) Head(ctx context.Context, key string) (store.Info, error) {
	if before, _ := f.decide("", ""); before {
		return store.Info{}, injected()
	}
	return f.inner.Head(ctx, key)
}

// PutIfAbsent implements store.Store.
func (f *Store) PutIfAbsent(ctx context.Context, key string, body []byte, opts ...store.PutOption) (string, error) {
	before, after := f.decide(OpPutIfAbsent, key)
	if before {
		return "", injected()
	}
	etag, err := f.inner.PutIfAbsent(ctx, key, body, opts...)
	if after {
		return "", injected()
	}
	return etag, err
}

// PutIfMatch implements store.Store.
func (f *Store) PutIfMatch(ctx context.Context, key string, body []byte, etag string, opts ...store.PutOption) (string, error) {
	before, after := f.decide(OpPutIfMatch, key)
	if before {
		return "", injected()
	}
	newETag, err := f.inner.PutIfMatch(ctx, key, body, etag, opts...)
	if after {
		return "", injected()
	}
	return newETag, err
}

// Put implements store.Store.
func (f *Store) Put(ctx context.Context, key string, body []byte, opts ...store.PutOption) (string, error) {
	before, after := f.decide(OpPut, key)
	if before {
		return "", injected()
	}
	etag, err := f.inner.Put(ctx, key, body, opts...)
	if after {
		return "", injected()
	}
	return etag, err
}

// Delete implements store.Store.
func (f *Store) Delete(ctx context.Context, key string) error {
	before, after := f.decide(OpDelete, key)
	if before {
		return injected()
	}
	err := f.inner.Delete(ctx, key)
	if after {
		return injected()
	}
	return err
}

// List implements store.Store.
func (f *Store) List(ctx context.Context, prefix, startAfter string, limit int) (store.Page, error) {
	if before, _ := f.decide("", ""); before {
		return store.Page{}, injected()
	}
	return f.inner.List(ctx, prefix, startAfter, limit)
}

// ListDirs implements store.DirLister.
func (f *Store) ListDirs(ctx context.Context, prefix, startAfter string, limit int) ([]string, bool, error) {
	if before, _ := f.decide("", ""); before {
		return nil, false, injected()
	}
	return store.ListDirs(ctx, f.inner, prefix, startAfter, limit)
}

// Versions implements store.Store.
func (f *Store) Versions(ctx context.Context, key, after string, limit int) (store.VersionPage, error) {
	if before, _ := f.decide("", ""); before {
		return store.VersionPage{}, injected()
	}
	return f.inner.Versions(ctx, key, after, limit)
}

// GetVersion implements store.Store.
func (f *Store) GetVersion(ctx context.Context, key, versionID string) (store.Object, error) {
	if before, _ := f.decide("", ""); before {
		return store.Object{}, injected()
	}
	return f.inner.GetVersion(ctx, key, versionID)
}
