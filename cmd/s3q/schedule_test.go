package main

import (
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/s3q/s3q/shared/api"
	"github.com/s3q/s3q/shared/api/openapitest"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/s3local/s3localtest"
	"github.com/s3q/s3q/shared/schedule"
)

func scheduleAPIURL(t *testing.T) string {
	t.Helper()
	s := s3localtest.NewStore(t, servers.VersityGW)
	q, decls := queues.New(s, queues.Options{Core: queue.Options{ListCacheFor: -1}})
	ts := httptest.NewServer(openapitest.Handler(t, api.New(q, decls, api.Options{Logger: slog.New(slog.DiscardHandler), Schedules: schedule.New(s, q, schedule.Options{})})))
	t.Cleanup(ts.Close)
	return ts.URL
}

func TestScheduleCommandsManageACronSchedule(t *testing.T) {
	url := scheduleAPIURL(t)
	out, errOut, code := cli(t, url, "schedule", "create", "nightly", "--cron", "0 2 * * *", "--timezone", "Europe/Berlin", "-t", "report.build", "--ttl", "1h", "--overlap", "skip")
	if code != 0 || !strings.Contains(out, "0 2 * * * (Europe/Berlin)") || !strings.Contains(out, "next_runs:") || !strings.Contains(out, "overlap:") {
		t.Fatalf("create (%d):\n%s\n%s", code, out, errOut)
	}
	_, errOut, code = cli(t, url, "schedule", "create", "bad", "--cron", "99 * * * *", "-t", "x")
	if code != 2 || !strings.Contains(errOut, "cron") {
		t.Fatalf("bad cron: %d %s", code, errOut)
	}
	out, _, code = cli(t, url, "schedule", "update", "nightly", "--cron", "30 2 * * 1-5")
	if code != 0 || !strings.Contains(out, "30 2 * * 1-5 (Europe/Berlin)") || !strings.Contains(out, "report.build") {
		t.Fatalf("update keeps the rest (%d):\n%s", code, out)
	}
	out, _, code = cli(t, url, "schedule", "pause", "nightly")
	if code != 0 || !strings.Contains(out, "paused") {
		t.Fatalf("pause (%d):\n%s", code, out)
	}
	out, _, code = cli(t, url, "schedule", "list")
	if code != 0 || !strings.Contains(out, "nightly") || !strings.Contains(out, "paused") {
		t.Fatalf("list (%d):\n%s", code, out)
	}
	out, _, code = cli(t, url, "schedule", "resume", "nightly")
	if code != 0 || !strings.Contains(out, "enabled") {
		t.Fatalf("resume (%d):\n%s", code, out)
	}
	out, _, code = cli(t, url, "schedule", "trigger", "nightly")
	if code != 0 || !strings.Contains(out, "fired nightly at") {
		t.Fatalf("trigger (%d):\n%s", code, out)
	}
	taskID := out[strings.LastIndex(out, " ")+1 : len(out)-1]
	out, _, code = cli(t, url, "status", taskID)
	if code != 0 || !strings.Contains(out, "report.build") {
		t.Fatalf("the fired task (%d):\n%s", code, out)
	}
	out, _, code = cli(t, url, "schedule", "history", "nightly")
	if code != 0 || !strings.Contains(out, taskID) || !strings.Contains(out, "triggered") {
		t.Fatalf("history (%d):\n%s", code, out)
	}
	out, _, code = cli(t, url, "schedule", "delete", "nightly")
	if code != 0 || !strings.Contains(out, "deleted schedule nightly") {
		t.Fatalf("delete (%d):\n%s", code, out)
	}
	_, errOut, code = cli(t, url, "schedule", "show", "nightly")
	if code != 3 || !strings.Contains(errOut, "not_found") {
		t.Fatalf("show after delete: %d %s", code, errOut)
	}
	_, _, code = cli(t, url, "schedule", "frobnicate", "x")
	if code != 2 {
		t.Fatalf("unknown subcommand: exit %d", code)
	}
}
