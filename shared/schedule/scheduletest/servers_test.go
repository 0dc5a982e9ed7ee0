package scheduletest_test

import (
	"os"
	"testing"

	"github.com/s3q/s3q/shared/s3local/s3localtest"
	"github.com/s3q/s3q/shared/schedule/scheduletest"
	"github.com/s3q/s3q/shared/store"
	"github.com/s3q/s3q/shared/store/memstore"
)

// The servers every test of the package shares, started once by TestMain.
var servers s3localtest.Servers

func TestMain(m *testing.M) { os.Exit(s3localtest.Main(m, &servers)) }

// The three stores run side by side: the real servers spend most of
// their time waiting on requests.

func TestConformanceMem(t *testing.T) {
	t.Parallel()
	scheduletest.Run(t, scheduletest.Factory{
		Name: "mem",
		New:  func(testing.TB) store.Store { return memstore.New() },
	})
}

func TestConformanceGoFakeS3(t *testing.T) {
	t.Parallel()
	scheduletest.Run(t, scheduletest.Factory{
		Name: "gofakes3", Real: true, DayHours: 6,
		New: func(t testing.TB) store.Store { return s3localtest.NewStore(t, servers.GoFakeS3) },
	})
}

func TestConformanceVersityGW(t *testing.T) {
	t.Parallel()
	scheduletest.Run(t, scheduletest.Factory{
		Name: "versitygw", Real: true, DayHours: 6,
		New: func(t testing.TB) store.Store { return s3localtest.NewStore(t, servers.VersityGW) },
	})
}
