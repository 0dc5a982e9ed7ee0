package s3store

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/store"
)

// request is what the fake server saw of one request.
type request struct {
	Method, Path string
	Query        url.Values
	Header       http.Header
}

// answer is a canned response.
type answer struct {
	status int
	header map[string]string
	body   string
}

// fakeS3 is an httptest server that records requests and answers each with
// the next canned answer (repeating the last one).
type fakeS3 struct {
	*httptest.Server
	mu       sync.Mutex
	requests []request
	answers  []answer
}

func newFakeS3(t *testing.T, answers ...answer) *fakeS3 {
	f := &fakeS3{answers: answers}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.requests = append(f.requests, request{r.Method, r.URL.Path, r.URL.Query(), r.Header.Clone()})
		a := f.answers[min(len(f.requests), len(f.answers))-1]
		f.mu.Unlock()
		if a.body != "" {
			w.Header().Set("Content-Type", "application/xml")
		}
		for k, v := range a.header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(a.status)
		w.Write([]byte(a.body))
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeS3) seen() []request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.requests)
}

// testPolicy retries like the default policy, but without waiting long.
var testPolicy = retryPolicy{MaxAttempts: 4, BaseDelay: time.Millisecond, MaxDelay: 2 * time.Millisecond, AttemptTimeout: 10 * time.Second}

// newTestStore returns a Store on bucket "b" with prefix "pre/" at f.
func newTestStore(t *testing.T, f *fakeS3) *Store {
	client, err := NewClient(t.Context(), Config{
		Endpoint: f.URL, Region: "us-east-1", AccessKey: "a", SecretKey: "s", PathStyle: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	return newStore(client, "b", "pre/", testPolicy)
}

func s3Error(status int, code string) answer {
	return answer{status: status, body: `<?xml version="1.0" encoding="UTF-8"?>` +
		`<Error><Code>` + code + `</Code><Message>m</Message><RequestId>r</RequestId></Error>`}
}

var ok = answer{status: 200, header: map[string]string{"ETag": `"e-new"`}}

func TestConditionalHeaders(t *testing.T) {
	tests := []struct {
		name                 string
		write                func(*Store) (string, error)
		ifMatch, ifNoneMatch string
	}{
		{"put_if_absent_sends_if_none_match_star", func(s *Store) (string, error) {
			return s.PutIfAbsent(t.Context(), "k", []byte("body"))
		}, "", "*"},
		{"put_if_match_sends_the_etag_as_given", func(s *Store) (string, error) {
			return s.PutIfMatch(t.Context(), "k", []byte("body"), `"e-old"`)
		}, `"e-old"`, ""},
		{"put_sends_no_condition", func(s *Store) (string, error) {
			return s.Put(t.Context(), "k", []byte("body"))
		}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeS3(t, ok)
			etag, err := tt.write(newTestStore(t, f))
			if err != nil {
				t.Fatal(err)
			}
			if etag != `"e-new"` {
				t.Errorf("ETag = %s, want the quoted ETag the server sent", etag)
			}
			reqs := f.seen()
			if len(reqs) != 1 {
				t.Fatalf("%d requests, want 1", len(reqs))
			}
			r := reqs[0]
			if r.Method != http.MethodPut || r.Path != "/b/pre/k" {
				t.Errorf("request = %s %s, want PUT /b/pre/k", r.Method, r.Path)
			}
			if got := r.Header.Get("If-Match"); got != tt.ifMatch {
				t.Errorf("If-Match = %q, want %q", got, tt.ifMatch)
			}
			if got := r.Header.Get("If-None-Match"); got != tt.ifNoneMatch {
				t.Errorf("If-None-Match = %q, want %q", got, tt.ifNoneMatch)
			}
		})
	}
}

func TestPutIfMatchWithAnEmptyETagSendsNothing(t *testing.T) {
	f := newFakeS3(t, ok)
	_, err := newTestStore(t, f).PutIfMatch(t.Context(), "k", []byte("body"), "")
	if !errors.Is(err, store.ErrPrecondition) {
		t.Errorf("error = %v, want ErrPrecondition", err)
	}
	if n := len(f.seen()); n != 0 {
		t.Errorf("%d requests, want none", n)
	}
}

func TestRetries(t *testing.T) {
	absent := func(s *Store) error { _, err := s.PutIfAbsent(t.Context(), "k", nil); return err }
	match := func(s *Store) error { _, err := s.PutIfMatch(t.Context(), "k", nil, `"e"`); return err }
	plain := func(s *Store) error { _, err := s.Put(t.Context(), "k", nil); return err }
	get := func(s *Store) error { _, err := s.Get(t.Context(), "k"); return err }
	tests := []struct {
		name     string
		call     func(*Store) error
		answer   answer
		want     error
		requests int
	}{
		{"412_is_not_retried", absent, s3Error(412, "PreconditionFailed"), store.ErrPrecondition, 1},
		{"412_on_put_if_match_is_not_retried", match, s3Error(412, "PreconditionFailed"), store.ErrPrecondition, 1},
		{"404_on_put_if_match_is_a_precondition", match, s3Error(404, "NoSuchKey"), store.ErrPrecondition, 1},
		{"409_conflict_is_returned_to_the_caller", absent, s3Error(409, "ConditionalRequestConflict"), store.ErrRetryable, 1},
		{"slow_down_on_a_conditional_write_is_retried", absent, s3Error(503, "SlowDown"), store.ErrRetryable, testPolicy.MaxAttempts},
		{"500_on_a_conditional_write_is_not_retried", match, s3Error(500, "InternalError"), store.ErrRetryable, 1},
		{"500_on_a_plain_put_is_retried", plain, s3Error(500, "InternalError"), store.ErrRetryable, testPolicy.MaxAttempts},
		{"slow_down_on_get_is_retried", get, s3Error(503, "SlowDown"), store.ErrRetryable, testPolicy.MaxAttempts},
		{"404_on_get_is_not_retried", get, s3Error(404, "NoSuchKey"), store.ErrNotFound, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeS3(t, tt.answer)
			err := tt.call(newTestStore(t, f))
			if !errors.Is(err, tt.want) {
				t.Errorf("error = %v, want %v", err, tt.want)
			}
			if n := len(f.seen()); n != tt.requests {
				t.Errorf("%d requests, want %d", n, tt.requests)
			}
		})
	}
}

