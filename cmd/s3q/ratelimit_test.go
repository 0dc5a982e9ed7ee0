package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// s3q queue create/update --max-per-second --burst declare a queue's rate
// limit, show prints it, --no-rate-limit removes it, a bad value is a 400
// naming the field (exit 2), and --help documents the flags.
func TestQueueRateLimitFlags(t *testing.T) {
	url := apiURL(t)
	out, errOut, code := cli(t, url, "queue", "create", "hooks", "--max-per-second", "0.5", "--priority", "2")
	if code != 0 || !strings.Contains(out, "rate_limit:") || !strings.Contains(out, "0.5/s, burst 1") || !strings.Contains(out, "priority:    2") {
		t.Fatalf("create (%d): %s %s", code, out, errOut)
	}
	// The same create again is a no-op; another rate is a conflict naming the update.
	if _, errOut, code := cli(t, url, "queue", "create", "hooks", "--max-per-second", "0.5", "--priority", "2"); code != 0 {
		t.Errorf("same create again (%d): %s", code, errOut)
	}
	if _, errOut, code := cli(t, url, "queue", "create", "hooks", "--max-per-second", "10", "--priority", "2"); code != 4 ||
		!strings.Contains(errOut, "rate limit 0.5/s, burst 1, not 10/s, burst 10") || !strings.Contains(errOut, "--max-per-second 10") {
		t.Errorf("create with another rate (%d): %s", code, errOut)
	}
	out, errOut, code = cli(t, url, "queue", "update", "hooks", "--max-per-second", "10", "--burst", "4", "-o", "json")
	var got struct {
		Queue struct {
			MaxPerSecond *float64 `json:"max_per_second"`
			Burst        *int     `json:"burst"`
			Priority     int      `json:"priority"`
		} `json:"queue"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil || got.Queue.MaxPerSecond == nil || *got.Queue.MaxPerSecond != 10 ||
		got.Queue.Burst == nil || *got.Queue.Burst != 4 || got.Queue.Priority != 2 {
		t.Fatalf("update (%d): %s %s", code, out, errOut)
	}
	if out, errOut, code := cli(t, url, "stats", "-q", "hooks"); code != 0 || !strings.Contains(out, "rate limit:") || !strings.Contains(out, "10/s, burst 4") {
		t.Errorf("stats (%d): %s %s", code, out, errOut)
	}
	for _, c := range []struct{ flag, value, field string }{
		{"--max-per-second", "0", "max_per_second"},
		{"--max-per-second", "-1", "max_per_second"},
		{"--max-per-second", "5000", "max_per_second"},
		{"--burst", "0", "burst"},
	} {
		if _, errOut, code := cli(t, url, "queue", "update", "hooks", c.flag, c.value); code != 2 || !strings.Contains(errOut, c.field) {
			t.Errorf("update %s %s (%d): %s", c.flag, c.value, code, errOut)
		}
	}
	out, errOut, code = cli(t, url, "queue", "update", "hooks", "--no-rate-limit", "-o", "json")
	got.Queue.MaxPerSecond, got.Queue.Burst = nil, nil
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil || got.Queue.MaxPerSecond != nil || got.Queue.Burst != nil || got.Queue.Priority != 2 {
		t.Fatalf("update --no-rate-limit (%d): %s %s", code, out, errOut)
	}
	out, _, _ = cli(t, url, "queue", "--help")
	for _, want := range []string{"--max-per-second", "--burst", "--no-rate-limit", "Retry-After"} {
		if !strings.Contains(out, want) {
			t.Errorf("queue --help does not mention %s", want)
		}
	}
}
