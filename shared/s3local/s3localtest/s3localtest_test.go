package s3localtest

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/s3q/s3q/shared/s3local"
)

type runFunc func() int

func (f runFunc) Run() int { return f() }

// fatalTB records a Fatalf instead of ending the test.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}
func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	panic(f)
}

func TestMainRunsTheTestsWithoutVersityGW(t *testing.T) {
	t.Setenv("S3Q_VERSITYGW", filepath.Join(t.TempDir(), "no-versitygw"))
	var s Servers
	ran := false
	code := Main(runFunc(func() int {
		ran = true
		if s.GoFakeS3 == nil || s.VersityGW != nil {
			t.Errorf("servers during the run: %+v", s)
		}
		tb := &fatalTB{TB: t}
		func() {
			defer func() { _ = recover() }()
			NewStore(tb, s.VersityGW)
		}()
		if !strings.Contains(tb.msg, "versitygw did not start") || !strings.Contains(tb.msg, "no-versitygw") {
			t.Errorf("a store on the missing server fails with %q", tb.msg)
		}
		return 0
	}), &s)
	if !ran || code != 0 {
		t.Fatalf("ran %v, exit code %d: the tests that need no server must run and pass", ran, code)
	}
}

func TestMainConnectsTheEndpointTheEnvironmentNames(t *testing.T) {
	own, err := s3local.StartGoFakeS3(s3local.GoFakeS3Options{Bucket: "mine"})
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close()
	t.Setenv(EnvEndpoint, own.Endpoint)
	t.Setenv(EnvBucket, "mine")
	t.Setenv("AWS_ACCESS_KEY_ID", own.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", own.SecretKey)
	var s Servers
	code := Main(runFunc(func() int {
		if s.Own == nil || s.Own.Endpoint != own.Endpoint || s.Own.Bucket != "mine" {
			t.Fatalf("Own = %+v", s.Own)
		}
		st := NewStore(t, s.Own)
		if _, err := st.PutIfAbsent(t.Context(), "k", []byte("v")); err != nil {
			t.Fatalf("a store on the own endpoint: %v", err)
		}
		return 0
	}), &s)
	if code != 0 {
		t.Fatalf("exit code %d", code)
	}
}