func TestSlowDownThenSuccessOnAConditionalWrite(t *testing.T) {
	f := newFakeS3(t, s3Error(503, "SlowDown"), s3Error(503, "SlowDown"), ok)
	etag, err := newTestStore(t, f).PutIfAbsent(t.Context(), "k", []byte("body"))
	if err != nil || etag != `"e-new"` {
		t.Fatalf("PutIfAbsent = %q, %v; want the ETag after two retries", etag, err)
	}
	reqs := f.seen()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	for _, r := range reqs {
		if r.Header.Get("If-None-Match") != "*" {
			t.Errorf("a retry lost If-None-Match: %v", r.Header)
		}
	}
}

func TestListPrefixesAndStripsKeys(t *testing.T) {
	f := newFakeS3(t, answer{status: 200, body: `<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Name>b</Name><Prefix>pre/q/</Prefix><KeyCount>2</KeyCount><MaxKeys>2</MaxKeys><IsTruncated>true</IsTruncated>
  <Contents><Key>pre/q/1</Key><LastModified>2026-01-02T03:04:05.000Z</LastModified><ETag>"e1"</ETag><Size>3</Size></Contents>
  <Contents><Key>pre/q/2</Key><LastModified>2026-01-02T03:04:06.000Z</LastModified><ETag>"e2"</ETag><Size>4</Size></Contents>
</ListBucketResult>`})
	page, err := newTestStore(t, f).List(t.Context(), "q/", "q/0", 2)
	if err != nil {
		t.Fatal(err)
	}
	if got := page.Keys(); !slices.Equal(got, []string{"q/1", "q/2"}) || !page.Truncated {
		t.Errorf("List = %q truncated %v, want [q/1 q/2] truncated", got, page.Truncated)
	}
	if it := page.Items[1]; it.ETag != `"e2"` || it.Size != 4 || it.LastModified.IsZero() {
		t.Errorf("item = %+v", it)
	}
	q := f.seen()[0].Query
	if q.Get("list-type") != "2" || q.Get("prefix") != "pre/q/" || q.Get("start-after") != "pre/q/0" || q.Get("max-keys") != "2" {
		t.Errorf("query = %v", q)
	}
}

func TestListWithoutStartAfterOrLimit(t *testing.T) {
	f := newFakeS3(t, answer{status: 200, body: `<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>`})
	if _, err := newTestStore(t, f).List(t.Context(), "q/", "", 0); err != nil {
		t.Fatal(err)
	}
	q := f.seen()[0].Query
	if q.Has("start-after") || q.Get("max-keys") != "1000" {
		t.Errorf("query = %v, want no start-after and max-keys 1000", q)
	}
}

