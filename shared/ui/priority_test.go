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
