package devserver_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/s3q/s3q/shared/devserver"
)

// The dev server's API has no authentication: a web page the developer
// visits must not reach it. A browser's cross-site request (a text/plain
// POST needs no preflight) and a DNS-rebound page (same origin, foreign
// Host) are refused with 403 before any function runs; the Host is
// checked for every request, browser headers or not.
func TestDevServerRefusesCrossSiteAPIRequests(t *testing.T) {
	d := start(t, devserver.Options{})
	send := func(method, path, body string, hdr map[string]string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, d.url+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range hdr {
			if k == "Host" {
				req.Host = v
				continue
			}
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	submit := `{"task_type":"evil","input":{}}`
	for name, hdr := range map[string]map[string]string{
		"foreign Origin":           {"Origin": "https://evil.example", "Content-Type": "text/plain"},
		"null Origin":              {"Origin": "null", "Content-Type": "text/plain"},
		"cross-site fetch":         {"Sec-Fetch-Site": "cross-site", "Content-Type": "text/plain"},
		"DNS rebinding":            {"Host": "evil.example:8080", "Sec-Fetch-Site": "same-origin"},
		"DNS rebinding, Origin ok": {"Host": "evil.example:8080", "Origin": "http://evil.example:8080"},
	} {
		code, body := send("POST", "/queues/default/tasks", submit, hdr)
		if code != http.StatusForbidden || !strings.Contains(body, `"code":"forbidden"`) || !strings.Contains(body, `"field":`) {
			t.Errorf("%s: %d %s, want 403 forbidden with a field", name, code, body)
		}
	}
	if code, body := send("GET", "/queues/default/tasks?status=pending", "", nil); code != http.StatusOK || strings.Contains(body, `"evil"`) {
		t.Errorf("a refused submit landed: %d %s", code, body)
	}
	// The console's own origin, and clients that are not browsers, pass.
	if code, body := send("POST", "/queues/default/tasks", submit, map[string]string{"Origin": d.url, "Sec-Fetch-Site": "same-origin"}); code != http.StatusCreated && code != http.StatusOK {
		t.Errorf("same-origin submit: %d %s", code, body)
	}
	// A request naming a foreign Host is refused even without browser
	// headers (an older browser on a rebound name sends neither); an IP
	// address cannot be rebound and passes.
	for _, path := range []string{"/queues", "/events", "/"} {
		if code, body := send("GET", path, "", map[string]string{"Host": "devbox.internal:8080"}); code != http.StatusForbidden || !strings.Contains(body, `"field":"Host"`) {
			t.Errorf("GET %s naming another Host, no browser headers: %d %s, want 403 naming Host", path, code, body)
		}
	}
	if code, body := send("GET", "/queues", "", map[string]string{"Host": "10.1.2.3:8080"}); code != http.StatusOK {
		t.Errorf("a client naming an IP address: %d %s", code, body)
	}
	// A name given with --host (Options.Hosts) passes.
	named := start(t, devserver.Options{Hosts: []string{"devbox.internal"}})
	req, _ := http.NewRequest("GET", named.url+"/queues", nil)
	req.Host = "devbox.internal:8080"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("a Host given in Options.Hosts: %d", resp.StatusCode)
	}
}
