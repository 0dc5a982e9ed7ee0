package queuetest_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/queue/queuetest"
	"github.com/s3q/s3q/shared/s3local"
	"github.com/s3q/s3q/shared/s3local/s3localtest"
	"github.com/s3q/s3q/shared/store"
	"github.com/s3q/s3q/shared/store/memstore"
)

// The servers every test of the package shares, started once by TestMain.
var gofakes3, versitygw *s3local.Server

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var err error
	if gofakes3, err = s3local.StartGoFakeS3(s3local.GoFakeS3Options{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer gofakes3.Close()
	if versitygw, err = s3local.StartVersityGW(ctx, ""); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer versitygw.Close()
	return m.Run()
}

func TestConformanceMem(t *testing.T) {
	queuetest.Run(t, queuetest.Factory{
		Name: "mem",
		New:  func(testing.TB) store.Store { return memstore.New() },
	})
}

func TestConformanceGoFakeS3(t *testing.T) {
	queuetest.Run(t, queuetest.Factory{
		Name: "gofakes3", Real: true,
		New: func(t testing.TB) store.Store { return s3localtest.NewStore(t, gofakes3) },
	})
}

func TestConformanceVersityGW(t *testing.T) {
	queuetest.Run(t, queuetest.Factory{
		Name: "versitygw", Real: true,
		New: func(t testing.TB) store.Store { return s3localtest.NewStore(t, versitygw) },
	})
}
