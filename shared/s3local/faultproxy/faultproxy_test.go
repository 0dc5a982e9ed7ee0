package faultproxy_test

import (
	"crypto/rand"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/s3local"
	"github.com/s3q/s3q/shared/s3local/faultproxy"
	"github.com/s3q/s3q/shared/s3local/s3localtest"
	"github.com/s3q/s3q/shared/store"
)

var servers s3localtest.Servers

func TestMain(m *testing.M) { os.Exit(s3localtest.Main(m, &servers)) }

func eachServer(t *testing.T, f func(t *testing.T, srv *s3local.Server)) {
	t.Run("gofakes3", func(t *testing.T) { f(t, servers.GoFakeS3) })
	t.Run("versitygw", func(t *testing.T) { f(t, servers.VersityGW) })
}

func front(t *testing.T, srv *s3local.Server, opts faultproxy.Options) (*faultproxy.Proxy, store.Store) {
	t.Helper()
	p, st, err := faultproxy.Front(t.Context(), srv, "fp-"+rand.Text()+"/", opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p, st
}

func arm(t *testing.T, p *faultproxy.Proxy, f faultproxy.Fault, pattern string, nth int) *faultproxy.Shot {
	t.Helper()
	s, err := p.Inject(f, pattern, nth)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestProxy(t *testing.T) {
	eachServer(t, func(t *testing.T, srv *s3local.Server) {
		ctx := t.Context()
		t.Run("signed_requests_pass_through_unchanged", func(t *testing.T) {
			p, st := front(t, srv, faultproxy.Options{})
			etag, err := st.PutIfAbsent(ctx, "tasks/a.json", []byte(`{"a":1}`))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.PutIfMatch(ctx, "tasks/a.json", []byte(`{"a":2}`), etag); err != nil {
				t.Fatal(err)
			}
			if _, err := st.PutIfAbsent(ctx, "tasks/a.json", nil); !errors.Is(err, store.ErrPrecondition) {
				t.Errorf("second create: %v", err)
			}
			obj, err := st.Get(ctx, "tasks/a.json")
			if err != nil || string(obj.Body) != `{"a":2}` {
				t.Errorf("Get = %q, %v", obj.Body, err)
			}
			if page, err := st.List(ctx, "tasks/", "", 0); err != nil || len(page.Items) != 1 {
				t.Errorf("List = %v, %v", page, err)
			}
			if _, err := st.Get(ctx, "tasks/none.json"); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("Get of a missing key: %v", err)
			}
			if c := p.Counts(); c.Total() != 0 || c.Requests != 6 {
				t.Errorf("Counts = %v", c)
			}
		})
		t.Run("a_lost_answer_lands_the_write_and_fails_the_caller", func(t *testing.T) {
			p, st := front(t, srv, faultproxy.Options{})
			shot := arm(t, p, faultproxy.LostAnswer, "PUT tasks/* create", 1)
			_, err := st.PutIfAbsent(ctx, "tasks/b.json", []byte(`{"b":1}`))
			if !errors.Is(err, store.ErrRetryable) {
				t.Fatalf("PutIfAbsent = %v, want ErrRetryable", err)
			}
			if !shot.Fired() {
				t.Error("the shot did not fire")
			}
			if obj, err := st.Get(ctx, "tasks/b.json"); err != nil || string(obj.Body) != `{"b":1}` {
				t.Errorf("the write did not land: %q %v", obj.Body, err)
			}
			if c := p.Counts(); c.Injected[faultproxy.LostAnswer] != 1 {
				t.Errorf("Counts = %v", c)
			}
		})
		for _, f := range []faultproxy.Fault{faultproxy.InternalError, faultproxy.Reset} {
			t.Run("a_conditional_write_meeting_"+f.String()+"_fails_retryable_and_writes_nothing", func(t *testing.T) {
				p, st := front(t, srv, faultproxy.Options{})
				arm(t, p, f, "PUT tasks/* create", 1)
				if _, err := st.PutIfAbsent(ctx, "tasks/c.json", []byte(`{}`)); !errors.Is(err, store.ErrRetryable) {
					t.Fatalf("PutIfAbsent = %v, want ErrRetryable", err)
				}
				if _, err := st.Get(ctx, "tasks/c.json"); !errors.Is(err, store.ErrNotFound) {
					t.Errorf("Get = %v, want ErrNotFound", err)
				}
				if c := p.Counts(); c.Injected[f] != 1 {
					t.Errorf("Counts = %v", c)
				}
			})
		}
		t.Run("slow_down_is_retried_by_the_store_and_the_write_lands_once", func(t *testing.T) {
			p, st := front(t, srv, faultproxy.Options{})
			arm(t, p, faultproxy.SlowDown, "PUT tasks/d.json", 1)
			if _, err := st.PutIfAbsent(ctx, "tasks/d.json", []byte(`{}`)); err != nil {
				t.Fatalf("PutIfAbsent = %v", err)
			}
			if c := p.Counts(); c.Injected[faultproxy.SlowDown] != 1 || c.Requests != 2 {
				t.Errorf("Counts = %v", c)
			}
		})
		t.Run("a_shot_fires_on_the_nth_match_only", func(t *testing.T) {
			p, st := front(t, srv, faultproxy.Options{})
			shot := arm(t, p, faultproxy.InternalError, "PUT dedup/* cas", 2)
			etag, err := st.PutIfAbsent(ctx, "dedup/k", []byte("1"))
			if err != nil {
				t.Fatal(err)
			}
			if etag, err = st.PutIfMatch(ctx, "dedup/k", []byte("2"), etag); err != nil {
				t.Fatalf("first CAS: %v", err)
			}
			if _, err := st.PutIfMatch(ctx, "dedup/k", []byte("3"), etag); !errors.Is(err, store.ErrRetryable) {
				t.Fatalf("second CAS = %v, want ErrRetryable", err)
			}
			if _, err := st.PutIfMatch(ctx, "dedup/k", []byte("3"), etag); err != nil {
				t.Fatalf("third CAS: %v", err)
			}
			if !shot.Fired() || shot.Seen() != 2 {
				t.Errorf("fired %v after %d matches", shot.Fired(), shot.Seen())
			}
		})
		t.Run("a_trace_records_each_request_with_its_condition_and_fault", func(t *testing.T) {
			p, st := front(t, srv, faultproxy.Options{})
			arm(t, p, faultproxy.InternalError, "DELETE", 1)
			p.StartTrace()
			etag, _ := st.PutIfAbsent(ctx, "a/b", []byte("1"))
			_, _ = st.PutIfMatch(ctx, "a/b", []byte("2"), etag)
			_, _ = st.Put(ctx, "a/c", []byte("3"))
			_, _ = st.List(ctx, "a/", "", 0)
			_ = st.Delete(ctx, "a/c") // a 500, then the store's retry
			got := p.StopTrace()
			want := []faultproxy.Entry{
				{Method: "PUT", Key: "a/b", Cond: "create"}, {Method: "PUT", Key: "a/b", Cond: "cas"},
				{Method: "PUT", Key: "a/c", Cond: "plain"}, {Method: "GET", Cond: "plain"},
				{Method: "DELETE", Key: "a/c", Cond: "plain", Fault: faultproxy.InternalError}, {Method: "DELETE", Key: "a/c", Cond: "plain"},
			}
			if len(got) != len(want) {
				t.Fatalf("trace = %v, want %v", got, want)
			}
			for i := range want {
				if got[i] != want[i] {
					t.Errorf("trace[%d] = %+v, want %+v", i, got[i], want[i])
				}
			}
			if !got[0].IsConditionalWrite() || got[2].IsConditionalWrite() || !got[2].IsWrite() || got[3].IsWrite() || !got[4].IsWrite() {
				t.Error("IsConditionalWrite or IsWrite is wrong")
			}
			if got[1].Pattern() != "PUT a/b cas" {
				t.Errorf("Pattern = %q", got[1].Pattern())
			}
			if p.StopTrace() != nil {
				t.Error("a stopped trace still records")
			}
		})
		t.Run("only_limits_the_random_faults", func(t *testing.T) {
			only, err := faultproxy.ParseMatch("PUT x/* cas")
			if err != nil {
				t.Fatal(err)
			}
			p, st := front(t, srv, faultproxy.Options{Rates: faultproxy.Rates{InternalError: 1}, Only: &only})
			etag, err := st.PutIfAbsent(ctx, "x/1", []byte("1"))
			if err != nil {
				t.Fatalf("a create met a fault: %v", err)
			}
			if _, err := st.PutIfMatch(ctx, "x/1", []byte("2"), etag); !errors.Is(err, store.ErrRetryable) {
				t.Errorf("PutIfMatch = %v, want ErrRetryable", err)
			}
			if c := p.Counts(); c.Injected[faultproxy.InternalError] != 1 {
				t.Errorf("Counts = %v", c)
			}
		})
		t.Run("disarm_removes_shots_not_fired", func(t *testing.T) {
			p, st := front(t, srv, faultproxy.Options{})
			shot := arm(t, p, faultproxy.Reset, "PUT", 1)
			p.Disarm()
			if _, err := st.Put(ctx, "k", []byte("v")); err != nil || shot.Fired() {
				t.Errorf("Put = %v, fired %v", err, shot.Fired())
			}
		})
		t.Run("latency_delays_and_forwards", func(t *testing.T) {
			p, st := front(t, srv, faultproxy.Options{Rates: faultproxy.Rates{Latency: 1, LatencyMax: 50 * time.Millisecond}})
			if _, err := st.Put(ctx, "x", []byte("x")); err != nil {
				t.Fatal(err)
			}
			if obj, err := st.Get(ctx, "x"); err != nil || string(obj.Body) != "x" {
				t.Errorf("Get = %q, %v", obj.Body, err)
			}
			if c := p.Counts(); c.Injected[faultproxy.Latency] != 2 {
				t.Errorf("Counts = %v", c)
			}
		})
	})
}

// TestProxyRatesAreSeeded sends the same sequence of unsigned requests
// through two proxies with one seed and checks they inject the same faults,
// near the set rates.
func TestProxyRatesAreSeeded(t *testing.T) {
	rates := faultproxy.Rates{SlowDown: 0.1, InternalError: 0.1, Reset: 0.1, LostAnswer: 0.1}
	var counts [2]faultproxy.Counts
	for i := range counts {
		p, err := faultproxy.Start(faultproxy.Options{Target: servers.GoFakeS3.Endpoint, Rates: rates, Seed: 7})
		if err != nil {
			t.Fatal(err)
		}
		client := &http.Client{Timeout: 10 * time.Second}
		var codes = map[int]int{}
		for range 400 {
			resp, err := client.Get(p.URL + "/" + servers.GoFakeS3.Bucket + "/nothing-here")
			if err != nil {
				codes[-1]++
				continue
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			codes[resp.StatusCode]++
			if resp.StatusCode == 503 && !strings.Contains(string(b), "<Code>SlowDown</Code>") {
				t.Errorf("503 body: %s", b)
			}
		}
		p.Close()
		counts[i] = p.Counts()
		c := counts[i]
		if c.Requests < 400 || codes[503] != int(c.Injected[faultproxy.SlowDown]) || codes[500] != int(c.Injected[faultproxy.InternalError]) {
			t.Errorf("codes %v, counts %v", codes, c)
		}
		for _, f := range []faultproxy.Fault{faultproxy.SlowDown, faultproxy.InternalError, faultproxy.Reset, faultproxy.LostAnswer} {
			if n := c.Injected[f]; n < 15 || n > 80 {
				t.Errorf("%v injected %d times in %d requests at rate 0.1", f, n, c.Requests)
			}
		}
	}
	if counts[0] != counts[1] {
		t.Errorf("one seed, two runs: %v and %v", counts[0], counts[1])
	}
}

func TestParseMatch(t *testing.T) {
	for _, bad := range []string{"PUT a b c", "PUT tasks/* maybe"} {
		if _, err := faultproxy.ParseMatch(bad); err == nil {
			t.Errorf("ParseMatch(%q) accepted", bad)
		}
	}
	if _, err := faultproxy.Mix("sometimes", 0.1); err == nil {
		t.Error("Mix accepted an unknown mix")
	}
	if _, err := faultproxy.Start(faultproxy.Options{Target: "http://127.0.0.1:1", Rates: faultproxy.Mixed(1.5)}); err == nil {
		t.Error("Start accepted rates over 1")
	}
}
