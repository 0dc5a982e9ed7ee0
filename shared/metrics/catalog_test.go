package metrics_test

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/metrics"
	"github.com/s3q/s3q/shared/metrics/catalog"
	"github.com/s3q/s3q/shared/queue"
)

// written is one metric as an EMF line declares it.
type written struct {
	unit string
	dims string
}

// emitAll calls every writing method of an Emitter with values that make
// it write every metric it can, and returns what the lines declared.
func emitAll(t *testing.T) map[string]written {
	t.Helper()
	var buf bytes.Buffer
	e := metrics.New(&buf, "")
	exp := t0.Add(time.Hour)
	ttl := queue.Duration(time.Hour)
	check := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	check(e.Sweep(queue.SweepReport{Incomplete: true, Expired: 1, ExpiredByType: map[string]int{"a": 1}}, t0))
	check(e.TasksExpired("a", 1, t0))
	check(e.TasksDeadLettered("a", 1, t0))
	check(e.SubmitTTL([]queue.Task{
		{TaskType: "a", CreatedAt: t0, ExpiresAt: &exp},
		{TaskType: "b", CreatedAt: t0, TTL: &ttl},
		{TaskType: "c", CreatedAt: t0},
	}, t0))
	check(e.Dispatch("q", 1, 1, 1, t0))
	check(e.Activity(metrics.Activity{Submitted: 1, Completed: 1, Failed: 1, S3Requests: 1}, t0))
	check(e.QueueStats("q", 1, time.Second, t0))

	out := map[string]written{}
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var doc struct {
			AWS struct {
				CloudWatchMetrics []struct {
					Dimensions [][]string
					Metrics    []struct{ Name, Unit string }
				}
			} `json:"_aws"`
		}
		if err := json.Unmarshal([]byte(line), &doc); err != nil {
			t.Fatal(err)
		}
		for _, d := range doc.AWS.CloudWatchMetrics {
			for _, m := range d.Metrics {
				out[m.Name] = written{m.Unit, strings.Join(d.Dimensions[0], ",")}
			}
		}
	}
	return out
}

// The catalog is exactly what the Emitter writes: every metric written is
// listed with its unit and dimensions, and every listed one is written.
func TestTheCatalogIsWhatTheEmitterWrites(t *testing.T) {
	got := emitAll(t)
	for name, w := range got {
		m, ok := catalog.Lookup(name)
		if !ok {
			t.Errorf("%s is written but not in the catalog", name)
			continue
		}
		if m.Unit != w.unit || strings.Join(m.Dimensions, ",") != w.dims {
			t.Errorf("%s is written as %s by [%s], the catalog says %s by %v", name, w.unit, w.dims, m.Unit, m.Dimensions)
		}
	}
	names := map[string]bool{}
	for _, m := range metrics.Catalog() {
		if names[m.Name] {
			t.Errorf("%s is in the catalog twice", m.Name)
		}
		names[m.Name] = true
		if _, ok := got[m.Name]; !ok {
			t.Errorf("%s is in the catalog but no Emitter method writes it", m.Name)
		}
		if m.Help == "" || m.Writer == "" {
			t.Errorf("%s: no help or writer", m.Name)
		}
	}
}

// Activity writes only what happened, and nothing for a request that did
// nothing.
func TestActivityWritesOnlyWhatHappened(t *testing.T) {
	var buf bytes.Buffer
	e := metrics.New(&buf, "")
	if err := e.Activity(metrics.Activity{}, t0); err != nil || buf.Len() != 0 {
		t.Fatalf("an empty activity wrote %q (%v)", buf.String(), err)
	}
	if err := e.Activity(metrics.Activity{Completed: 1, S3Requests: 4}, t0); err != nil {
		t.Fatal(err)
	}
	docs := lines(t, buf.String())
	if len(docs) != 1 || docs[0][catalog.TasksCompletedTotal] != float64(1) || docs[0][catalog.S3RequestsTotal] != float64(4) {
		t.Fatalf("%s", buf.String())
	}
	for _, absent := range []string{catalog.TasksSubmittedTotal, catalog.TasksFailedTotal} {
		if _, ok := docs[0][absent]; ok {
			t.Errorf("%s written as 0", absent)
		}
	}
	if !slices.Contains([]string{"s3q"}, docs[0]["service"].(string)) {
		t.Errorf("service %v", docs[0]["service"])
	}
}
