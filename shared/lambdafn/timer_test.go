package lambdafn_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/lambdafn"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/reqcount"
	"github.com/s3q/s3q/shared/s3local/s3localtest"
)

func TestTimerFunctions(t *testing.T) {
	eventTime := time.Date(2026, 1, 28, 9, 0, 0, 0, time.UTC)
	for _, name := range []string{"sweep-expired", "schedule-tick"} {
		t.Run(name+"_without_work_wired_reports_that_it_did_nothing", func(t *testing.T) {
			rep := invokeTimer(t, name, deps(nil))
			if rep.Wired || rep.Message == "" || !rep.Now.Equal(eventTime) {
				t.Errorf("report %+v", rep)
			}
		})
		t.Run(name+"_calls_its_work_with_the_event_time", func(t *testing.T) {
			var got time.Time
			work := func(ctx context.Context, now time.Time) (any, error) {
				got = now
				return map[string]int{"expired": 2}, nil
			}
			d := deps(nil)
			d.Sweep, d.Tick = work, work
			rep := invokeTimer(t, name, d)
			if !got.Equal(eventTime) || !rep.Wired || rep.Result.(map[string]any)["expired"] != float64(2) {
				t.Errorf("work ran at %s; report %+v", got, rep)
			}
		})
		t.Run(name+"_returns_the_error_of_its_work", func(t *testing.T) {
			d := deps(nil)
			fail := func(context.Context, time.Time) (any, error) { return nil, errors.New("S3 is down") }
			d.Sweep, d.Tick = fail, fail
			h, _ := lambdafn.New(name, d)
			if _, err := h.Invoke(t.Context(), readEvent(t, name+".json", "", "")); err == nil {
				t.Errorf("no error")
			}
		})
		t.Run(name+"_uses_the_clock_when_the_event_time_is_ahead_of_it", func(t *testing.T) {
			d := deps(nil)
			d.Now = func() time.Time { return eventTime.Add(-time.Hour) }
			if rep := invokeTimer(t, name, d); !rep.Now.Equal(eventTime.Add(-time.Hour)) {
				t.Errorf("now = %s", rep.Now)
			}
		})
	}
	t.Run("a_sweep_counts_the_s3_requests_of_its_work", func(t *testing.T) {
		q := newQueue(t)
		d := deps(q)
		d.Sweep = func(ctx context.Context, now time.Time) (any, error) {
			_, err := q.Claim(ctx, queue.ClaimRequest{}, now)
			return nil, err
		}
		if rep := invokeTimer(t, "sweep-expired", d); rep.S3Requests < 2 {
			t.Errorf("s3_requests = %d, want the claim's LISTs", rep.S3Requests)
		}
	})
}

func invokeTimer(t *testing.T, name string, d lambdafn.Deps) lambdafn.Report {
	t.Helper()
	h, err := lambdafn.New(name, d)
	if err != nil {
		t.Fatal(err)
	}
	out, err := h.Invoke(t.Context(), readEvent(t, name+".json", "", ""))
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		lambdafn.Report
		Result any `json:"result"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	rep.Report.Result = rep.Result
	return rep.Report
}

func newQueue(t *testing.T) *queue.Queue {
	return queue.New(reqcount.Wrap(s3localtest.NewStore(t, servers.GoFakeS3)), queue.Options{})
}
