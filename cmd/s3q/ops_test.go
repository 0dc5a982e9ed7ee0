package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/s3q/s3q/shared/queue"
)

// cliIn is cli with stdin: the answers to a prompt.
func cliIn(t *testing.T, url, stdin string, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), append(append([]string{}, args...), "--url", url), strings.NewReader(stdin), &out, &errOut)
	return out.String(), errOut.String(), code
}

// submitN submits n tasks of type tt to queue q and returns their ids.
func submitN(t *testing.T, url, q, tt string, n int) []string {
	t.Helper()
	var ids []string
	for i := 0; i < n; i++ {
		out, errOut, code := cli(t, url, "submit", "-q", q, "-t", tt, "-o", "json")
		var res struct{ Task struct{ ID string } }
		if code != 0 || json.Unmarshal([]byte(out), &res) != nil {
			t.Fatalf("submit (%d): %s %s", code, out, errOut)
		}
		ids = append(ids, res.Task.ID)
	}
	return ids
}

func TestQueueOperationCommands(t *testing.T) {
	url := apiURL(t)
	ids := submitN(t, url, "ops", "a", 3)
	submitN(t, url, "ops", "b", 2)

	// pause and resume, seen in show, list and stats.
	if out, errOut, code := cli(t, url, "queue", "pause", "ops"); code != 0 || !strings.Contains(out, "queue ops is paused since") {
		t.Fatalf("pause (%d): %s %s", code, out, errOut)
	}
	if out, _, code := cli(t, url, "queue", "list"); code != 0 || !strings.Contains(out, "ops    paused  5 ") {
		t.Errorf("queue list of a paused queue (%d): %s", code, out)
	}
	out, _, code := cli(t, url, "stats", "-q", "ops")
	for _, want := range []string{"queue:", "ops (paused since", "pending or running:  5 (0 delayed)", "oldest pending:", "last hour:           0 failed, 0 cancelled, 0 expired"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("stats (%d) lacks %q:\n%s", code, want, out)
		}
	}
	if out, _, code := cli(t, url, "queue", "resume", "ops"); code != 0 || !strings.Contains(out, "queue ops is active") {
		t.Errorf("resume (%d): %s", code, out)
	}

	// bulk: a dry run lists, the run changes, a re-run finds nothing.
	out, _, code = cli(t, url, "bulk", "cancel", "-q", "ops", "--type", "a", "--dry-run")
	if code != 0 || !strings.Contains(out, "would have 3 tasks cancelled in queue ops (dry run: nothing changed)") || !strings.Contains(out, ids[0]) {
		t.Errorf("bulk cancel --dry-run (%d): %s", code, out)
	}
	out, errOut, code := cli(t, url, "bulk", "cancel", "-q", "ops", "--type", "a", "--limit", "2", "-o", "json")
	var tot bulkTotal
	if code != 0 || json.Unmarshal([]byte(out), &tot) != nil || tot.Changed != 3 || tot.Calls != 2 {
		t.Errorf("bulk cancel in calls of 2 (%d): %s %s", code, out, errOut)
	}
	if out, _, code := cli(t, url, "bulk", "cancel", "-q", "ops", "--type", "a"); code != 0 || !strings.Contains(out, "cancelled 0 tasks") {
		t.Errorf("bulk cancel again (%d): %s", code, out)
	}
	if out, _, code := cli(t, url, "bulk", "retry", "-q", "ops", "--status", "cancelled"); code != 0 || !strings.Contains(out, "retried 3 tasks in queue ops") {
		t.Errorf("bulk retry (%d): %s", code, out)
	}
	if _, errOut, code := cli(t, url, "bulk", "delete", "-q", "ops"); code != 2 || !strings.Contains(errOut, "s3q purge deletes") {
		t.Errorf("bulk delete (%d): %s", code, errOut)
	}
	// A 400 of the API: its exit code is the CLI's to choose (docs/cli.md).
	if _, errOut, code := cli(t, url, "bulk", "expire", "-q", "ops", "--status", "failed"); code == 0 || !strings.Contains(errOut, "status") {
		t.Errorf("bulk expire of failed tasks (%d): %s", code, errOut)
	}

	// purge asks, and does nothing unless told yes.
	if _, errOut, code := cli(t, url, "purge", "-q", "ops"); code != 2 || !strings.Contains(errOut, "needs --status") {
		t.Errorf("purge without --status (%d): %s", code, errOut)
	}
	_, errOut, code = cliIn(t, url, "n\n", "purge", "-q", "ops", "--status", "pending", "--type", "b")
	if code == 0 || !strings.Contains(errOut, "Purge 2 pending tasks of type b of queue ops? They cannot be brought back. [y/N]") || !strings.Contains(errOut, "nothing purged") {
		t.Errorf("purge answered no (%d): %s", code, errOut)
	}
	if out, _, _ := cli(t, url, "stats", "-q", "ops", "-o", "json"); !strings.Contains(out, `"live": 5`) {
		t.Errorf("a purge answered no changed something: %s", out)
	}
	out, errOut, code = cliIn(t, url, "y\n", "purge", "-q", "ops", "--status", "pending", "--type", "b")
	if code != 0 || !strings.Contains(out, "purged 2 tasks in queue ops") {
		t.Errorf("purge answered yes (%d): %s %s", code, out, errOut)
	}
	if out, errOut, code := cli(t, url, "purge", "-q", "ops", "--status", "pending,completed", "--yes"); code != 0 || !strings.Contains(out, "purged 3 tasks") {
		t.Errorf("purge --yes (%d): %s %s", code, out, errOut)
	}
	if out, _, code := cli(t, url, "stats", "-q", "ops", "-o", "json"); code != 0 || !strings.Contains(out, `"live": 0`) {
		t.Errorf("stats after the purges (%d): %s", code, out)
	}
	if out, errOut, code := cli(t, url, "queue", "delete", "ops"); code != 0 {
		t.Errorf("delete of the purged queue (%d): %s %s", code, out, errOut)
	}
}

// At 20,000 pending tasks the live count stops at its cap: only it is a
// lower bound ("10000+"); the others are exact, and completed, unknown
// then, is said to be not counted rather than shown as 0+.
func TestStatsMarksOnlyTheCappedCountsAsLowerBounds(t *testing.T) {
	var out bytes.Buffer
	printStats(&out, queue.QueueStats{Queue: "default", Counts: queue.QueueCounts{Live: 10000, AtLeast: true, Capped: []string{"live"}, Failed: 2}})
	got := out.String()
	for _, want := range []string{"10000+ (0+ delayed)", "failed:              2\n", "cancelled:           0\n", "completed:           not counted while over 10000 tasks are live"} {
		if !strings.Contains(got, want) {
			t.Errorf("stats do not say %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "0+\n") {
		t.Errorf("an exact count shown as a lower bound:\n%s", got)
	}
}
