package queue_test

import (
	"testing"

	"github.com/s3q/s3q/shared/queue/queuetest"
	"github.com/s3q/s3q/shared/store"
	"github.com/s3q/s3q/shared/store/memstore"
)

func TestConformanceMem(t *testing.T) {
	queuetest.Run(t, queuetest.Factory{
		Name: "mem",
		New:  func(testing.TB) store.Store { return memstore.New() },
	})
}
