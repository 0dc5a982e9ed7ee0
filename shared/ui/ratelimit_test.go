package ui

import (
	"context"
	"strings"
	"testing"

	"github.com/s3q/s3q/shared/client"
)

// The queue page shows the queue's rate limit, or none.
func TestTheQueuePageShowsTheRateLimit(t *testing.T) {
	srv, apiURL := newTestConsole(t)
	c, err := client.New(context.Background(), apiURL, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rate, burst := 2.5, 4
	if _, _, err := c.DeclareQueue(context.Background(), "paced", client.QueueRequest{MaxPerSecond: &rate, Burst: &burst}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.DeclareQueue(context.Background(), "free", client.QueueRequest{}); err != nil {
		t.Fatal(err)
	}
	_, body := get(t, srv.URL+"/ui/queues/paced")
	if !strings.Contains(body, `<dd id="rate-limit">2.5 tasks started a second, bursts of 4</dd>`) {
		t.Fatalf("the queue page does not show the rate limit")
	}
	_, body = get(t, srv.URL+"/ui/queues/free")
	if !strings.Contains(body, `<dd id="rate-limit">none</dd>`) {
		t.Fatalf("the queue page of a queue without a limit does not say none")
	}
}

// The queues page has a rate limit column: the rate and burst (the
// default burst filled in), none for a queue without one.
func TestTheQueuesPageShowsEachRateLimit(t *testing.T) {
	srv, apiURL := newTestConsole(t)
	c, err := client.New(context.Background(), apiURL, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rate, burst, slow := 10.0, 5, 2.5
	for name, req := range map[string]client.QueueRequest{
		"paced": {MaxPerSecond: &rate, Burst: &burst},
		"slow":  {MaxPerSecond: &slow},
		"free":  {},
	} {
		if _, _, err := c.DeclareQueue(context.Background(), name, req); err != nil {
			t.Fatal(err)
		}
	}
	_, body := get(t, srv.URL+"/ui/")
	if !strings.Contains(body, `<th scope="col">Rate limit</th>`) {
		t.Fatalf("the queues page has no rate limit column")
	}
	for name, want := range map[string]string{
		"paced": `<td class="rate"><span title="10 tasks started a second, bursts of 5">10/s, burst 5</span></td>`,
		"slow":  `<td class="rate"><span title="2.5 tasks started a second, bursts of 3">2.5/s, burst 3</span></td>`,
		"free":  `<td class="rate"><span class="muted">none</span></td>`,
	} {
		i := strings.Index(body, `>`+name+`</a>`)
		if i < 0 {
			t.Fatalf("no row for %s", name)
		}
		row := body[i:]
		row = row[:strings.Index(row, "</tr>")]
		if !strings.Contains(row, want) {
			t.Errorf("%s's row lacks %s:\n%s", name, want, row)
		}
	}
}
