package store

import (
	"context"
	"errors"
	"sync"
)

// ErrInjected is the failure Faulty injects. It is wrapped as retryable, as
// a crash or a dropped connection would look to the caller.
var ErrInjected = errors.New("store: injected failure")

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

// Faulty wraps a Store and fails chosen requests, to simulate a crash
// between the writes of a transition. Requests are numbered from 1 in the
// order they start; Fail(n, mode) arms the n-th write (put or delete)
// from now on. Reads are not numbered. It is safe for concurrent use.
type Faulty struct {
	inner Store

	mu      sync.Mutex
	seen    int
	failAt  int
	mode    FaultMode
	failAll bool // after the injected failure, fail every request (the process is dead)
	fired   bool // the armed failure happened
}

var _ Store = (*Faulty)(nil)

// NewFaulty returns a wrapper that injects no failure until armed.
func NewFaulty(inner Store) *Faulty { return &Faulty{inner: inner} }

// Fail arms the n-th write from now (n >= 1) to fail with the given mode.
// After it fires, every later request fails too, as a dead process's
// would, until Disarm is called (with LoseAnswer, later requests work).
func (f *Faulty) Fail(n int, mode FaultMode) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen, f.failAt, f.mode, f.failAll, f.fired = 0, n, mode, false, false
}

// Disarm stops injecting failures: the process has restarted.
func (f *Faulty) Disarm() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failAt, f.failAll = 0, false
}

// Fired reports whether the armed failure has happened.
func (f *Faulty) Fired() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failAll || f.fired
}

// decide numbers one request and says whether to fail it before or after.
func (f *Faulty) decide(write bool) (before, after bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failAll {
		return true, false
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

func injected() error { return Retryable(ErrInjected) }

// Get implements Store.
func (f *Faulty) Get(ctx context.Context, key string) (Object, error) {
	if before, _ := f.decide(false); before {
		return Object{}, injected()
	}
	return f.inner.Get(ctx, key)
}

// Head implements Store.
func (f *Faulty) Head(ctx context.Context, key string) (Info, error) {
	if before, _ := f.decide(false); before {
		return Info{}, injected()
	}
	return f.inner.Head(ctx, key)
}

// PutIfAbsent implements Store.
func (f *Faulty) PutIfAbsent(ctx context.Context, key string, body []byte) (string, error) {
	before, after := f.decide(true)
	if before {
		return "", injected()
	}
	etag, err := f.inner.PutIfAbsent(ctx, key, body)
	if after {
		return "", injected()
	}
	return etag, err
}

// PutIfMatch implements Store.
func (f *Faulty) PutIfMatch(ctx context.Context, key string, body []byte, etag string) (string, error) {
	before, after := f.decide(true)
	if before {
		return "", injected()
	}
	newETag, err := f.inner.PutIfMatch(ctx, key, body, etag)
	if after {
		return "", injected()
	}
	return newETag, err
}

// Put implements Store.
func (f *Faulty) Put(ctx context.Context, key string, body []byte) (string, error) {
	before, after := f.decide(true)
	if before {
		return "", injected()
	}
	etag, err := f.inner.Put(ctx, key, body)
	if after {
		return "", injected()
	}
	return etag, err
}

// Delete implements Store.
func (f *Faulty) Delete(ctx context.Context, key string) error {
	before, after := f.decide(true)
	if before {
		return injected()
	}
	err := f.inner.Delete(ctx, key)
	if after {
		return injected()
	}
	return err
}

// List implements Store.
func (f *Faulty) List(ctx context.Context, prefix, startAfter string, limit int) (Page, error) {
	if before, _ := f.decide(false); before {
		return Page{}, injected()
	}
	return f.inner.List(ctx, prefix, startAfter, limit)
}

// Versions implements Store.
func (f *Faulty) Versions(ctx context.Context, key string) ([]Version, error) {
	if before, _ := f.decide(false); before {
		return nil, injected()
	}
	return f.inner.Versions(ctx, key)
}

// GetVersion implements Store.
func (f *Faulty) GetVersion(ctx context.Context, key, versionID string) (Object, error) {
	if before, _ := f.decide(false); before {
		return Object{}, injected()
	}
	return f.inner.GetVersion(ctx, key, versionID)
}
