package lambdafn_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/s3q/s3q/shared/lambdafn"
	"github.com/s3q/s3q/shared/lambdafn/lambdafntest"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/store"
	"github.com/s3q/s3q/shared/store/memstore"
)

// published keeps the events a sweep publishes.
type published struct {
	mu  sync.Mutex
	evs []queue.Event
}

func (p *published) Publish(_ context.Context, evs []queue.Event) ([]error, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.evs = append(p.evs, evs...)
	return nil, nil
}

// runScheduledSweep invokes sweep-expired with the rule's event at now
// and returns its report.
func runScheduledSweep(t *testing.T, d lambdafn.Deps, now time.Time) queue.SweepReport {
	t.Helper()
	h, err := lambdafn.New(lambdafn.SweepExpired, d)
	if err != nil {
		t.Fatal(err)
	}
	ev, _ := json.Marshal(events.EventBridgeEvent{Source: "aws.events", DetailType: "Scheduled Event", Time: now})
	out, err := h.Invoke(t.Context(), ev)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Result queue.SweepReport `json:"result"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatal(err)
	}
	return rep.Result
}

// A scheduled sweep that sees a deadline due within its stay stays, and
// expires the task and publishes its Task Expired event once the deadline
// has passed, without waiting for the next minute's run.
func TestAScheduledSweepStaysWhileADeadlineIsNearAndExpiresItOnTime(t *testing.T) {
	q, decls := queues.New(memstore.New(), queues.Options{})
	now := time.Now().UTC()
	task, err := q.Submit(t.Context(), queue.SubmitRequest{TaskType: "a", TTL: ttl(time.Second)}, now)
	if err != nil {
		t.Fatal(err)
	}
	pub := &published{}
	d := lambdafn.Deps{Queue: q, Queues: decls, Logger: slog.New(slog.DiscardHandler), Publisher: pub, SweepStay: time.Minute}
	rep := runScheduledSweep(t, d, now)
	if rep.Expired != 1 || rep.EventsSent != 1 || rep.Passes < 2 {
		t.Fatalf("report %+v: want the task expired and its event sent by a later pass", rep)
	}
	if len(pub.evs) != 1 || pub.evs[0].TaskID != task.Task.ID || pub.evs[0].DetailType != queue.DetailTypeTaskExpired {
		t.Fatalf("events %+v", pub.evs)
	}
	got, _ := q.Get(t.Context(), task.Task.Ref())
	if got.Status != queue.StatusExpired || got.ExpiredAt.Before(*got.ExpiresAt) {
		t.Fatalf("task %s expired at %v, deadline %v", got.Status, got.ExpiredAt, got.ExpiresAt)
	}
}

// An idle deployment's scheduled sweep makes one pass of one LIST, stay
// or no stay.
func TestAnIdleScheduledSweepMakesOnePassOfOneList(t *testing.T) {
	counting := store.NewCounting(memstore.New())
	q, decls := queues.New(counting, queues.Options{})
	d := lambdafn.Deps{Queue: q, Queues: decls, Logger: slog.New(slog.DiscardHandler), Publisher: &published{}, SweepStay: time.Minute}
	rep := runScheduledSweep(t, d, time.Now().UTC())
	if rep.Passes != 1 || !rep.NextDue.IsZero() || rep.Requests.List != 1 || rep.Requests.Total() != 1 {
		t.Fatalf("idle sweep: %+v", rep)
	}
}

// sweepWakes counts the wakes of a staying sweep.
type sweepWakes struct{ n atomic.Int32 }

func (w *sweepWakes) WakeSweep() { w.n.Add(1) }

// The submit function wakes a staying sweep (s3q dev's) for a task whose
// deadline falls within the stay, and for no other.
func TestSubmitOfADeadlineWithinTheStayWakesTheSweep(t *testing.T) {
	q, decls := queues.New(memstore.New(), queues.Options{})
	w := &sweepWakes{}
	d := lambdafn.Deps{Queue: q, Queues: decls, Logger: slog.New(slog.DiscardHandler), SweepStay: time.Minute, SweepWaker: w}
	for _, c := range []struct {
		body string
		want int32
	}{
		{`{"task_type":"a"}`, 0},
		{`{"task_type":"a","ttl":"1h"}`, 0},
		{`{"task_type":"a","ttl":"5s"}`, 1},
		{`{"task_type":"a","ttl":"30s","delay":"10s"}`, 2},
	} {
		resp, _ := invoke(t, lambdafn.Submit, d, lambdafntest.APIEvent("POST", "/queues/default/tasks", c.body))
		if resp.StatusCode != 201 {
			t.Fatalf("submit %s: %d %s", c.body, resp.StatusCode, resp.Body)
		}
		if got := w.n.Load(); got != c.want {
			t.Errorf("after %s: %d wakes, want %d", c.body, got, c.want)
		}
	}
}
