package main

import (
	"testing"

	"github.com/s3q/s3q/shared/store"
)

func TestUSDPricesPutAndListAboveGetAndHeadAndDeleteFree(t *testing.T) {
	// 5 PUT/LIST at $0.005/1000 and 2 GET/HEAD at $0.0004/1000.
	c := store.Counts{Put: 4, Get: 1, Head: 1, List: 1, Delete: 1}
	if got := usd(c); got < 0.0000258-1e-12 || got > 0.0000258+1e-12 {
		t.Fatalf("usd = %v, want 0.0000258", got)
	}
}
