package ui

import (
	"context"
	"strings"
	"testing"

	"github.com/s3q/s3q/shared/client"
	"github.com/s3q/s3q/shared/wire"
)

// The queue page shows each task's priority and filters by it.
func TestTheQueuePageShowsAndFiltersPriorities(t *testing.T) {
	srv, apiURL := newTestConsole(t)
	c, err := client.New(context.Background(), apiURL, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ids := map[int]string{}
	for _, p := range []int{1, 5} {
		res, err := c.Submit(context.Background(), client.SubmitRequest{SubmitRequest: wire.SubmitRequest{TaskType: "t", Priority: p}})
		if err != nil {
			t.Fatal(err)
		}
		ids[p] = res.Task.ID
	}
	_, body := get(t, srv.URL+"/ui/queues/default")
	if !strings.Contains(body, `<th scope="col" class="num">Priority</th>`) || !strings.Contains(body, `<td class="num">5</td>`) || !strings.Contains(body, `<td class="num">1</td>`) {
		t.Fatalf("the queue page shows no priority column with both tasks")
	}
	_, body = get(t, srv.URL+"/ui/queues/default?priority=1")
	if !strings.Contains(body, ids[1]) || strings.Contains(body, ids[5]) {
		t.Fatalf("priority=1 does not show only the priority-1 task")
	}
	if !strings.Contains(body, `<option value="1" selected>`) || !strings.Contains(body, "at priority 1") {
		t.Fatalf("the filter does not show what it filters by")
	}
}

// A priority filter that is none (0, -1, a word, a number too big) is the
// API's 400 naming it, never every task shown as if unfiltered.
func TestTheQueuePageRefusesAPriorityFilterThatIsNone(t *testing.T) {
	srv, apiURL := newTestConsole(t)
	c, err := client.New(context.Background(), apiURL, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Submit(context.Background(), client.SubmitRequest{SubmitRequest: wire.SubmitRequest{TaskType: "t", Priority: 2}})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"0", "-0", "-1", "6", "high", "99999999999999999999"} {
		resp, body := get(t, srv.URL+"/ui/queues/default?priority="+p)
		if resp.StatusCode != 400 || strings.Contains(body, res.Task.ID) || !strings.Contains(body, "priority") {
			t.Errorf("?priority=%s: %d, shows the task: %v; want a 400 about the priority", p, resp.StatusCode, strings.Contains(body, res.Task.ID))
		}
	}
}
