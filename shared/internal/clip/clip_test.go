package clip

import (
	"strings"
	"testing"
)

func TestStringCutsOnlyWhatIsLongerThanN(t *testing.T) {
	if got := String("abc", 3); got != "abc" {
		t.Fatalf("String(abc, 3) = %q", got)
	}
	if got := String("abcd", 3); got != "abc..." {
		t.Fatalf("String(abcd, 3) = %q", got)
	}
	if got := Input(strings.Repeat("x", 100)); len(got) != InputBytes+3 {
		t.Fatalf("Input kept %d bytes, want %d", len(got), InputBytes+3)
	}
}
