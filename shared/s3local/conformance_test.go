package s3local_test

import (
	"os"
	"testing"

	"github.com/s3q/s3q/shared/s3local/s3localtest"
	"github.com/s3q/s3q/shared/store"
	"github.com/s3q/s3q/shared/store/storetest"
)

// The servers every test of the package shares, started once by TestMain.
var servers s3localtest.Servers

func TestMain(m *testing.M) { os.Exit(s3localtest.Main(m, &servers)) }

func TestConformanceGoFakeS3(t *testing.T) {
	storetest.Run(t, storetest.Factory{
		Name: "gofakes3",
		New:  func(t testing.TB) store.Store { return s3localtest.NewStore(t, servers.GoFakeS3) },
	})
}

func TestConformanceVersityGW(t *testing.T) {
	storetest.Run(t, storetest.Factory{
		Name: "versitygw",
		New:  func(t testing.TB) store.Store { return s3localtest.NewStore(t, servers.VersityGW) },
		Deviations: map[string]string{
			"put_if_absent_after_delete_creates_the_key": "versitygw v1.8.0 keeps the ETag on a delete marker " +
				"and answers If-None-Match: * with 412 while one is the current version",
			"put_if_match_after_delete_returns_precondition_and_creates_nothing": "versitygw v1.8.0 keeps the ETag " +
				"on a delete marker and lets If-Match with the deleted object's ETag write",
		},
	})
}

// TestConformanceOwnEndpoint runs the store suite on the user's own S3
// server when S3Q_TEST_ENDPOINT names one (s3localtest.EnvEndpoint;
// docs/deploy.md "Other S3 servers"); without it there is nothing to run.
func TestConformanceOwnEndpoint(t *testing.T) {
	if servers.Own == nil {
		t.Logf("%s is not set: no endpoint of your own to run the suite on", s3localtest.EnvEndpoint)
		return
	}
	storetest.Run(t, storetest.Factory{
		Name: "own",
		New:  func(t testing.TB) store.Store { return s3localtest.NewStore(t, servers.Own) },
	})
}
