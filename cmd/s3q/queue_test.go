package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
)

func TestQueueCommandsAndTheQueueFlag(t *testing.T) {
	url := apiURL(t)
	out, errOut, code := cli(t, url, "queue", "create", "emails", "--ttl", "1h", "--max-attempts", "5", "--max-concurrency", "2",
		"--target-url", "https://example.com/hook", "--target-secret", "/s3q/hook")
	if code != 0 || !strings.Contains(out, "max_concurrency:  2") || !strings.Contains(out, "url https://example.com/hook") {
		t.Fatalf("create (%d): %s %s", code, out, errOut)
	}
	if _, errOut, code := cli(t, url, "queue", "create", "emails"); code != 4 || !strings.Contains(errOut, "queue update emails") {
		t.Errorf("create of an existing queue (%d): %s", code, errOut)
	}
	if _, errOut, code := cli(t, url, "queue", "create", "bad", "--target-url", "http://example.com/"); code != 2 || !strings.Contains(errOut, "target.url") {
		t.Errorf("create with an http target (%d): %s", code, errOut)
	}
	// update keeps what is not given: the target's url when only the secret changes.
	out, errOut, code = cli(t, url, "queue", "update", "emails", "--target-secret", "/s3q/other", "--no-ttl", "-o", "json")
	var got struct {
		Queue struct {
			TTL            *string `json:"ttl"`
			MaxAttempts    int     `json:"max_attempts"`
			MaxConcurrency int     `json:"max_concurrency"`
			Target         struct{ URL, Secret string }
		} `json:"queue"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil || got.Queue.TTL != nil || got.Queue.MaxAttempts != 5 ||
		got.Queue.Target.URL != "https://example.com/hook" || got.Queue.Target.Secret != "/s3q/other" {
		t.Fatalf("update (%d): %s %s", code, out, errOut)
	}
	if _, errOut, code := cli(t, url, "queue", "update", "nope", "--max-attempts", "2"); code != 3 || !strings.Contains(errOut, "queue_not_found") {
		t.Errorf("update of an undeclared queue (%d): %s", code, errOut)
	}

	// --queue addresses every task command; another queue does not see the task.
	out, errOut, code = cli(t, url, "submit", "-t", "email.send", "--queue", "emails", "-o", "json")
	if code != 0 {
		t.Fatalf("submit --queue (%d): %s", code, errOut)
	}
	var sub struct{ Task struct{ ID, Queue string } }
	if json.Unmarshal([]byte(out), &sub) != nil || sub.Task.Queue != "emails" {
		t.Fatalf("submit --queue: %s", out)
	}
	if _, errOut, code := cli(t, url, "status", sub.Task.ID); code != 3 || !strings.Contains(errOut, "-q/--queue") {
		t.Errorf("status under the default queue (%d): %s", code, errOut)
	}
	if out, _, code := cli(t, url, "-q", "emails", "status", sub.Task.ID); code != 0 || !strings.Contains(out, sub.Task.ID) {
		t.Errorf("status -q emails (%d): %s", code, out)
	}
	// What submit prints, QUEUE/ID, is what every task command takes.
	out, _, code = cli(t, url, "submit", "-t", "email.send", "--queue", "emails")
	ref := regexp.MustCompile(`(?m)^task: +(\S+)$`).FindStringSubmatch(out)
	if code != 0 || ref == nil || ref[1] != "emails/"+strings.TrimSpace(regexp.MustCompile(`(?m)^id: +(\S+)$`).FindStringSubmatch(out)[1]) {
		t.Fatalf("submit prints no task reference (%d): %s", code, out)
	}
	for _, args := range [][]string{{"status", ref[1]}, {"history", ref[1]}, {"-q", "emails", "status", ref[1]}, {"cancel", ref[1]}} {
		if out, errOut, code := cli(t, url, args...); code != 0 || args[0] != "history" && !strings.Contains(out, ref[1]) {
			t.Errorf("%v (%d): %s %s", args, code, out, errOut)
		}
	}
	if _, errOut, code := cli(t, url, "-q", "other", "status", ref[1]); code != 2 || !strings.Contains(errOut, "--queue says other") {
		t.Errorf("a reference into another queue than --queue (%d): %s", code, errOut)
	}
	if out, _, code := cli(t, url, "list", "--all-queues"); code != 0 || !strings.Contains(out, sub.Task.ID) {
		t.Errorf("list --all-queues (%d): %s", code, out)
	}
	if out, _, code := cli(t, url, "list"); code != 0 || strings.Contains(out, sub.Task.ID) {
		t.Errorf("list of the default queue shows a task of emails (%d): %s", code, out)
	}
	if _, _, code := cli(t, url, "list", "--all-queues", "--queue", "emails"); code != 2 {
		t.Errorf("list --all-queues --queue: exit %d, want 2", code)
	}

	out, _, code = cli(t, url, "queue", "list")
	if code != 0 || !regexp.MustCompile(`(?m)^emails +active +1 +0 +0 +0 +1 +0 +0 +2 `).MatchString(out) {
		t.Errorf("queue list (%d): %s", code, out)
	}
	if out, _, code := cli(t, url, "queue", "show", "emails"); code != 0 || !strings.Contains(out, "1 live, 0 delayed, 0 running") {
		t.Errorf("queue show (%d): %s", code, out)
	}
	if _, errOut, code := cli(t, url, "queue", "delete", "emails"); code != 4 || !strings.Contains(errOut, "queue_not_empty") {
		t.Errorf("delete of a queue with a task (%d): %s", code, errOut)
	}
	if _, errOut, code := cli(t, url, "--queue", "emails", "cancel", sub.Task.ID); code != 0 {
		t.Fatalf("cancel (%d): %s", code, errOut)
	}
	if out, errOut, code := cli(t, url, "queue", "delete", "emails"); code != 0 || !strings.Contains(out, "deleted queue emails") {
		t.Errorf("delete (%d): %s %s", code, out, errOut)
	}
	if _, _, code := cli(t, url, "queue"); code != 2 {
		t.Errorf("queue without a subcommand: exit %d, want 2", code)
	}
}

// s3q queue create is idempotent, as SQS's CreateQueue is: creating a
// queue that exists with the same settings exits 0 and shows it, saying it
// exists; with other settings it exits 4 (conflict) naming each difference
// and the 's3q queue update' that would make it, and changes nothing.
func TestQueueCreateOfAnExistingQueue(t *testing.T) {
	url := memAPI(t, queues.Options{}, nil)
	create := []string{"queue", "create", "emails", "--ttl", "1h", "--max-attempts", "5", "--target-url", "https://example.com/hook", "--target-secret", "/s3q/hook"}
	if out, errOut, code := cli(t, url, create...); code != 0 || strings.Contains(out, "exists") {
		t.Fatalf("create (%d): %s %s", code, out, errOut)
	}
	// The same settings, spelled otherwise (60m is 1h): exit 0, "exists".
	again := []string{"queue", "create", "emails", "--max-attempts", "5", "--ttl", "60m", "--target-secret", "/s3q/hook", "--target-url", "https://example.com/hook"}
	out, errOut, code := cli(t, url, again...)
	if code != 0 || !strings.Contains(out, "queue emails exists with these settings") || !strings.Contains(out, "max_attempts:  5") {
		t.Errorf("create again with the same settings (%d): %s %s", code, out, errOut)
	}
	out, errOut, code = cli(t, url, append(again, "-o", "json")...)
	var got struct {
		Queue  struct{ Name string } `json:"queue"`
		Exists bool                  `json:"exists"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil || got.Queue.Name != "emails" || !got.Exists {
		t.Errorf("create again -o json (%d): %s %s", code, out, errOut)
	}
	out, _, code = cli(t, url, "queue", "create", "sms", "-o", "json")
	if code != 0 || !strings.Contains(out, `"exists": false`) {
		t.Errorf("create of a new queue -o json (%d): %s", code, out)
	}

	// Other settings: exit 4, each difference named, the update to run.
	for _, c := range []struct {
		args []string
		says []string
	}{
		{[]string{"--ttl", "2h", "--max-attempts", "5", "--target-url", "https://example.com/hook", "--target-secret", "/s3q/hook"},
			[]string{"ttl 1h, not 2h", "s3q queue update emails --ttl 2h"}},
		{[]string{"--ttl", "1h", "--max-attempts", "5"}, // no target given: create means none
			[]string{"target url https://example.com/hook (secret /s3q/hook), not none", "s3q queue update emails --no-target'"}},
		{nil, []string{"ttl 1h, not none", "max_attempts 5, not none", "s3q queue update emails --no-ttl --no-max-attempts --no-target'"}},
		{[]string{"--ttl", "1h", "--max-attempts", "5", "--target-url", "https://example.com/hook", "--target-secret", "/s3q/hook", "--shards", "13"},
			[]string{"shards ", ", not 13", "shards are fixed when a queue is first declared"}},
	} {
		_, errOut, code := cli(t, url, append([]string{"queue", "create", "emails"}, c.args...)...)
		if code != 4 || !strings.Contains(errOut, "queue emails exists with other settings") {
			t.Errorf("create %v (%d): %s", c.args, code, errOut)
		}
		for _, s := range c.says {
			if !strings.Contains(errOut, s) {
				t.Errorf("create %v: %q does not say %q", c.args, errOut, s)
			}
		}
	}
	out, _, code = cli(t, url, "queue", "create", "emails", "-o", "json")
	if code != 4 || !strings.Contains(out, `"code": "already_exists"`) || !strings.Contains(out, `"field": "queue"`) {
		t.Errorf("create with other settings -o json (%d): %s", code, out)
	}
	out, _, _ = cli(t, url, "queue", "show", "emails", "-o", "json")
	if !strings.Contains(out, `"ttl": "1h"`) || !strings.Contains(out, `"max_attempts": 5`) || !strings.Contains(out, "https://example.com/hook") {
		t.Errorf("a refused create changed the queue: %s", out)
	}

	// The update the refusal suggests runs, and then the create matches.
	_, errOut, code = cli(t, url, "queue", "create", "emails", "--ttl", "2h")
	_, cmdline, _ := strings.Cut(errOut, "to change them run '")
	cmdline, _, _ = strings.Cut(cmdline, "'")
	words := strings.Fields(cmdline)
	if code != 4 || len(words) < 4 || words[0] != "s3q" {
		t.Fatalf("create --ttl 2h (%d): %s", code, errOut)
	}
	if _, errOut, code := cli(t, url, words[1:]...); code != 0 {
		t.Errorf("the suggested %q failed (%d): %s", cmdline, code, errOut)
	}
	if _, errOut, code := cli(t, url, "queue", "create", "emails", "--ttl", "2h"); code != 0 {
		t.Errorf("create after the suggested update (%d): %s", code, errOut)
	}
}

// The help names the shard limit the server enforces.
func TestQueueHelpNamesTheShardLimit(t *testing.T) {
	out, _, _ := cli(t, "", "queue", "--help")
	if want := fmt.Sprintf("1-%d, fixed at creation", queue.MaxShards); !strings.Contains(out, want) || strings.Contains(out, "1-256") {
		t.Errorf("queue --help does not say %q:\n%s", want, out)
	}
}

// --max-schedules declares the queue's max_schedules: the schedule past it
// is refused (too_many_schedules, exit 4), an update raises it and keeps
// the rest (the queue's priority too), and a create of the queue with
// other settings names the update that would make them.
func TestQueueMaxSchedulesFlag(t *testing.T) {
	url := scheduleAPIURL(t)
	if out, _, code := cli(t, "", "queue", "--help"); code != 0 || !strings.Contains(out, "-max-schedules") || !strings.Contains(out, "too_many_schedules") {
		t.Fatalf("queue --help (%d) does not document --max-schedules:\n%s", code, out)
	}
	out, errOut, code := cli(t, url, "queue", "create", "reports", "--max-schedules", "2", "--priority", "2", "-o", "json")
	var got struct {
		Queue struct {
			MaxSchedules int `json:"max_schedules"`
			Priority     int `json:"priority"`
		} `json:"queue"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil || got.Queue.MaxSchedules != 2 || got.Queue.Priority != 2 {
		t.Fatalf("create --max-schedules 2 --priority 2 (%d): %s %s", code, out, errOut)
	}
	schedule := func(name string) (string, int) {
		_, errOut, code := cli(t, url, "-q", "reports", "schedule", "create", name, "--cron", "0 2 * * *", "-t", "report.build")
		return errOut, code
	}
	for _, name := range []string{"a", "b"} {
		if errOut, code := schedule(name); code != 0 {
			t.Fatalf("schedule %s (%d): %s", name, code, errOut)
		}
	}
	if errOut, code := schedule("c"); code != 4 || !strings.Contains(errOut, "too_many_schedules") {
		t.Fatalf("a third schedule past --max-schedules 2 (%d): %s", code, errOut)
	}
	out, errOut, code = cli(t, url, "queue", "update", "reports", "--max-schedules", "3")
	if code != 0 || !strings.Contains(out, "max_schedules:  3") || !strings.Contains(out, "priority:       2") {
		t.Fatalf("update --max-schedules 3 keeps the priority (%d):\n%s %s", code, out, errOut)
	}
	if errOut, code := schedule("c"); code != 0 {
		t.Fatalf("a third schedule under --max-schedules 3 (%d): %s", code, errOut)
	}
	_, errOut, code = cli(t, url, "queue", "create", "reports")
	if code != 4 || !strings.Contains(errOut, "max_schedules 3, not 100") || !strings.Contains(errOut, "priority 2, not none") ||
		!strings.Contains(errOut, "s3q queue update reports --priority 3 --max-schedules 100") {
		t.Fatalf("create of the queue with other settings (%d): %s", code, errOut)
	}
	if _, errOut, code := cli(t, url, "queue", "create", "reports2", "--max-schedules", "10001"); code != 2 || !strings.Contains(errOut, "max_schedules") {
		t.Fatalf("--max-schedules 10001 (%d): %s", code, errOut)
	}
}
