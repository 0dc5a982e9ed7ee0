package ui

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/s3q/s3q/shared/client"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/wire"
)

// A bulk action changes at most the tasks its confirmation page counted:
// tasks submitted after the page was shown are not cancelled by a click
// on "Cancel 2 tasks".
func TestABulkActionChangesNoMoreThanItsConfirmationSaid(t *testing.T) {
	srv, apiURL := newTestConsole(t)
	ctx := context.Background()
	c, _ := client.New(ctx, apiURL, client.Options{})
	submit := func(n int) {
		for i := 0; i < n; i++ {
			if _, err := c.Submit(ctx, client.SubmitRequest{SubmitRequest: wire.SubmitRequest{TaskType: "hello"}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	submit(2)
	resp, body := get(t, srv.URL+"/ui/queues/default/bulk?op=cancel&status=pending")
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "Cancel 2 tasks") {
		t.Fatalf("confirmation page: %d\n%s", resp.StatusCode, body)
	}
	var cookie *http.Cookie
	for _, ck := range resp.Cookies() {
		if ck.Name == csrfCookie {
			cookie = ck
		}
	}
	form := url.Values{}
	form.Set("csrf", "")
	for _, m := range regexp.MustCompile(`<input type="hidden" name="([a-z_]+)" value="([^"]*)">`).FindAllStringSubmatch(body, -1) {
		form.Set(m[1], m[2])
	}
	if cookie == nil || form.Get("csrf") == "" {
		t.Fatalf("no cookie or token: %v %v", cookie, form)
	}
	submit(5) // after the page was shown
	req, _ := http.NewRequest("POST", srv.URL+"/ui/queues/default/bulk", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(cookie)
	res, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("the confirmed POST: %d", res.StatusCode)
	}
	left, err := c.List(ctx, client.ListRequest{Queue: "default", Status: queue.StatusPending})
	if err != nil {
		t.Fatal(err)
	}
	if len(left.Tasks) != 5 {
		t.Errorf("%d pending tasks left of 7, want 5: the click said 2", len(left.Tasks))
	}
}
