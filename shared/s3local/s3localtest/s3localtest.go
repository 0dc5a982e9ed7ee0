// Package s3localtest has the test helpers of package s3local: stores on a
// local server, each under its own random key prefix.
package s3localtest

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/s3local"
	"github.com/s3q/s3q/shared/store"
)

// NewStore returns a store on srv's bucket under a fresh random key prefix
// ("test-<random>/"), so that tests sharing the server never see each
// other's keys. Keys are left behind; they go when the server closes.
func NewStore(t testing.TB, srv *s3local.Server) store.Store {
	t.Helper()
	return srv.Store("test-" + rand.Text() + "/")
}

// Servers are the local servers a test package shares.
type Servers struct {
	GoFakeS3  *s3local.Server
	VersityGW *s3local.Server
}

// Main starts gofakes3 and versitygw into s, runs the package's tests and
// stops both, returning the exit code for os.Exit. Use it as
//
//	var servers s3localtest.Servers
//	func TestMain(m *testing.M) { os.Exit(s3localtest.Main(m, &servers)) }
//
// A server that cannot start fails the run (exit 1): nothing is skipped.
func Main(m *testing.M, s *Servers) int {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var err error
	if s.GoFakeS3, err = s3local.StartGoFakeS3(s3local.GoFakeS3Options{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer s.GoFakeS3.Close()
	if s.VersityGW, err = s3local.StartVersityGW(ctx, ""); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer s.VersityGW.Close()
	return m.Run()
}
