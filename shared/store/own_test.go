package store_test

import (
	"errors"
	"testing"

	"github.com/s3q/s3q/shared/store"
	"github.com/s3q/s3q/shared/store/memstore"
	"github.com/s3q/s3q/shared/store/storefault"
)

func TestCreateOwnRecognisesItsOwnWriteAfterALostAnswer(t *testing.T) {
	f := storefault.New(memstore.New())
	f.FailMatching(storefault.OpPutIfAbsent, "", storefault.LoseAnswer, 1)
	if _, err := store.CreateOwn(ctx, f, "k", []byte("mine"), nil); err != nil {
		t.Fatalf("lost answer of a landed create: %v", err)
	}
	// Another writer's object is not ours, lost answer or not.
	if _, err := f.Put(ctx, "o", []byte("theirs")); err != nil {
		t.Fatal(err)
	}
	f.FailMatching(storefault.OpPutIfAbsent, "", storefault.FailBefore, 1)
	if _, err := store.CreateOwn(ctx, f, "o", []byte("mine"), nil); !errors.Is(err, store.ErrPrecondition) {
		t.Fatalf("err = %v, want ErrPrecondition", err)
	}
	// A key that existed before the call is ErrPrecondition, even with our body.
	if _, err := store.CreateOwn(ctx, f, "k", []byte("mine"), nil); !errors.Is(err, store.ErrPrecondition) {
		t.Fatalf("err = %v, want ErrPrecondition", err)
	}
	// A create that fails unapplied is tried again, OwnAttempts times in all.
	f.FailMatching(storefault.OpPutIfAbsent, "", storefault.FailBefore, store.OwnAttempts-1)
	if _, err := store.CreateOwn(ctx, f, "n", []byte("x"), nil); err != nil || f.Hits() != store.OwnAttempts-1 {
		t.Fatalf("err = %v after %d failures", err, f.Hits())
	}
	f.FailMatching(storefault.OpPutIfAbsent, "", storefault.FailBefore, store.OwnAttempts)
	if _, err := store.CreateOwn(ctx, f, "m", []byte("x"), nil); !errors.Is(err, store.ErrRetryable) {
		t.Fatalf("err = %v, want the write's retryable error", err)
	}
}

func TestSwapOwnPutOwnAndDeleteOwnRecogniseTheirOwnWriteAfterALostAnswer(t *testing.T) {
	f := storefault.New(memstore.New())
	etag, _ := f.Put(ctx, "k", []byte("1"))
	f.FailMatching(storefault.OpPutIfMatch, "", storefault.LoseAnswer, 1)
	if _, err := store.SwapOwn(ctx, f, "k", []byte("2"), etag, nil); err != nil {
		t.Fatalf("swap: %v", err)
	}
	if _, err := store.SwapOwn(ctx, f, "k", []byte("3"), etag, nil); !errors.Is(err, store.ErrPrecondition) {
		t.Fatalf("stale etag: %v", err)
	}
	f.FailMatching(storefault.OpPut, "", storefault.LoseAnswer, 1)
	if _, err := store.PutOwn(ctx, f, "m", nil); err != nil {
		t.Fatalf("put: %v", err)
	}
	f.FailMatching(storefault.OpPut, "", storefault.FailBefore, 1)
	if _, err := store.PutOwn(ctx, f, "n", nil); !errors.Is(err, store.ErrRetryable) {
		t.Fatalf("an unapplied put: %v", err)
	}
	f.FailMatching(storefault.OpDelete, "", storefault.LoseAnswer, 1)
	if err := store.DeleteOwn(ctx, f, "m"); err != nil {
		t.Fatalf("delete: %v", err)
	}
	f.FailMatching(storefault.OpDelete, "", storefault.FailBefore, 1)
	if err := store.DeleteOwn(ctx, f, "k"); !errors.Is(err, store.ErrRetryable) {
		t.Fatalf("an unapplied delete: %v", err)
	}
}
