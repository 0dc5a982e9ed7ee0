package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
)

// answerAfter answers a prompt with "y" after running before: what
// happens while the operator reads the question.
type answerAfter struct {
	before func()
	r      io.Reader
}

func (a *answerAfter) Read(p []byte) (int, error) {
	if a.before != nil {
		a.before()
		a.before = nil
		a.r = strings.NewReader("y\n")
	}
	return a.r.Read(p)
}

// A purge deletes at most the tasks its question counted: tasks submitted
// while the operator read "Purge 2 pending tasks ...? [y/N]" are kept.
func TestPurgeDeletesNoMoreThanItsQuestionCounted(t *testing.T) {
	url := apiURL(t)
	submitN(t, url, "bound", "a", 2)
	var out, errOut bytes.Buffer
	in := &answerAfter{before: func() { submitN(t, url, "bound", "a", 4) }}
	code := run(context.Background(), []string{"purge", "-q", "bound", "--status", "pending", "--url", url}, in, &out, &errOut)
	if code != 0 || !strings.Contains(errOut.String(), "Purge 2 pending tasks of queue bound?") {
		t.Fatalf("purge (%d): %s %s", code, out.String(), errOut.String())
	}
	st, _, code := cli(t, url, "stats", "-q", "bound")
	if code != 0 || !strings.Contains(st, "pending or running:  4 ") {
		t.Errorf("after confirming the purge of 2 of them, want 4 tasks left (%d):\n%s\n%s", code, st, out.String())
	}
}
