package queuetest_test

import (
	"os"
	"testing"

	"github.com/s3q/s3q/shared/queue/queuetest"
	"github.com/s3q/s3q/shared/s3local/s3localtest"
	"github.com/s3q/s3q/shared/store"
	"github.com/s3q/s3q/shared/store/memstore"
)

// The servers every test of the package shares, started once by TestMain.
var servers s3localtest.Servers

func TestMain(m *testing.M) { os.Exit(s3localtest.Main(m, &servers)) }

// The stores run side by side (as scheduletest's): a real server's run
// spends much of its time waiting on requests, and make test runs the
// versitygw one in a pass of its own without -race (Makefile, test-go)
// while mem and gofakes3 run under -race together.

func TestConformanceMem(t *testing.T) {
	t.Parallel()
	queuetest.Run(t, queuetest.Factory{
		Name: "mem",
		New:  func(testing.TB) store.Store { return memstore.New() },
	})
}

func TestConformanceGoFakeS3(t *testing.T) {
	t.Parallel()
	queuetest.Run(t, queuetest.Factory{
		Name: "gofakes3", Real: true,
		New: func(t testing.TB) store.Store { return s3localtest.NewStore(t, servers.GoFakeS3) },
	})
}

func TestConformanceVersityGW(t *testing.T) {
	t.Parallel()
	queuetest.Run(t, queuetest.Factory{
		Name: "versitygw", Real: true,
		New: func(t testing.TB) store.Store { return s3localtest.NewStore(t, servers.VersityGW) },
	})
}

// TestConformanceOwnEndpoint runs the suite on the user's own S3 server
// when S3Q_TEST_ENDPOINT names one (s3localtest.EnvEndpoint; docs/deploy.md
// "Other S3 servers"); without it there is nothing to run.
func TestConformanceOwnEndpoint(t *testing.T) {
	if servers.Own == nil {
		t.Logf("%s is not set: no endpoint of your own to run the suite on", s3localtest.EnvEndpoint)
		return
	}
	queuetest.Run(t, queuetest.Factory{
		Name: "own", Real: true,
		New: func(t testing.TB) store.Store { return s3localtest.NewStore(t, servers.Own) },
	})
}
