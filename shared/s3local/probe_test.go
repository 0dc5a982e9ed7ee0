package s3local_test

import (
	"crypto/rand"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3q/s3q/shared/s3local/s3localtest"
	"github.com/s3q/s3q/shared/store"
	"github.com/s3q/s3q/shared/store/s3store"
)

func TestProbeFindsTheConditionalWritesHonouredOnEveryServer(t *testing.T) {
	for _, srv := range allServers() {
		t.Run(srv.Name, func(t *testing.T) {
			res, err := store.Probe(t.Context(), s3localtest.NewStore(t, srv))
			if err != nil || !res.Versioning {
				t.Fatalf("Probe = %+v, %v; want no error and versioning on", res, err)
			}
		})
	}
}

// TestProbeRefusesAServerBehindAProxyThatDropsTheConditions: the
// conditions never reach the server, which then applies every write.
func TestProbeRefusesAServerBehindAProxyThatDropsTheConditions(t *testing.T) {
	for _, drop := range []string{"If-None-Match", "If-Match"} {
		t.Run(drop, func(t *testing.T) {
			target, err := url.Parse(servers.GoFakeS3.Endpoint)
			if err != nil {
				t.Fatal(err)
			}
			rp := httputil.NewSingleHostReverseProxy(target)
			proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				r.Header.Del(drop)
				rp.ServeHTTP(w, r)
			}))
			t.Cleanup(proxy.Close)
			cfg := servers.GoFakeS3.Config()
			cfg.Endpoint = proxy.URL
			client, err := s3store.NewClient(t.Context(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			_, err = store.Probe(t.Context(), s3store.New(client, servers.GoFakeS3.Bucket, "probe-"+drop+"/"))
			if !errors.Is(err, store.ErrNotHonoured) {
				t.Fatalf("Probe behind a proxy dropping %s: %v, want ErrNotHonoured", drop, err)
			}
			t.Log(err)
		})
	}
}

func TestProbeReportsABucketWithoutVersioning(t *testing.T) {
	srv := servers.GoFakeS3
	bucket := "plain-" + strings.ToLower(rand.Text()[:10])
	if _, err := srv.Client().CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	res, err := store.Probe(t.Context(), s3store.New(srv.Client(), bucket, ""))
	if err != nil || res.Versioning {
		t.Fatalf("Probe of an unversioned bucket = %+v, %v; want versioning off", res, err)
	}
}