func TestVersionsPagesFiltersAndMerges(t *testing.T) {
	// Two pages as S3 sends them: interleaved, newest first, then the
	// next key ("pre/kx") that shares the prefix.
	page1 := `<ListVersionsResult><IsTruncated>true</IsTruncated>
  <NextKeyMarker>pre/k</NextKeyMarker><NextVersionIdMarker>v3</NextVersionIdMarker>
  <DeleteMarker><Key>pre/k</Key><VersionId>v5</VersionId><IsLatest>true</IsLatest><LastModified>2026-01-01T00:00:05.000Z</LastModified></DeleteMarker>
  <Version><Key>pre/k</Key><VersionId>v4</VersionId><IsLatest>false</IsLatest><LastModified>2026-01-01T00:00:04.000Z</LastModified><ETag>"e4"</ETag><Size>4</Size></Version>
  <DeleteMarker><Key>pre/k</Key><VersionId>v3</VersionId><IsLatest>false</IsLatest><LastModified>2026-01-01T00:00:03.000Z</LastModified></DeleteMarker>
</ListVersionsResult>`
	page2 := `<ListVersionsResult><IsTruncated>true</IsTruncated>
  <NextKeyMarker>pre/kx</NextKeyMarker><NextVersionIdMarker>x1</NextVersionIdMarker>
  <Version><Key>pre/k</Key><VersionId>v2</VersionId><IsLatest>false</IsLatest><LastModified>2026-01-01T00:00:02.000Z</LastModified><ETag>"e2"</ETag><Size>2</Size></Version>
  <Version><Key>pre/k</Key><VersionId>v1</VersionId><IsLatest>false</IsLatest><LastModified>2026-01-01T00:00:01.000Z</LastModified><ETag>"e1"</ETag><Size>1</Size></Version>
  <Version><Key>pre/kx</Key><VersionId>x1</VersionId><IsLatest>true</IsLatest><LastModified>2026-01-01T00:00:09.000Z</LastModified><ETag>"x"</ETag><Size>1</Size></Version>
</ListVersionsResult>`
	// A third page as gofakes3 sends it: truncated, without markers.
	page3 := `<ListVersionsResult><IsTruncated>true</IsTruncated>
  <Version><Key>pre/k</Key><VersionId>v0</VersionId><IsLatest>false</IsLatest><LastModified>2026-01-01T00:00:00.000Z</LastModified><ETag>"e0"</ETag><Size>1</Size></Version>
</ListVersionsResult>`
	f := newFakeS3(t, answer{status: 200, body: page1}, answer{status: 200, body: page2}, answer{status: 200, body: page3})
	st := newTestStore(t, f)
	p1, err := st.Versions(t.Context(), "k", "", 3)
	if err != nil || p1.Next != "v3" || len(p1.Versions) != 3 {
		t.Fatalf("first page: %+v %v", p1, err)
	}
	p2, err := st.Versions(t.Context(), "k", p1.Next, 3)
	if err != nil || p2.Next != "" {
		t.Fatalf("second page, which ends at another key: %+v %v", p2, err)
	}
	vs := append(p1.Versions, p2.Versions...)
	p3, err := st.Versions(t.Context(), "k", "v1", 3)
	if err != nil || p3.Next != "v0" || len(p3.Versions) != 1 {
		t.Fatalf("a truncated page without markers continues after its last version: %+v %v", p3, err)
	}
	var got []string
	for _, v := range vs {
		got = append(got, v.VersionID)
		if v.Key != "k" {
			t.Errorf("version key = %q, want k", v.Key)
		}
	}
	if want := []string{"v5", "v4", "v3", "v2", "v1"}; !slices.Equal(got, want) {
		t.Errorf("Versions = %q, want %q", got, want)
	}
	if !vs[0].DeleteMarker || !vs[0].IsLatest || vs[1].ETag != `"e4"` || vs[1].Size != 4 {
		t.Errorf("Versions = %+v", vs)
	}
	reqs := f.seen()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3 (one per page)", len(reqs))
	}
	if q := reqs[0].Query; q.Get("prefix") != "pre/k" || q.Get("max-keys") != "3" || q.Has("key-marker") {
		t.Errorf("first page query = %v", q)
	}
	if q := reqs[1].Query; q.Get("prefix") != "pre/k" || q.Get("key-marker") != "pre/k" || q.Get("version-id-marker") != "v3" {
		t.Errorf("second page query = %v", q)
	}
}

