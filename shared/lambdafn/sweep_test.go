package lambdafn_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/lambdafn"
	"github.com/s3q/s3q/shared/metrics"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/store/memstore"
)

func TestASweepOutOfTimeSaysIncompleteInItsLogAndInSweepIncomplete(t *testing.T) {
	q := queue.New(memstore.New(), queue.Options{})
	if _, err := q.Submit(t.Context(), queue.SubmitRequest{TaskType: "a", TTL: ttl(time.Minute)}, eventTime); err != nil {
		t.Fatal(err)
	}
	var logs, emf bytes.Buffer
	d := lambdafn.Deps{Queue: q, Logger: slog.New(slog.NewJSONHandler(&logs, nil)), Metrics: metrics.New(&emf, "")}
	for _, c := range []struct {
		name       string
		incomplete bool
		within     time.Duration // the invocation's time left
	}{{"out_of_time", true, time.Second}, {"with_time", false, time.Minute}} {
		t.Run(c.name, func(t *testing.T) {
			logs.Reset()
			emf.Reset()
			ctx, cancel := context.WithTimeout(t.Context(), c.within) // the sweep stops 3s before the deadline
			defer cancel()
			rep, err := d.Sweep(ctx, eventTime.Add(2*time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			if rep.Incomplete != c.incomplete {
				t.Fatalf("report: %+v", rep)
			}
			if got := strings.Contains(logs.String(), `"incomplete":true`); got != c.incomplete {
				t.Fatalf("log says incomplete %v, want %v: %s", got, c.incomplete, logs.String())
			}
			var line map[string]any
			if err := json.Unmarshal([]byte(strings.SplitN(emf.String(), "\n", 2)[0]), &line); err != nil {
				t.Fatal(err)
			}
			want := map[bool]float64{true: 1, false: 0}[c.incomplete]
			if line[metrics.SweepIncompleteMetric] != want {
				t.Fatalf("SweepIncomplete = %v, want %v: %v", line[metrics.SweepIncompleteMetric], want, line)
			}
		})
	}
}
