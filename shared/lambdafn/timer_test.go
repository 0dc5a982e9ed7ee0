package lambdafn_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/lambdafn"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/reqcount"
	"github.com/s3q/s3q/shared/s3local/s3localtest"
	"github.com/s3q/s3q/shared/schedule"
	"github.com/s3q/s3q/shared/store"
	"github.com/s3q/s3q/shared/store/memstore"
)

func TestTimerFunctions(t *testing.T) {
	eventTime := time.Date(2026, 1, 28, 9, 0, 0, 0, time.UTC)
	for _, name := range []string{"sweep-expired", "schedule-tick"} {
		t.Run(name+"_without_work_wired_reports_that_it_did_nothing", func(t *testing.T) {
			rep := invokeTimer(t, name, deps(nil, nil))
			if rep.Wired || rep.Message == "" || !rep.Now.Equal(eventTime) {
				t.Errorf("report %+v", rep)
			}
		})
		t.Run(name+"_runs_its_work_at_the_event_time", func(t *testing.T) {
			q, decls := newQueue(t)
			d := deps(q, decls)
			d.Scheduler = schedule.New(q.Store(), q, schedule.Options{})
			// Due at the event's time and not a minute before it.
			if _, err := q.Submit(t.Context(), queue.SubmitRequest{TaskType: "a", TTL: ttl(time.Hour)}, eventTime.Add(-time.Hour)); err != nil {
				t.Fatal(err)
			}
			if _, err := d.Scheduler.Create(t.Context(), schedule.Request{ID: "nine", TaskType: "a", Cron: "0 9 * * *"}, eventTime.Add(-time.Minute)); err != nil {
				t.Fatal(err)
			}
			rep := invokeTimer(t, name, d)
			did := map[string]string{"sweep-expired": "expired", "schedule-tick": "fired"}[name]
			if !rep.Wired || rep.Result.(map[string]any)[did] != 1.0 {
				t.Errorf("report %+v, want %s 1", rep, did)
			}
		})
		t.Run(name+"_returns_the_error_of_its_work", func(t *testing.T) {
			q, decls := queues.New(reqcount.Wrap(down{memstore.New()}), queues.Options{})
			d := deps(q, decls)
			d.Scheduler = schedule.New(q.Store(), q, schedule.Options{})
			h, _ := lambdafn.New(name, d)
			if _, err := h.Invoke(t.Context(), readEvent(t, name+".json", "", "")); err == nil {
				t.Errorf("no error")
			}
		})
		t.Run(name+"_uses_the_clock_when_the_event_time_is_ahead_of_it", func(t *testing.T) {
			d := deps(nil, nil)
			d.Now = func() time.Time { return eventTime.Add(-time.Hour) }
			if rep := invokeTimer(t, name, d); !rep.Now.Equal(eventTime.Add(-time.Hour)) {
				t.Errorf("now = %s", rep.Now)
			}
		})
	}
	t.Run("a_sweep_counts_the_s3_requests_of_its_work", func(t *testing.T) {
		if rep := invokeTimer(t, "sweep-expired", deps(newQueue(t))); rep.S3Requests < 1 {
			t.Errorf("s3_requests = %d, want the idle sweep's LIST", rep.S3Requests)
		}
	})
}

// down is a store whose every LIST fails, as S3 does when it is down.
type down struct{ store.Store }

func (down) List(context.Context, string, string, int) (store.Page, error) {
	return store.Page{}, errors.New("S3 is down")
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

func newQueue(t *testing.T) (*queue.Queue, *queues.Registry) {
	return queues.New(reqcount.Wrap(s3localtest.NewStore(t, servers.GoFakeS3)), queues.Options{})
}
