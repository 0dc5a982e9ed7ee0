package devserver_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/s3q/s3q/shared/devserver"
)

// TestGatewayConcurrentAnswersBelongToTheirRequests fires many concurrent
// GETs of large and small tasks through the dev server and checks that
// every answer is the task its request asked for: the gateway must never
// hand one request another's output (issue 9, item 5).
func TestGatewayConcurrentAnswersBelongToTheirRequests(t *testing.T) {
	const (
		tasks   = 24
		clients = 16
		each    = 60
	)
	d := start(t, devserver.Options{})
	ids := make([]string, tasks)
	pads := make([]string, tasks)
	for i := range ids {
		n := 16 // small answers
		if i%2 == 0 {
			n = 100_000 + i*1000 // large answers, each of its own size
		}
		pads[i] = fmt.Sprintf("%03d:%s", i, strings.Repeat(string(rune('a'+i%26)), n))
		body, _ := json.Marshal(map[string]any{"task_type": "t", "input": map[string]any{"pad": pads[i]}})
		status, m := call(t, "POST", d.url+"/queues/default/tasks", string(body))
		if status != 201 {
			t.Fatalf("submit %d: %d %v", i, status, m)
		}
		ids[i], _ = field(m, "task", "id").(string)
	}

	var wg sync.WaitGroup
	errs := make(chan error, clients*each)
	for c := range clients {
		wg.Go(func() {
			for k := range each {
				i := (c*7 + k*5) % tasks
				if err := getAndCheck(d.url, ids[i], pads[i]); err != nil {
					errs <- fmt.Errorf("client %d request %d: %w", c, k, err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	n := 0
	for err := range errs {
		if n++; n <= 5 {
			t.Error(err)
		}
	}
	if n > 5 {
		t.Errorf("... %d wrong answers in all", n)
	}
}

// getAndCheck GETs one task and checks that the answer is that task with
// that input.
func getAndCheck(base, id, pad string) error {
	resp, err := http.Get(base + "/queues/default/tasks/" + id)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != 200 {
		return fmt.Errorf("GET %s: %d %.200s", id, resp.StatusCode, b)
	}
	var got struct {
		Task struct {
			ID    string `json:"id"`
			Input struct {
				Pad string `json:"pad"`
			} `json:"input"`
		} `json:"task"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		return fmt.Errorf("GET %s: answer is not JSON: %v", id, err)
	}
	if got.Task.ID != id || got.Task.Input.Pad != pad {
		return fmt.Errorf("GET %s: answered task %s with an input of %d bytes, want %d", id, got.Task.ID, len(got.Task.Input.Pad), len(pad))
	}
	return nil
}
