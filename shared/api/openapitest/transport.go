package openapitest

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

	"github.com/s3q/s3q/shared/api"
)

// Transport is an http.RoundTripper that checks every answer of the API
// it carries against the document (Check), failing T: what a test that
// talks to a running server (s3q dev, the console's own calls) sees is
// validated as the API tests' answers are. Answers that are not the
// API's (the console's pages: no route matches and the body is not
// JSON), and requests to another host than Host when it is set, pass
// unchecked.
type Transport struct {
	T testing.TB
	// Host (host:port) is the API's. Defaults to any host.
	Host string
	// Next sends the requests. Defaults to http.DefaultTransport as it
	// was when the first request was sent.
	Next http.RoundTripper
}

// RoundTrip sends r and checks its answer.
func (tr *Transport) RoundTrip(r *http.Request) (*http.Response, error) {
	next := tr.Next
	if next == nil {
		next = http.DefaultTransport
		tr.Next = next
	}
	if tr.Host != "" && r.URL.Host != tr.Host {
		return next.RoundTrip(r)
	}
	var reqBody []byte
	if r.Body != nil {
		var err error
		if reqBody, err = io.ReadAll(r.Body); err != nil {
			return nil, err
		}
		r.Body.Close()
		r = r.Clone(r.Context())
		r.Body = io.NopCloser(bytes.NewReader(reqBody))
	}
	resp, err := next.RoundTrip(r)
	if err != nil {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return resp, nil // cut off: the caller sees the error's effect; nothing whole to check
	}
	_, routed := api.Match(r.Method, r.URL.Path)
	if !routed && !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		return resp, nil // not the API's answer (a console page)
	}
	req := r.Clone(r.Context())
	req.RequestURI = ""
	Check(tr.T, req, reqBody, resp.StatusCode, resp.Header, body)
	return resp, nil
}

// Proxy starts a reverse proxy to the server at target (a base URL such
// as http://127.0.0.1:8080) that checks every answer of the API through
// it (see Transport), until t ends, and returns its base URL: a test
// hands it to a program in place of target to check what that program
// is answered.
func Proxy(t testing.TB, target string) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatalf("openapitest: proxy to %q: %v", target, err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.Transport = &Transport{T: t, Host: u.Host}
	rp.FlushInterval = -1
	srv := httptest.NewServer(rp)
	t.Cleanup(srv.Close)
	return srv.URL
}

// Handler returns h with every answer it gives checked against the
// document (Check), failing t: a test serving the API with
// httptest.NewServer(Handler(t, api.New(...))) validates what its
// clients are answered. The answer is sent once h has finished.
func Handler(t testing.TB, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var reqBody []byte
		if r.Body != nil {
			reqBody, _ = io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(reqBody))
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		req := r.Clone(r.Context())
		req.Body = io.NopCloser(bytes.NewReader(reqBody))
		Check(t, req, reqBody, rec.Code, rec.Header(), rec.Body.Bytes())
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes())
	})
}
