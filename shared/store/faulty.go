package store

import (
	"context"
	"errors"
	"strings"
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
	f.failAt, f.failAll, f.rule = 0, false, nil
}

// FailMatching arms the next count writes of kind op (OpPutIfAbsent,
// OpPutIfMatch, OpPut, OpDelete; "" for any) whose key starts with prefix
// to fail with mode: FailBefore fails them unapplied, FailAfter and
// LoseAnswer apply them and lose their answers. Unlike Fail, the process
// lives: every other request goes on working. It replaces an earlier
// FailMatching; Disarm clears it.
func (f *Faulty) FailMatching(op, prefix string, mode FaultMode, count int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rule, f.ruleHits = &faultRule{op: op, prefix: prefix, mode: mode, left: count}, 0
}

// Hits returns how many writes the FailMatching rule has failed.
func (f *Faulty) Hits() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ruleHits
}

// Fired reports whether the armed failure has happened.
func (f *Faulty) Fired() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failAll || f.fired || f.ruleHits > 0
}

// decide numbers one request and says whether to fail it before or after.
// op is the kind of write ("" for a read) and key its key.
func (f *Faulty) decide(op, key string) (before, after bool) {
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

func injected() error { return Retryable(ErrInjected) }

// Get implements Store.
func (f *Faulty) Get(ctx context.Context, key string) (Object, error) {
	if before, _ := f.decide("", ""); before {
		return Object{}, injected()
	}
	return f.inner.Get(ctx, key)
}

// Head implements Store.
func (f *Faulty) Head(ctx context.Context, key string) (Info, error) {
	if before, _ := f.decide("", ""); before {
		return Info{}, injected()
	}
	return f.inner.Head(ctx, key)
}

// PutIfAbsent implements Store.
func (f *Faulty) PutIfAbsent(ctx context.Context, key string, body []byte) (string, error) {
	before, after := f.decide(OpPutIfAbsent, key)
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
	before, after := f.decide(OpPutIfMatch, key)
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
	before, after := f.decide(OpPut, key)
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

// List implements Store.
func (f *Faulty) List(ctx context.Context, prefix, startAfter string, limit int) (Page, error) {
	if before, _ := f.decide("", ""); before {
		return Page{}, injected()
	}
	return f.inner.List(ctx, prefix, startAfter, limit)
}

// Versions implements Store.
func (f *Faulty) Versions(ctx context.Context, key string) ([]Version, error) {
	if before, _ := f.decide("", ""); before {
		return nil, injected()
	}
	return f.inner.Versions(ctx, key)
}

// GetVersion implements Store.
func (f *Faulty) GetVersion(ctx context.Context, key, versionID string) (Object, error) {
	if before, _ := f.decide("", ""); before {
		return Object{}, injected()
	}
	return f.inner.GetVersion(ctx, key, versionID)
}
