package main

import (
	"strings"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/queue"
)

func TestSubmitWithAnIDTwiceReplaysTheTask(t *testing.T) {
	url := apiURL(t)
	id := queue.NewID(time.Now())
	out, errOut, code := cli(t, url, "submit", "--id", id, "-t", "once", "-i", `{"n":1}`)
	if code != 0 || !strings.Contains(out, id) || strings.Contains(out, "replayed") {
		t.Fatalf("first (%d): %s %s", code, out, errOut)
	}
	out, errOut, code = cli(t, url, "submit", "--id", id, "-t", "once", "-i", `{"n":1}`)
	if code != 0 || !strings.Contains(out, "replayed") || !strings.Contains(out, id) {
		t.Fatalf("again (%d): %s %s", code, out, errOut)
	}
	_, errOut, code = cli(t, url, "submit", "--id", id, "-t", "once", "-i", `{"n":2}`)
	if code != 4 || !strings.Contains(errOut, "conflict") || !strings.Contains(errOut, "id") {
		t.Fatalf("another request with the id (%d): %s", code, errOut)
	}
	_, errOut, code = cli(t, url, "submit", "--id", "../etc", "-t", "once")
	if code != 2 || !strings.Contains(errOut, "invalid_input") {
		t.Fatalf("a bad id (%d): %s", code, errOut)
	}
}
