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
	if err != nil || !strings.Contains(string(obj.Body), `"layout":2`) {
		t.Fatalf("%s = %s %v", LayoutKey, obj.Body, err)
	}
	other := memstore.New()
	if _, err := other.Put(ctx, LayoutKey, []byte(`{"layout":3}`)); err != nil {
		t.Fatal(err)
	}
	err = CheckLayout(ctx, other, kt0)
	if !errors.Is(err, ErrLayout) || !strings.Contains(err.Error(), "layout 3") || !strings.Contains(err.Error(), "layout 2") {
		t.Fatalf("another layout: %v", err)
	}
	old := memstore.New()
	if _, err := old.Put(ctx, "tasks/"+NewID(kt0)+".json", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	err = CheckLayout(ctx, old, kt0)
	if !errors.Is(err, ErrLayout) || !strings.Contains(err.Error(), "layout 1") || !strings.Contains(err.Error(), "layout 2") {
		t.Fatalf("layout 1: %v", err)
	}
	if _, err := old.Get(ctx, LayoutKey); err == nil {
		t.Fatal("a layout-1 bucket was given a version object")
	}
}