func TestMergeNewestFirst(t *testing.T) {
	at := func(s int) time.Time { return time.Date(2026, 1, 1, 0, 0, s, 0, time.UTC) }
	v := func(id string, s int, latest bool) store.Version {
		return store.Version{VersionID: id, LastModified: at(s), IsLatest: latest}
	}
	m := func(id string, s int, latest bool) store.Version {
		x := v(id, s, latest)
		x.DeleteMarker = true
		return x
	}
	tests := []struct {
		name              string
		versions, markers []store.Version
		want              string
	}{
		{"no markers", []store.Version{v("v2", 2, true), v("v1", 1, false)}, nil, "v2 v1"},
		{"only markers", nil, []store.Version{m("m1", 1, true)}, "m1"},
		{"by time", []store.Version{v("v3", 3, true), v("v1", 1, false)}, []store.Version{m("m2", 2, false)}, "v3 m2 v1"},
		{"the latest first whatever its time", []store.Version{v("v2", 5, false), v("v1", 1, false)}, []store.Version{m("m3", 3, true)}, "m3 v2 v1"},
		{"server order within a list", []store.Version{v("v2", 1, false), v("v1", 2, false)}, nil, "v2 v1"},
		{"a version first on a tie", []store.Version{v("v1", 1, false)}, []store.Version{m("m1", 1, false)}, "v1 m1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ids []string
			for _, x := range mergeNewestFirst(tt.versions, tt.markers, func(a, b string) bool { return false }) {
				ids = append(ids, x.VersionID)
			}
			if got := strings.Join(ids, " "); got != tt.want {
				t.Errorf("merged = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestGetReadsBodyETagAndVersion(t *testing.T) {
	f := newFakeS3(t, answer{status: 200, body: "hello", header: map[string]string{
		"ETag": `"e1"`, "x-amz-version-id": "v1", "Last-Modified": "Fri, 02 Jan 2026 03:04:05 GMT", "Content-Type": "text/plain",
	}})
	obj, err := newTestStore(t, f).GetVersion(t.Context(), "k", "v1")
	if err != nil {
		t.Fatal(err)
	}
	if obj.Key != "k" || string(obj.Body) != "hello" || obj.ETag != `"e1"` || obj.VersionID != "v1" || obj.LastModified.IsZero() {
		t.Errorf("GetVersion = %+v", obj)
	}
	r := f.seen()[0]
	if r.Path != "/b/pre/k" || r.Query.Get("versionId") != "v1" {
		t.Errorf("request = %s ?%v", r.Path, r.Query)
	}
}

func TestVersionsKeepTheServersOrderWithinASecond(t *testing.T) {
	// Whole-second times (versitygw, SeaweedFS): e2 re-created the key in
	// the second its delete marker was put, after e1.
	page := `<ListVersionsResult><IsTruncated>false</IsTruncated>
  <Version><Key>pre/k</Key><VersionId>e2</VersionId><IsLatest>true</IsLatest><LastModified>2026-01-01T00:00:05.000Z</LastModified><ETag>"e2"</ETag><Size>2</Size></Version>
  <DeleteMarker><Key>pre/k</Key><VersionId>marker</VersionId><IsLatest>false</IsLatest><LastModified>2026-01-01T00:00:05.000Z</LastModified></DeleteMarker>
  <Version><Key>pre/k</Key><VersionId>e1</VersionId><IsLatest>false</IsLatest><LastModified>2026-01-01T00:00:05.000Z</LastModified><ETag>"e1"</ETag><Size>1</Size></Version>
</ListVersionsResult>`
	st := newTestStore(t, newFakeS3(t, answer{status: 200, body: page}))
	p, err := st.Versions(t.Context(), "k", "", 10)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range p.Versions {
		got = append(got, v.VersionID)
	}
	if want := []string{"e2", "marker", "e1"}; !slices.Equal(got, want) {
		t.Errorf("Versions = %q, want %q", got, want)
	}
	if !p.Versions[1].DeleteMarker || p.Versions[2].ETag != `"e1"` {
		t.Errorf("Versions = %+v", p.Versions)
	}
}

func TestARequestToAServerThatNeverAnswersTimesOutAndIsRetried(t *testing.T) {
	var attempts atomic.Int64
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		attempts.Add(1)
		select { // never answers
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	t.Cleanup(srv.Close)
	defer close(stop)
	client, err := NewClient(t.Context(), Config{
		Endpoint: srv.URL, Region: "us-east-1", AccessKey: "a", SecretKey: "s", PathStyle: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	p := testPolicy
	p.AttemptTimeout = 50 * time.Millisecond
	st := newStore(client, "b", "", p)
	// A context without a deadline: only the per-request bound ends it.
	ctx := context.Background()
	_, err = st.Get(ctx, "k")
	if !errors.Is(err, store.ErrRetryable) {
		t.Fatalf("Get from a server that never answers: %v, want ErrRetryable", err)
	}
	if n := attempts.Load(); n < int64(testPolicy.MaxAttempts) {
		t.Errorf("a read was tried %d times, want %d (retried under the store's rules)", n, testPolicy.MaxAttempts)
	}
	attempts.Store(0)
	_, err = st.PutIfAbsent(ctx, "k", []byte("x"))
	if !errors.Is(err, store.ErrRetryable) {
		t.Fatalf("a conditional write to a server that never answers: %v, want ErrRetryable", err)
	}
	if n := attempts.Load(); n != 1 {
		t.Errorf("a conditional write was tried %d times, want 1 (it may have been applied)", n)
	}
}
