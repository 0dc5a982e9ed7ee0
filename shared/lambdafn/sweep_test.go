package lambdafn_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/lambdafn"
	"github.com/s3q/s3q/shared/metrics"
	"github.com/s3q/s3q/shared/metrics/catalog"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/reqcount"
	"github.com/s3q/s3q/shared/store/memstore"
)

func TestASweepOutOfTimeSaysIncompleteInItsLogAndInSweepIncomplete(t *testing.T) {
	q, decls := queues.New(memstore.New(), queues.Options{})
	if _, err := q.Submit(t.Context(), queue.SubmitRequest{TaskType: "a", TTL: ttl(time.Minute)}, eventTime); err != nil {
		t.Fatal(err)
	}
	var logs, emf bytes.Buffer
	d := lambdafn.Deps{Queue: q, Queues: decls, Logger: slog.New(slog.NewJSONHandler(&logs, nil)), Metrics: metrics.New(&emf, "")}
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

// A sweep on a minute that is a multiple of catalog.QueueStatsEveryMinutes
// writes each declared queue's depth and the age of its head; the others
// do not.
func TestEveryFifthMinuteTheSweepWritesQueueDepthAndOldestPendingAge(t *testing.T) {
	q, decls := queues.New(memstore.New(), queues.Options{})
	at := time.Date(2026, 1, 28, 9, 0, 0, 0, time.UTC) // minute 0
	for _, name := range []string{"empty", "orders"} {
		if _, _, err := decls.Declare(t.Context(), queues.Declaration{Name: name}, at.Add(-time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	for i, ago := range []time.Duration{90 * time.Second, 30 * time.Second} {
		if _, err := q.In("orders").Submit(t.Context(), queue.SubmitRequest{TaskType: "a"}, at.Add(-ago)); err != nil {
			t.Fatal(i, err)
		}
	}
	var emf bytes.Buffer
	d := lambdafn.Deps{Queue: q, Queues: decls, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)), Metrics: metrics.New(&emf, "")}
	gauges := func(now time.Time) map[string]map[string]any {
		emf.Reset()
		if _, err := d.Sweep(t.Context(), now); err != nil {
			t.Fatal(err)
		}
		out := map[string]map[string]any{}
		for _, l := range strings.Split(strings.TrimSpace(emf.String()), "\n") {
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatal(err)
			}
			if _, ok := m[catalog.QueueDepth]; ok {
				out[m["queue"].(string)] = m
			}
		}
		return out
	}
	got := gauges(at)
	if len(got) != 2 {
		t.Fatalf("gauges for %d queues, want 2: %v", len(got), got)
	}
	if got["orders"][catalog.QueueDepth] != float64(2) || got["orders"][catalog.OldestPendingAgeSeconds] != float64(90) {
		t.Errorf("orders: %v, want depth 2 and the oldest 90s old", got["orders"])
	}
	if got["empty"][catalog.QueueDepth] != float64(0) || got["empty"][catalog.OldestPendingAgeSeconds] != float64(0) {
		t.Errorf("empty: %v", got["empty"])
	}
	if got := gauges(at.Add(time.Minute)); len(got) != 0 {
		t.Errorf("minute 1 wrote queue gauges: %v", got)
	}
}

// The sweep's requests in its metrics are all it made: the reads of the
// declarations of the queues whose heads it read too, which the queue's
// registry makes (the core's report leaves them out).
func TestTheSweepsRequestsCountTheDeclarationsItRead(t *testing.T) {
	q, decls := queues.New(reqcount.Wrap(memstore.New()), queues.Options{})
	if _, err := q.Submit(t.Context(), queue.SubmitRequest{TaskType: "a", TTL: ttl(time.Minute)}, eventTime); err != nil {
		t.Fatal(err)
	}
	// Another process sweeps: its registry has read no declaration.
	q, decls = queues.New(q.Store(), queues.Options{})
	d := lambdafn.Deps{Queue: q, Queues: decls, Logger: slog.New(slog.DiscardHandler)}
	ctx, run := reqcount.Start(t.Context())
	rep, err := d.Sweep(ctx, eventTime.Add(time.Minute+time.Second)) // not a stats minute
	if err != nil || rep.Expired != 1 {
		t.Fatalf("sweep: %+v, %v", rep, err)
	}
	if rep.Requests != run.Counts() {
		t.Fatalf("report counts %v, the run made %v", rep.Requests, run.Counts())
	}
	if got := run.Requests(); !strings.Contains(fmt.Sprint(got), "GET "+queue.QueueKey(queue.DefaultQueue)) {
		t.Fatalf("the sweep read no declaration: %v", got)
	}
}
