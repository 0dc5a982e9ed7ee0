package main

import (
	"strings"
	"testing"
)

// s3q queue list shows each queue's rate limit in a RATE_LIMIT column:
// max_per_second and the burst (its default filled in), one word, - for
// none.
func TestQueueListShowsTheRateLimit(t *testing.T) {
	url := apiURL(t)
	for _, args := range [][]string{
		{"queue", "create", "hooks", "--max-per-second", "10", "--burst", "5"},
		{"queue", "create", "slow", "--max-per-second", "2.5"},
		{"queue", "create", "plain", "--max-concurrency", "3"},
	} {
		if _, errOut, code := cli(t, url, args...); code != 0 {
			t.Fatalf("%v (%d): %s", args, code, errOut)
		}
	}
	out, errOut, code := cli(t, url, "queue", "list")
	if code != 0 {
		t.Fatalf("queue list (%d): %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	header := strings.Fields(lines[0])
	col := -1
	for i, h := range header {
		if h == "RATE_LIMIT" {
			col = i
		}
	}
	if col < 0 {
		t.Fatalf("no RATE_LIMIT column:\n%s", out)
	}
	want := map[string]string{"hooks": "10/s,burst=5", "slow": "2.5/s,burst=3", "plain": "-"}
	for _, line := range lines[1:] {
		f := strings.Fields(line)
		if len(f) != len(header) {
			t.Fatalf("a row of %d cells under %d headers:\n%s", len(f), len(header), out)
		}
		if w, ok := want[f[0]]; ok {
			if f[col] != w {
				t.Errorf("%s: RATE_LIMIT %q, want %q\n%s", f[0], f[col], w, out)
			}
			delete(want, f[0])
		}
	}
	if len(want) != 0 {
		t.Fatalf("queues missing from the list: %v\n%s", want, out)
	}
}
