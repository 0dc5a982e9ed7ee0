// Package s3localtest has the test helpers of package s3local: stores on a
// local server, each under its own random key prefix.
package s3localtest

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/s3local"
	"github.com/s3q/s3q/shared/store"
)

// NewStore returns a store on srv's bucket under a fresh random key prefix
// ("test-<random>/"), so that tests sharing the server never see each
// other's keys. Keys are left behind; they go when the server closes.
//
// srv is nil when its server did not start (Main): the test fails, with
// the reason, and the package's other tests still run.
//
// On gofakes3 each store gets a bucket of its own as well: its in-memory
// backend reads a LIST by walking the whole bucket from its first key
// (whatever the prefix) to the page's end, so with every test's keys in
// one bucket a suite's LISTs cost more the further it gets (a quarter of
// the queue suite's CPU under -race went there).
func NewStore(t testing.TB, srv *s3local.Server) store.Store {
	t.Helper()
	if srv == nil {
		t.Fatalf("no server for this test: %v", startErr)
	}
	prefix := "test-" + rand.Text() + "/"
	if srv.Name != "gofakes3" {
		return srv.Store(prefix)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := srv.StoreInBucket(ctx, "t-"+strings.ToLower(rand.Text()), prefix)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// Servers are the local servers a test package shares.
type Servers struct {
	GoFakeS3  *s3local.Server
	VersityGW *s3local.Server
	// Own is the user's own S3 endpoint, when EnvEndpoint names one:
	// the packages' conformance suites run on it too
	// (TestConformanceOwnEndpoint). Else nil.
	Own *s3local.Server
}

// The environment that points the conformance suites at a user's own S3
// server: S3Q_TEST_ENDPOINT (its URL, path-style), S3Q_TEST_BUCKET
// (default s3q-conformance; created if absent, versioning turned on),
// AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_REGION (default
// us-east-1). Every test works under its own random key prefix.
const (
	EnvEndpoint = "S3Q_TEST_ENDPOINT"
	EnvBucket   = "S3Q_TEST_BUCKET"
)

// startErr says why a server of Main did not start.
var startErr error = errors.New("the package's TestMain did not start it")

// Runner runs a package's tests: *testing.M.
type Runner interface{ Run() int }

// Main starts gofakes3 and versitygw into s, runs the package's tests and
// stops both, returning the exit code for os.Exit. Use it as
//
//	var servers s3localtest.Servers
//	func TestMain(m *testing.M) { os.Exit(s3localtest.Main(m, &servers)) }
//
// gofakes3 runs in-process and always starts. When versitygw cannot start
// (not installed: make versitygw), Main says so on stderr and runs the
// tests all the same, with s.VersityGW nil: every test that asks NewStore
// for a store on it fails with the reason (nothing is skipped), and the
// tests that need no server, the in-memory store's above all (go test -run
// Mem, as make test-short does), run and pass.
//
// A fuzz worker (go test -fuzz runs the test binary again in each of its
// worker processes, TestMain included) starts no server: a worker runs
// only the fuzz target, which uses the in-memory store, and one that
// started versitygw would spend its first seconds, and every restart,
// waiting for it while the fuzzer reports 0 execs a second.
func Main(m Runner, s *Servers) int {
	if fuzzWorker() {
		return m.Run()
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var err error
	if s.GoFakeS3, err = s3local.StartGoFakeS3(s3local.GoFakeS3Options{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer s.GoFakeS3.Close()
	if s.VersityGW, err = s3local.StartVersityGW(ctx, ""); err != nil {
		startErr = fmt.Errorf("versitygw did not start (make versitygw installs it): %w", err)
		fmt.Fprintf(os.Stderr, "s3localtest: %v; the tests that need it fail\n", startErr)
		s.VersityGW = nil
	} else {
		defer s.VersityGW.Close()
	}
	if endpoint := os.Getenv(EnvEndpoint); endpoint != "" {
		bucket := os.Getenv(EnvBucket)
		if bucket == "" {
			bucket = "s3q-conformance"
		}
		if s.Own, err = s3local.Connect(ctx, "own", endpoint, os.Getenv("AWS_REGION"),
			os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY"), bucket); err != nil {
			fmt.Fprintf(os.Stderr, "s3localtest: %s=%s: %v\n", EnvEndpoint, endpoint, err)
			return 1
		}
	}
	return m.Run()
}

// fuzzWorker reports whether the test binary runs as one of go test
// -fuzz's worker processes.
func fuzzWorker() bool {
	if !flag.Parsed() {
		flag.Parse()
	}
	f := flag.Lookup("test.fuzzworker")
	return f != nil && f.Value.String() == "true"
}
