package main

import (
	"crypto/rand"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"testing"
)

// bucketEnv points the commands that work on a bucket directly at
// endpoint, with gofakes3's bucket and credentials.
func bucketEnv(t *testing.T, endpoint string) {
	srv := servers.GoFakeS3
	for k, v := range map[string]string{
		"S3Q_BUCKET": srv.Bucket, "S3Q_ENDPOINT": endpoint, "S3Q_PREFIX": "check-" + rand.Text() + "/", "AWS_REGION": srv.Region,
		"AWS_ACCESS_KEY_ID": srv.AccessKey, "AWS_SECRET_ACCESS_KEY": srv.SecretKey, "S3Q_EVENT_BUS": "",
		"AWS_CONFIG_FILE": os.DevNull, "AWS_SHARED_CREDENTIALS_FILE": os.DevNull,
	} {
		t.Setenv(k, v)
	}
}

func TestCheckPassesABucketThatHonoursConditionalWrites(t *testing.T) {
	bucketEnv(t, servers.GoFakeS3.Endpoint)
	out, errOut, code := cli(t, "", "check")
	if code != 0 || !strings.Contains(out, "create-if-absent and compare-and-swap are honoured") || !strings.Contains(out, "versioning is on") {
		t.Fatalf("check (%d):\nstdout %s\nstderr %s", code, out, errOut)
	}
}

// Behind a proxy that drops If-None-Match, check, sweep and tick refuse
// the bucket, saying which promise broke.
func TestCheckAndTheBucketCommandsRefuseAServerThatDropsConditions(t *testing.T) {
	target, err := url.Parse(servers.GoFakeS3.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del("If-None-Match")
		rp.ServeHTTP(w, r)
	}))
	defer proxy.Close()
	bucketEnv(t, proxy.URL)
	for _, cmd := range []string{"check", "sweep", "tick"} {
		out, errOut, code := cli(t, "", cmd)
		if code == 0 || !strings.Contains(errOut, "If-None-Match") || !strings.Contains(errOut, "not honoured") {
			t.Errorf("%s behind the proxy (%d):\nstdout %s\nstderr %s", cmd, code, out, errOut)
		}
	}
}
