package artifacts_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/artifacts"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/s3local"
	"github.com/s3q/s3q/shared/s3local/s3localtest"
)

var servers s3localtest.Servers

func TestMain(m *testing.M) { os.Exit(s3localtest.Main(m, &servers)) }

var ctx = context.Background()

func TestPresignedURLsWorkOnGoFakeS3(t *testing.T) { presignedURLsWork(t, servers.GoFakeS3) }

func TestPresignedURLsWorkOnVersityGW(t *testing.T) { presignedURLsWork(t, servers.VersityGW) }

func do(t *testing.T, u artifacts.URL, body []byte) (int, []byte) {
	t.Helper()
	code, _, b := doHeader(t, u, body)
	return code, b
}

func doHeader(t *testing.T, u artifacts.URL, body []byte) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(u.Method, u.URL, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range u.Headers {
		req.Header[k] = v
	}
	if body == nil {
		req.Body = nil
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, b
}

func presignedURLsWork(t *testing.T, srv *s3local.Server) {
	prefix := "test-" + rand.Text() + "/"
	q := queues.NewQueue(srv.Store(prefix), queues.Options{})
	svc := artifacts.New(q, srv.Client(), srv.Bucket, prefix, artifacts.Options{TTL: time.Hour, MaxBytes: 1 << 20})
	// Presigned URLs are checked against the server's clock: use the real one.
	now := time.Now().UTC().Truncate(time.Second)

	res, err := q.Submit(ctx, queue.SubmitRequest{TaskType: "ingest", TTL: durp(30 * time.Minute)}, now)
	if err != nil {
		t.Fatal(err)
	}
	id := res.Task.ID
	put, err := svc.PutURL(ctx, id, "photo.jpg", int64(len("jpeg bytes")), now)
	if err != nil {
		t.Fatal(err)
	}
	if put.Method != http.MethodPut || !put.ExpiresAt.Equal(now.Add(30*time.Minute)) || !strings.Contains(put.URL, "X-Amz-Expires=1800") ||
		!strings.Contains(put.URL, "X-Amz-SignedHeaders=content-length%3Bhost") || put.Headers.Get("Content-Length") != "10" {
		t.Fatalf("put url: %+v", put)
	}
	if code, body := do(t, put, []byte("jpeg bytes")); code != http.StatusOK {
		t.Fatalf("PUT through the URL: %d %s", code, body)
	}
	get, err := svc.GetURL(ctx, id, "photo.jpg", now.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if !get.ExpiresAt.Equal(now.Add(30 * time.Minute)) {
		t.Fatalf("get url expires %s", get.ExpiresAt)
	}
	if !strings.Contains(get.URL, "response-content-disposition=attachment") {
		t.Fatalf("get url without content-disposition: %s", get.URL)
	}
	code, hdr, body := doHeader(t, get, nil)
	if code != http.StatusOK || string(body) != "jpeg bytes" {
		t.Fatalf("GET through the URL: %d %q", code, body)
	}
	if srv.Name == "versitygw" && !strings.HasPrefix(hdr.Get("Content-Disposition"), "attachment") {
		t.Fatalf("GET answered Content-Disposition %q", hdr.Get("Content-Disposition"))
	}
	if _, err := svc.GetURL(ctx, id, "missing.txt", now); !errors.Is(err, artifacts.ErrNoArtifact) || !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("missing artifact: %v", err)
	}
	var ve *queue.ValidationError
	if _, err := svc.PutURL(ctx, id, "../other/x", 1, now); !errors.As(err, &ve) || ve.Field != "name" {
		t.Fatalf("bad name: %v", err)
	}
	if _, err := svc.PutURL(ctx, id, "x", 0, now); !errors.As(err, &ve) || ve.Field != "size" || !errors.Is(err, queue.ErrInvalidInput) {
		t.Fatalf("no size: %v", err)
	}
	if _, err := svc.PutURL(ctx, id, "x", 1<<20+1, now); !errors.As(err, &ve) || ve.Field != "size" || !errors.Is(err, queue.ErrTooLarge) {
		t.Fatalf("size over the limit: %v", err)
	}
	if _, err := svc.PutURL(ctx, queue.NewID(now), "x", 1, now); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("unknown task: %v", err)
	}

	// The sweep deletes them once the task has finished.
	c, err := q.Claim(ctx, queue.ClaimRequest{}, now)
	if err != nil || len(c) != 1 {
		t.Fatalf("claim: %v %v", c, err)
	}
	if _, err := q.Complete(ctx, queue.CompleteRequest{ID: res.Task.Ref(), LeaseToken: c[0].Lease.Token}, now); err != nil {
		t.Fatal(err)
	}
	var se *queue.StateError
	if _, err := svc.PutURL(ctx, id, "late.txt", 1, now); !errors.As(err, &se) {
		t.Fatalf("put url for a finished task: %v", err)
	}
	rep, err := q.Sweep(ctx, now.Add(time.Minute), queue.SweepOptions{})
	if err != nil || rep.ArtifactsDeleted != 1 {
		t.Fatalf("sweep: %v %+v", err, rep)
	}
	if code, _ := do(t, get, nil); code != http.StatusNotFound {
		t.Fatalf("GET after the sweep: %d", code)
	}

	// A URL past its expiry is refused (versitygw checks; gofakes3 does not).
	if srv.Name == "versitygw" {
		old := now.Add(-3 * time.Hour)
		res, err := q.Submit(ctx, queue.SubmitRequest{TaskType: "ingest"}, old)
		if err != nil {
			t.Fatal(err)
		}
		stale, err := svc.PutURL(ctx, res.Task.ID, "x", 1, old.Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if code, body := do(t, stale, []byte("x")); code != http.StatusForbidden {
			t.Fatalf("PUT through an expired URL: %d %s", code, body)
		}
	}
}

// TestAURLIssuedBeforeTheTaskFinishedUploadsNothingThatOutlivesIt: S3
// cannot revoke a presigned URL, so an upload through a URL issued while
// the task ran still lands after the task is cancelled; the sweep deletes
// it at the artifacts' time, which no URL outlives. A new URL is refused.
func TestAURLIssuedBeforeTheTaskFinishedUploadsNothingThatOutlivesIt(t *testing.T) {
	for _, srv := range []*s3local.Server{servers.GoFakeS3, servers.VersityGW} {
		t.Run(srv.Name, func(t *testing.T) {
			prefix := "test-" + rand.Text() + "/"
			q := queues.NewQueue(srv.Store(prefix), queues.Options{})
			svc := artifacts.New(q, srv.Client(), srv.Bucket, prefix, artifacts.Options{TTL: 10 * time.Minute})
			now := time.Now().UTC().Truncate(time.Second)
			res, err := q.Submit(ctx, queue.SubmitRequest{TaskType: "ingest"}, now)
			if err != nil {
				t.Fatal(err)
			}
			id := res.Task.ID
			put, err := svc.PutURL(ctx, id, "out.bin", 3, now)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := q.Cancel(ctx, id, now); err != nil {
				t.Fatal(err)
			}
			var se *queue.StateError
			if _, err := svc.PutURL(ctx, id, "out.bin", 3, now); !errors.As(err, &se) {
				t.Fatalf("a new URL for a cancelled task: %v", err)
			}
			if _, err := q.Sweep(ctx, now.Add(time.Minute), queue.SweepOptions{}); err != nil {
				t.Fatal(err)
			}
			if code, body := do(t, put, []byte("abc")); code != http.StatusOK {
				t.Fatalf("late PUT through the old URL: %d %s", code, body)
			}
			rep, err := q.Sweep(ctx, put.ExpiresAt.Add(time.Minute), queue.SweepOptions{})
			if err != nil || rep.ArtifactsDeleted != 1 {
				t.Fatalf("sweep at the artifacts' time: %+v %v", rep, err)
			}
			if _, err := q.Store().Head(ctx, queue.ArtifactKey(queue.DefaultQueue, id, "out.bin")); err == nil {
				t.Fatal("the late upload outlived its URL")
			}
		})
	}
}

// TestAnUploadURLRefusesABodyOfAnotherSizeOnVersityGW: the URL signs the
// declared Content-Length, so a real S3 refuses a larger (or smaller)
// body; gofakes3 checks no signatures, so only versitygw can show it.
func TestAnUploadURLRefusesABodyOfAnotherSizeOnVersityGW(t *testing.T) {
	srv := servers.VersityGW
	prefix := "test-" + rand.Text() + "/"
	q := queues.NewQueue(srv.Store(prefix), queues.Options{})
	svc := artifacts.New(q, srv.Client(), srv.Bucket, prefix, artifacts.Options{MaxBytes: 1 << 20})
	now := time.Now().UTC().Truncate(time.Second)
	res, err := q.Submit(ctx, queue.SubmitRequest{TaskType: "ingest"}, now)
	if err != nil {
		t.Fatal(err)
	}
	put, err := svc.PutURL(ctx, res.Task.ID, "small.bin", 100, now)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{2 << 20, 101, 99} {
		if code, err := tryPut(put, bytes.Repeat([]byte("x"), n)); err == nil && code != http.StatusForbidden {
			t.Fatalf("PUT of %d bytes through a URL for 100: %d", n, code)
		} else if err != nil {
			// The server answered 403 and closed the connection while
			// the client was still sending a large body: refused too.
			t.Logf("PUT of %d bytes: %v", n, err)
		}
	}
	if _, err := q.Store().Head(ctx, queue.ArtifactKey(res.Task.Queue, res.Task.ID, "small.bin")); err == nil {
		t.Fatal("a refused PUT stored the artifact")
	}
	if code, body := do(t, put, bytes.Repeat([]byte("x"), 100)); code != http.StatusOK {
		t.Fatalf("PUT of the declared 100 bytes: %d %s", code, body)
	}
}

// tryPut sends body through u and returns the status, or the transport's
// error when the server closed the connection before the body was sent.
func tryPut(u artifacts.URL, body []byte) (int, error) {
	req, err := http.NewRequest(u.Method, u.URL, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	for k, v := range u.Headers {
		req.Header[k] = v
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, res.Body)
	return res.StatusCode, nil
}

func durp(d time.Duration) *queue.Duration {
	v := queue.Duration(d)
	return &v
}
