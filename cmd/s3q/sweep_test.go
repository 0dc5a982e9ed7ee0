package main

import (
	"crypto/rand"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/api"
	"github.com/s3q/s3q/shared/api/openapitest"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
)

func TestSweepRunsOneSweepNowAndTheCommandsShowTheExpiry(t *testing.T) {
	srv := servers.GoFakeS3
	prefix := "sweep-" + rand.Text() + "/"
	for k, v := range map[string]string{
		"S3Q_BUCKET": srv.Bucket, "S3Q_ENDPOINT": srv.Endpoint, "S3Q_PREFIX": prefix, "AWS_REGION": srv.Region,
		"AWS_ACCESS_KEY_ID": srv.AccessKey, "AWS_SECRET_ACCESS_KEY": srv.SecretKey, "S3Q_EVENT_BUS": "",
		"AWS_CONFIG_FILE": os.DevNull, "AWS_SHARED_CREDENTIALS_FILE": os.DevNull,
	} {
		t.Setenv(k, v)
	}
	q, decls := queues.New(srv.Store(prefix), queues.Options{Core: queue.Options{ListCacheFor: -1}})
	ts := httptest.NewServer(openapitest.Handler(t, api.New(q, decls, api.Options{Logger: slog.New(slog.DiscardHandler)})))
	defer ts.Close()

	// Submitted two hours ago with a one-hour TTL: overdue now, without
	// waiting. It reads expired before the sweep has written it, its
	// event owed.
	ttl := queue.Duration(time.Hour)
	res, err := q.Submit(t.Context(), queue.SubmitRequest{TaskType: "email.send", TTL: &ttl}, time.Now().Add(-2*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	id := res.Task.ID
	out, _, code := cli(t, ts.URL, "status", id)
	if code != 0 || !strings.Contains(out, "status:        expired") || !strings.Contains(out, "reason ttl") ||
		!strings.Contains(out, "Task Expired owed") {
		t.Fatalf("status before the sweep (%d):\n%s", code, out)
	}

	out, errOut, code := cli(t, "", "sweep")
	if code != 0 || !strings.Contains(out, "swept 1 of 1 queue(s) due at ") || !strings.Contains(out, "  expired:                         1") ||
		!strings.Contains(out, "  events sent:                     1") || !strings.Contains(out, "Task Expired events by type: email.send 1") {
		t.Fatalf("sweep (%d):\nstdout %s\nstderr %s", code, out, errOut)
	}
	if !strings.Contains(errOut, `"detail_type":"Task Expired"`) || !strings.Contains(errOut, id) {
		t.Errorf("without S3Q_EVENT_BUS the event goes to the log on stderr:\n%s", errOut)
	}
	if strings.Contains(errOut, `"_aws"`) {
		t.Errorf("a CLI sweep wrote EMF metrics:\n%s", errOut)
	}

	out, _, code = cli(t, "", "sweep", "-o", "json")
	var rep queue.SweepReport
	if err := json.Unmarshal([]byte(out), &rep); code != 0 || err != nil || rep.Expired != 0 || rep.EventsSent != 0 || rep.Queues != 1 || rep.Requests.List == 0 {
		t.Fatalf("second sweep, json (%d): %v\n%s", code, err, out)
	}

	out, _, code = cli(t, ts.URL, "status", id)
	for _, want := range []string{"status:        expired", "expired_at:    ", "reason ttl", "event:         Task Expired sent "} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("status after the sweep lacks %q (%d):\n%s", want, code, out)
		}
	}
	out, _, code = cli(t, ts.URL, "list", "--status", "expired")
	if code != 0 || !strings.Contains(out, id) || !strings.Contains(out, "(ttl)") || !strings.Contains(out, "expired ") {
		t.Fatalf("list --status expired (%d):\n%s", code, out)
	}
	out, _, code = cli(t, ts.URL, "history", id)
	if code != 0 || !strings.Contains(out, "Version 1: pending (expires_at: ") ||
		!strings.Contains(out, "Version 2: expired (expired_at: ") || !strings.Contains(out, "Version 3: expired (expired_at: ") ||
		!strings.Contains(out, "reason ttl, Task Expired event sent)") {
		t.Fatalf("history (%d):\n%s", code, out)
	}

	_, errOut, code = cli(t, "", "sweep", "extra")
	if code != 2 || !strings.Contains(errOut, "sweep takes no arguments") {
		t.Fatalf("sweep with an argument: %d %s", code, errOut)
	}
}
