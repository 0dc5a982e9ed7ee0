package storefault_test

import (
	"context"
	"errors"
	"testing"

	"github.com/s3q/s3q/shared/store"
	"github.com/s3q/s3q/shared/store/memstore"
	"github.com/s3q/s3q/shared/store/storefault"
)

var ctx = context.Background()

func TestFailFailsTheNthWriteBeforeOrAfterApplyingIt(t *testing.T) {
	for _, tc := range []struct {
		mode    storefault.FaultMode
		applied bool
	}{{storefault.FailBefore, false}, {storefault.FailAfter, true}} {
		inner := memstore.New()
		f := storefault.New(inner)
		f.Fail(2, tc.mode)
		if _, err := f.Get(ctx, "x"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("reads are not numbered: %v", err)
		}
		if _, err := f.Put(ctx, "one", nil); err != nil {
			t.Fatalf("write 1: %v", err)
		}
		_, err := f.Put(ctx, "two", nil)
		if !errors.Is(err, storefault.ErrInjected) || !errors.Is(err, store.ErrRetryable) || !f.Fired() {
			t.Fatalf("write 2: %v (fired %v)", err, f.Fired())
		}
		if _, err := inner.Get(ctx, "two"); (err == nil) != tc.applied {
			t.Fatalf("mode %d: write applied = %v, want %v", tc.mode, err == nil, tc.applied)
		}
		if _, err := f.Get(ctx, "one"); !errors.Is(err, storefault.ErrInjected) {
			t.Fatalf("a dead process reads nothing: %v", err)
		}
		f.Disarm()
		if _, err := f.Get(ctx, "one"); err != nil {
			t.Fatalf("after Disarm: %v", err)
		}
	}
}

func TestFailMatchingFailsOnlyTheWritesOfItsKindUnderItsPrefix(t *testing.T) {
	inner := memstore.New()
	f := storefault.New(inner)
	f.FailMatching(storefault.OpPutIfAbsent, "tasks/", storefault.LoseAnswer, 1)
	if _, err := f.Put(ctx, "tasks/a", nil); err != nil {
		t.Fatalf("another kind of write failed: %v", err)
	}
	if _, err := f.PutIfAbsent(ctx, "ready/a", nil); err != nil {
		t.Fatalf("a write under another prefix failed: %v", err)
	}
	if _, err := f.PutIfAbsent(ctx, "tasks/b", []byte("1")); !errors.Is(err, store.ErrRetryable) {
		t.Fatalf("the armed write: %v", err)
	}
	if _, err := inner.Get(ctx, "tasks/b"); err != nil {
		t.Fatalf("a lost answer's write must land: %v", err)
	}
	if _, err := f.PutIfAbsent(ctx, "tasks/c", nil); err != nil || f.Hits() != 1 {
		t.Fatalf("the fault fired again: %v (hits %d)", err, f.Hits())
	}
}
