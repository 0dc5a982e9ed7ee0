package memstore_test

import (
	"testing"

	"github.com/s3q/s3q/shared/store"
	"github.com/s3q/s3q/shared/store/memstore"
	"github.com/s3q/s3q/shared/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Factory{
		Name: "mem",
		New:  func(testing.TB) store.Store { return memstore.New() },
	})
}
