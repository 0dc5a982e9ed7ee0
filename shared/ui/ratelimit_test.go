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
