package store_test

import (
	"errors"
	"testing"

	"github.com/s3q/s3q/shared/store"
	"github.com/s3q/s3q/shared/store/memstore"
)

func TestFailMatchingFailsOnlyTheWritesOfItsKindUnderItsPrefix(t *testing.T) {
	inner := memstore.New()
	f := store.NewFaulty(inner)
	f.FailMatching(store.OpPutIfAbsent, "tasks/", store.LoseAnswer, 1)
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

func TestCreateOwnRecognisesItsOwnWriteAfterALostAnswer(t *testing.T) {
	f := store.NewFaulty(memstore.New())
	f.FailMatching(store.OpPutIfAbsent, "", store.LoseAnswer, 1)
	if _, err := store.CreateOwn(ctx, f, "k", []byte("mine"), nil); err != nil {
		t.Fatalf("lost answer of a landed create: %v", err)
	}
	// Another writer's object is not ours, lost answer or not.
	if _, err := f.Put(ctx, "o", []byte("theirs")); err != nil {
		t.Fatal(err)
	}
	f.FailMatching(store.OpPutIfAbsent, "", store.FailBefore, 1)
	if _, err := store.CreateOwn(ctx, f, "o", []byte("mine"), nil); !errors.Is(err, store.ErrPrecondition) {
		t.Fatalf("err = %v, want ErrPrecondition", err)
	}
	// A key that existed before the call is ErrPrecondition, even with our body.
	if _, err := store.CreateOwn(ctx, f, "k", []byte("mine"), nil); !errors.Is(err, store.ErrPrecondition) {
		t.Fatalf("err = %v, want ErrPrecondition", err)
	}
	// A create that fails unapplied is tried again, OwnAttempts times in all.
	f.FailMatching(store.OpPutIfAbsent, "", store.FailBefore, store.OwnAttempts-1)
	if _, err := store.CreateOwn(ctx, f, "n", []byte("x"), nil); err != nil || f.Hits() != store.OwnAttempts-1 {
		t.Fatalf("err = %v after %d failures", err, f.Hits())
	}
	f.FailMatching(store.OpPutIfAbsent, "", store.FailBefore, store.OwnAttempts)
	if _, err := store.CreateOwn(ctx, f, "m", []byte("x"), nil); !errors.Is(err, store.ErrRetryable) {
		t.Fatalf("err = %v, want the write's retryable error", err)
	}
}

func TestSwapOwnPutOwnAndDeleteOwnRecogniseTheirOwnWriteAfterALostAnswer(t *testing.T) {
	f := store.NewFaulty(memstore.New())
	etag, _ := f.Put(ctx, "k", []byte("1"))
	f.FailMatching(store.OpPutIfMatch, "", store.LoseAnswer, 1)
	if _, err := store.SwapOwn(ctx, f, "k", []byte("2"), etag, nil); err != nil {
		t.Fatalf("swap: %v", err)
	}
	if _, err := store.SwapOwn(ctx, f, "k", []byte("3"), etag, nil); !errors.Is(err, store.ErrPrecondition) {
		t.Fatalf("stale etag: %v", err)
	}
	f.FailMatching(store.OpPut, "", store.LoseAnswer, 1)
	if _, err := store.PutOwn(ctx, f, "m", nil); err != nil {
		t.Fatalf("put: %v", err)
	}
	f.FailMatching(store.OpPut, "", store.FailBefore, 1)
	if _, err := store.PutOwn(ctx, f, "n", nil); !errors.Is(err, store.ErrRetryable) {
		t.Fatalf("an unapplied put: %v", err)
	}
	f.FailMatching(store.OpDelete, "", store.LoseAnswer, 1)
	if err := store.DeleteOwn(ctx, f, "m"); err != nil {
		t.Fatalf("delete: %v", err)
	}
	f.FailMatching(store.OpDelete, "", store.FailBefore, 1)
	if err := store.DeleteOwn(ctx, f, "k"); !errors.Is(err, store.ErrRetryable) {
		t.Fatalf("an unapplied delete: %v", err)
	}
}
