package s3local_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3q/s3q/shared/s3local"
	"github.com/s3q/s3q/shared/s3local/s3localtest"
	"github.com/s3q/s3q/shared/store"
)

// servers returns the servers TestMain started, by name.
func allServers() []*s3local.Server { return []*s3local.Server{servers.GoFakeS3, servers.VersityGW} }

func TestBucketKeepsEveryVersionNewestFirst(t *testing.T) {
	for _, srv := range allServers() {
		t.Run(srv.Name, func(t *testing.T) {
			ctx := t.Context()
			key := "versions-" + rand.Text()
			var ids []string
			for i := range 3 {
				out, err := srv.Client().PutObject(ctx, &s3.PutObjectInput{
					Bucket: &srv.Bucket, Key: &key, Body: strings.NewReader(fmt.Sprint("v", i)),
				})
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, aws.ToString(out.VersionId))
			}
			out, err := srv.Client().ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: &srv.Bucket, Prefix: &key})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, v := range out.Versions {
				got = append(got, aws.ToString(v.VersionId))
			}
			want := []string{ids[2], ids[1], ids[0]}
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("versions = %q, want %q (newest first)", got, want)
			}
			if !aws.ToBool(out.Versions[0].IsLatest) {
				t.Errorf("the newest version is not the latest")
			}
		})
	}
}

func TestStoresUnderDifferentPrefixesDoNotSeeEachOther(t *testing.T) {
	for _, srv := range allServers() {
		t.Run(srv.Name, func(t *testing.T) {
			ctx := t.Context()
			a, b := s3localtest.NewStore(t, srv), s3localtest.NewStore(t, srv)
			if _, err := a.Put(ctx, "k", []byte("a")); err != nil {
				t.Fatal(err)
			}
			if _, err := b.Get(ctx, "k"); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("Get from the other prefix: %v, want ErrNotFound", err)
			}
			page, err := b.List(ctx, "", "", 0)
			if err != nil || len(page.Items) != 0 {
				t.Errorf("List of the other prefix = %+v, %v; want nothing", page, err)
			}
			if vs, err := b.Versions(ctx, "k", "", 0); err != nil || len(vs.Versions) != 0 {
				t.Errorf("Versions from the other prefix = %+v, %v; want none", vs, err)
			}
		})
	}
}

func TestFindVersityGWPrefersTheEnvironment(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "versitygw")
	if err := os.WriteFile(bin, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(s3local.VersityGWEnv, bin)
	if got, err := s3local.FindVersityGW(); err != nil || got != bin {
		t.Errorf("FindVersityGW = %q, %v; want %q", got, err, bin)
	}
	t.Setenv(s3local.VersityGWEnv, bin+"-missing")
	if _, err := s3local.FindVersityGW(); err == nil {
		t.Errorf("FindVersityGW with a missing $%s succeeded", s3local.VersityGWEnv)
	}
}

func TestFindVersityGWSaysHowToInstallIt(t *testing.T) {
	t.Setenv(s3local.VersityGWEnv, "")
	t.Setenv("PATH", t.TempDir())
	t.Chdir(t.TempDir())
	_, err := s3local.FindVersityGW()
	if err == nil || !strings.Contains(err.Error(), "scripts/install-versitygw") {
		t.Errorf("FindVersityGW error = %v, want one that names scripts/install-versitygw", err)
	}
}

func TestFindVersityGWLooksInTheRepositoryBin(t *testing.T) {
	root := t.TempDir()
	bin := filepath.Join(root, ".bin", "versitygw")
	for path, data := range map[string]string{filepath.Join(root, "go.mod"): "module x\n", bin: ""} {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sub := filepath.Join(root, "shared", "pkg")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(s3local.VersityGWEnv, "")
	t.Chdir(sub)
	if got, err := s3local.FindVersityGW(); err != nil || got != bin {
		t.Errorf("FindVersityGW = %q, %v; want %q", got, err, bin)
	}
}

func TestStartVersityGWWithoutTheBinaryFails(t *testing.T) {
	_, err := s3local.StartVersityGW(context.Background(), filepath.Join(t.TempDir(), "versitygw"))
	if err == nil {
		t.Fatal("StartVersityGW with a missing binary succeeded")
	}
}

func TestCloseTwiceIsSafe(t *testing.T) {
	srv, err := s3local.StartGoFakeS3(s3local.GoFakeS3Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Close(); err != nil {
		t.Errorf("first Close: %v", err)
	}
	if err := srv.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestVersityGWCloseStopsTheGateway(t *testing.T) {
	srv, err := s3local.StartVersityGW(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := srv.Client().ListBuckets(t.Context(), &s3.ListBucketsInput{}, func(o *s3.Options) { o.RetryMaxAttempts = 1 }); err == nil {
		t.Errorf("the gateway still answers after Close")
	}
}

// S3Q_VERSITYGW_DIR says where a started gateway keeps its data: a fresh
// folder inside it, removed by Close.
func TestVersityGWKeepsItsDataWhereTheEnvironmentSaysAndCloseRemovesIt(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(s3local.VersityGWDirEnv, dir)
	srv, err := s3local.StartVersityGW(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	made, _ := filepath.Glob(filepath.Join(dir, "s3q-versitygw-*"))
	if len(made) != 1 {
		t.Errorf("data folders in %s: %v, want one", dir, made)
	}
	if err := srv.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) != 0 {
		t.Errorf("Close left %v", left)
	}
}
