package metrics_test

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/metrics"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/store"
)

var t0 = time.Date(2026, 1, 28, 9, 0, 0, 0, time.UTC)

// lines decodes EMF lines and checks each against the format: an "_aws"
// member with a millisecond Timestamp and one directive whose every
// dimension and metric is a member of the document.
func lines(t *testing.T, out string) []map[string]any {
	t.Helper()
	var docs []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var doc map[string]any
		if err := json.Unmarshal([]byte(line), &doc); err != nil {
			t.Fatalf("line %s: %v", line, err)
		}
		aws := doc["_aws"].(map[string]any)
		if aws["Timestamp"] != float64(t0.UnixMilli()) {
			t.Fatalf("timestamp %v", aws["Timestamp"])
		}
		dirs := aws["CloudWatchMetrics"].([]any)
		if len(dirs) != 1 {
			t.Fatalf("%d directives", len(dirs))
		}
		dir := dirs[0].(map[string]any)
		if dir["Namespace"] != "s3q" {
			t.Fatalf("namespace %v", dir["Namespace"])
		}
		for _, set := range dir["Dimensions"].([]any) {
			for _, d := range set.([]any) {
				if _, ok := doc[d.(string)].(string); !ok {
					t.Fatalf("dimension %v is not a string member: %s", d, line)
				}
			}
		}
		for _, m := range dir["Metrics"].([]any) {
			name := m.(map[string]any)["Name"].(string)
			switch v := doc[name].(type) {
			case float64:
			case []any:
				if len(v) > 100 {
					t.Fatalf("%s has %d values", name, len(v))
				}
			default:
				t.Fatalf("metric %s is %T: %s", name, doc[name], line)
			}
		}
		docs = append(docs, doc)
	}
	return docs
}

func TestSweepWritesItsMetricsAndExpiredByType(t *testing.T) {
	var buf bytes.Buffer
	e := metrics.New(&buf, "")
	rep := queue.SweepReport{
		Expired: 3, ExpiredByParent: 1, NearExpiration: 7, EventsSent: 4, Parked: 2,
		ExpiredByType: map[string]int{"mail": 3, "report": 1},
		Requests:      store.Counts{List: 2, Get: 4, Put: 12, Delete: 8},
		Duration:      1500 * time.Millisecond,
	}
	if err := e.Sweep(rep, t0); err != nil {
		t.Fatal(err)
	}
	docs := lines(t, buf.String())
	if len(docs) != 3 {
		t.Fatalf("%d lines, want the sweep's and one per task type", len(docs))
	}
	s := docs[0]
	if s["sweep_duration"] != 1500.0 || s["sweep_requests"] != 26.0 || s["sweep_list_requests"] != 2.0 ||
		s["tasks_expired"] != 4.0 || s["tasks_near_expiration"] != 7.0 || s["events_sent"] != 4.0 || s["service"] != "s3q" ||
		s[metrics.SweepIncompleteMetric] != 0.0 || s["incomplete"] != false {
		t.Fatalf("sweep line: %v", s)
	}
	if docs[1]["task_type"] != "mail" || docs[1]["tasks_expired_total"] != 3.0 || docs[2]["task_type"] != "report" {
		t.Fatalf("by type: %v %v", docs[1], docs[2])
	}
	dims := docs[1]["_aws"].(map[string]any)["CloudWatchMetrics"].([]any)[0].(map[string]any)["Dimensions"]
	if b, _ := json.Marshal(dims); string(b) != `[["service","task_type"]]` {
		t.Fatalf("dimensions %s", b)
	}
}

func TestAnIncompleteSweepWritesSweepIncompleteOne(t *testing.T) {
	var buf bytes.Buffer
	e := metrics.New(&buf, "")
	if err := e.Sweep(queue.SweepReport{Incomplete: true, QueuesDue: 9, Queues: 4}, t0); err != nil {
		t.Fatal(err)
	}
	s := lines(t, buf.String())[0]
	if s["SweepIncomplete"] != 1.0 || s["incomplete"] != true || s["queues_due"] != 9.0 || s["queues"] != 4.0 {
		t.Fatalf("sweep line: %v", s)
	}
	var names []string
	for _, m := range s["_aws"].(map[string]any)["CloudWatchMetrics"].([]any)[0].(map[string]any)["Metrics"].([]any) {
		names = append(names, m.(map[string]any)["Name"].(string))
	}
	if !slices.Contains(names, "SweepIncomplete") {
		t.Fatalf("metrics %v lack SweepIncomplete", names)
	}
}

func TestSubmitTTLWritesADistributionPerTaskType(t *testing.T) {
	var buf bytes.Buffer
	e := metrics.New(&buf, "")
	var tasks []queue.Task
	for i := 0; i < 150; i++ {
		exp := t0.Add(time.Duration(i+1) * time.Minute)
		tasks = append(tasks, queue.Task{TaskType: "mail", CreatedAt: t0, ExpiresAt: &exp})
	}
	ttl := queue.Duration(time.Hour)
	tasks = append(tasks, queue.Task{TaskType: "report", CreatedAt: t0, TTL: &ttl}, queue.Task{TaskType: "report", CreatedAt: t0}, queue.Task{TaskType: "free", CreatedAt: t0})
	if err := e.SubmitTTL(tasks, t0); err != nil {
		t.Fatal(err)
	}
	docs := lines(t, buf.String())
	if len(docs) != 4 {
		t.Fatalf("%d lines: %s", len(docs), buf.String())
	}
	if docs[0]["task_type"] != "free" || docs[0]["tasks_without_ttl"] != 1.0 {
		t.Fatalf("free: %v", docs[0])
	}
	first, second := docs[1]["task_ttl_seconds"].([]any), docs[2]["task_ttl_seconds"].([]any)
	if len(first) != 100 || len(second) != 50 || first[0] != 60.0 || second[49] != 9000.0 {
		t.Fatalf("mail values split %d + %d", len(first), len(second))
	}
	if docs[3]["task_type"] != "report" || docs[3]["task_ttl_seconds"] != 3600.0 || docs[3]["tasks_without_ttl"] != 1.0 {
		t.Fatalf("report: %v", docs[3])
	}
}

func TestTasksDeadLetteredWritesTheMetricTheAlarmWatches(t *testing.T) {
	var buf bytes.Buffer
	if err := metrics.New(&buf, "").TasksDeadLettered("mail", 2, t0); err != nil {
		t.Fatal(err)
	}
	docs := lines(t, buf.String())
	if len(docs) != 1 || docs[0]["task_type"] != "mail" || docs[0][metrics.DeadLetteredMetric] != 2.0 || metrics.DeadLetteredMetric != "tasks_dead_lettered_total" {
		t.Fatalf("lines %v", docs)
	}
}

func TestDispatchWritesTheMetricTheDeliveryFailureAlarmWatches(t *testing.T) {
	var buf bytes.Buffer
	if err := metrics.New(&buf, "").Dispatch("orders", 5, 2, 1, t0); err != nil {
		t.Fatal(err)
	}
	docs := lines(t, buf.String())
	if len(docs) != 1 || docs[0]["queue"] != "orders" || docs[0]["push_deliveries_total"] != 5.0 ||
		docs[0][metrics.PushDeliveryFailuresMetric] != 2.0 || docs[0]["push_outcome_errors_total"] != 1.0 ||
		metrics.PushDeliveryFailuresMetric != "push_delivery_failures_total" {
		t.Fatalf("lines %v", docs)
	}
}
