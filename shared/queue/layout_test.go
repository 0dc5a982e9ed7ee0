package queue

import (
	"errors"
	"strings"
	"testing"

	"github.com/s3q/s3q/shared/store/memstore"
)

func TestCheckLayoutWritesTheVersionOnceAndRefusesAnother(t *testing.T) {
	ctx := t.Context()
	s := memstore.New()
	for i := 0; i < 2; i++ {
		if err := CheckLayout(ctx, s, kt0); err != nil {
			t.Fatalf("check %d: %v", i, err)
		}
	}
	obj, err := s.Get(ctx, LayoutKey)
	if err != nil || !strings.Contains(string(obj.Body), `"layout":3`) {
		t.Fatalf("%s = %s %v", LayoutKey, obj.Body, err)
	}
	other := memstore.New()
	// A bucket a layout-2 build made (its claim indexes under
	// q/{queue}/ready/ and q/{queue}/deadline/) is refused, by both numbers.
	if _, err := other.Put(ctx, LayoutKey, []byte(`{"layout":2}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Put(ctx, "q/default/ready/0/20260128T090000.000000Z_"+NewID(kt0), nil); err != nil {
		t.Fatal(err)
	}
	err = CheckLayout(ctx, other, kt0)
	if !errors.Is(err, ErrLayout) || !strings.Contains(err.Error(), "bucket has layout 2") || !strings.Contains(err.Error(), "this build uses layout 3") {
		t.Fatalf("layout 2: %v", err)
	}
	old := memstore.New()
	if _, err := old.Put(ctx, "tasks/"+NewID(kt0)+".json", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	err = CheckLayout(ctx, old, kt0)
	if !errors.Is(err, ErrLayout) || !strings.Contains(err.Error(), "layout 1") || !strings.Contains(err.Error(), "layout 3") {
		t.Fatalf("layout 1: %v", err)
	}
	if _, err := old.Get(ctx, LayoutKey); err == nil {
		t.Fatal("a layout-1 bucket was given a version object")
	}
}
