package devserver_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/s3q/s3q/shared/devserver"
)

// The console is at /ui/, named by the banner; a browser opening the
// server's address is sent there, while an API client still gets JSON.
func TestDevServerServesTheConsole(t *testing.T) {
	d := start(t, devserver.Options{})
	if out := d.out.String(); !strings.Contains(out, "console: "+d.url+"/ui/") {
		t.Errorf("banner:\n%s", out)
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(path, accept string) (*http.Response, string) {
		req, _ := http.NewRequest("GET", d.url+path, nil)
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	if resp, _ := get("/", "text/html,application/xhtml+xml,*/*;q=0.8"); resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/ui/" {
		t.Errorf("GET / from a browser: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if resp, body := get("/", "application/json"); resp.StatusCode != http.StatusNotFound || !strings.Contains(body, `"code":"not_found"`) {
		t.Errorf("GET / from a client: %d %s", resp.StatusCode, body)
	}
	resp, body := get("/ui/", "text/html")
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "<h1>Queues</h1>") || resp.Header.Get("Content-Security-Policy") == "" {
		t.Errorf("GET /ui/: %d %s", resp.StatusCode, body)
	}
	if resp, body := get("/ui/events", "text/html"); resp.StatusCode != http.StatusOK || !strings.Contains(body, "<h1>Events</h1>") {
		t.Errorf("GET /ui/events: %d %s", resp.StatusCode, body)
	}
}
