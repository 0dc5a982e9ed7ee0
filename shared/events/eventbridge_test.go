package events_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"

	"github.com/s3q/s3q/shared/events"
	"github.com/s3q/s3q/shared/queue"
)

// putEvents is the JSON body of a PutEvents request, as the real SDK
// sends it (awsJson1_1: timestamps are epoch seconds).
type putEvents struct {
	Entries []struct {
		Source       string
		DetailType   string
		Detail       string
		EventBusName string
		Time         float64
		Resources    []string
	}
}

// fakeBus is an httptest server that speaks EventBridge's PutEvents
// protocol. respond decides, per call and entry, the error code of each
// entry ("" for accepted); status, when set, fails the whole call.
type fakeBus struct {
	t       *testing.T
	mu      sync.Mutex
	calls   []putEvents
	respond func(call, entry int) string
	status  int
}

func (b *fakeBus) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	t := b.t
	if r.Method != http.MethodPost || r.URL.Path != "/" {
		t.Errorf("request %s %s", r.Method, r.URL.Path)
	}
	if got := r.Header.Get("X-Amz-Target"); got != "AWSEvents.PutEvents" {
		t.Errorf("X-Amz-Target = %q", got)
	}
	if got := r.Header.Get("Content-Type"); got != "application/x-amz-json-1.1" {
		t.Errorf("Content-Type = %q", got)
	}
	if auth := r.Header.Get("Authorization"); !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=AKID/") || !strings.Contains(auth, "/us-east-1/events/aws4_request") {
		t.Errorf("Authorization = %q", auth)
	}
	body, _ := io.ReadAll(r.Body)
	var in putEvents
	if err := json.Unmarshal(body, &in); err != nil {
		t.Errorf("body %s: %v", body, err)
	}
	b.mu.Lock()
	call := len(b.calls)
	b.calls = append(b.calls, in)
	status := b.status
	b.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	if status != 0 {
		w.WriteHeader(status)
		io.WriteString(w, `{"__type":"InternalException","message":"boom"}`)
		return
	}
	type result struct {
		EventId      string `json:",omitempty"`
		ErrorCode    string `json:",omitempty"`
		ErrorMessage string `json:",omitempty"`
	}
	out := struct {
		FailedEntryCount int
		Entries          []result
	}{}
	for i := range in.Entries {
		code := ""
		if b.respond != nil {
			code = b.respond(call, i)
		}
		if code == "" {
			out.Entries = append(out.Entries, result{EventId: "ev-" + in.Entries[i].DetailType})
		} else {
			out.FailedEntryCount++
			out.Entries = append(out.Entries, result{ErrorCode: code, ErrorMessage: "try again"})
		}
	}
	json.NewEncoder(w).Encode(out)
}

func newPublisher(t *testing.T, bus *fakeBus) *events.EventBridge {
	srv := httptest.NewServer(bus)
	t.Cleanup(srv.Close)
	client := eventbridge.New(eventbridge.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(srv.URL),
		Credentials:  credentials.NewStaticCredentialsProvider("AKID", "SECRET", ""),
		Retryer: retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts = 2
			o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
		}),
	})
	return events.NewEventBridge(client, "s3q-dev", events.EventBridgeOptions{
		Backoff: func(int) time.Duration { return time.Millisecond },
	})
}

var t0 = time.Date(2026, 1, 28, 9, 0, 0, 0, time.UTC)

func someEvents(n int) []queue.Event {
	evs := make([]queue.Event, n)
	for i := range evs {
		id := queue.NewID(t0)
		exp := t0.Add(time.Minute)
		task := queue.Task{ID: id, Queue: "default", TaskType: "mail", Status: queue.StatusExpired,
			CreatedAt: t0, UpdatedAt: exp, ExpiresAt: &exp, ExpiredAt: &exp, ExpiryReason: queue.ReasonTTL}
		evs[i] = queue.ExpiredEvent(&task)
		if i%2 == 1 {
			task.Status, task.FailedAt, task.LastError, task.Attempt, task.MaxAttempts = queue.StatusFailed, &exp, "boom", 3, 3
			evs[i] = queue.DeadLetteredEvent(&task)
		}
	}
	return evs
}

func TestEventBridgeSendsBatchesOfTenAndRetriesTheEntriesThatFailed(t *testing.T) {
	bus := &fakeBus{t: t, respond: func(call, entry int) string {
		if call == 1 && entry == 2 {
			return "ThrottlingException"
		}
		return ""
	}}
	pub := newPublisher(t, bus)
	evs := someEvents(23)
	errs, err := pub.Publish(context.Background(), evs)
	if err != nil || errs != nil {
		t.Fatalf("publish: %v %v", errs, err)
	}
	var sizes []int
	for _, c := range bus.calls {
		sizes = append(sizes, len(c.Entries))
	}
	if want := []int{10, 10, 1, 3}; !equal(sizes, want) {
		t.Fatalf("batch sizes %v, want %v (the retry carries only the failed entry)", sizes, want)
	}
	if retried := bus.calls[2].Entries[0].Detail; retried != string(evs[12].Detail) {
		t.Fatalf("retried %s, want event 12", retried)
	}
	first := bus.calls[0].Entries[0]
	if first.Source != "s3q" || first.DetailType != "Task Expired" || first.EventBusName != "s3q-dev" ||
		first.Detail != string(evs[0].Detail) || int64(first.Time) != t0.Add(time.Minute).Unix() {
		t.Fatalf("entry %+v", first)
	}
	if dl := bus.calls[0].Entries[1]; dl.DetailType != "Task Dead-Lettered" {
		t.Fatalf("entry 1 detail-type %q", dl.DetailType)
	}
	var d map[string]any
	if err := json.Unmarshal([]byte(first.Detail), &d); err != nil || d["reason"] != "ttl" || d["age_seconds"] != 60.0 || len(d) != 10 {
		t.Fatalf("detail %s: %v", first.Detail, err)
	}
}

func TestEventBridgeReportsEntriesThatKeepFailing(t *testing.T) {
	bus := &fakeBus{t: t, respond: func(call, entry int) string {
		if call == 0 && entry == 0 {
			return "MalformedDetail"
		}
		if call > 0 {
			return "MalformedDetail" // the retry of entry 0 fails too
		}
		return ""
	}}
	pub := newPublisher(t, bus)
	errs, err := pub.Publish(context.Background(), someEvents(3))
	if err != nil || len(errs) != 3 || errs[1] != nil || errs[2] != nil {
		t.Fatalf("publish: %v %v", errs, err)
	}
	var ee *events.EntryError
	if !errors.As(errs[0], &ee) || ee.Code != "MalformedDetail" {
		t.Fatalf("errs[0] = %v", errs[0])
	}
	if len(bus.calls) != 4 {
		t.Fatalf("%d calls, want 1 and 3 retries", len(bus.calls))
	}
}

func TestEventBridgeReportsEveryEntryOfACallThatFails(t *testing.T) {
	bus := &fakeBus{t: t, status: http.StatusInternalServerError}
	pub := newPublisher(t, bus)
	errs, err := pub.Publish(context.Background(), someEvents(12))
	if err != nil || len(errs) != 12 {
		t.Fatalf("publish: %v %v", errs, err)
	}
	for i, e := range errs {
		if e == nil {
			t.Fatalf("event %d reported delivered", i)
		}
	}
	if len(bus.calls) != 4 { // two batches, each tried twice by the SDK
		t.Fatalf("%d calls", len(bus.calls))
	}
}

func TestRingKeepsTheMostRecentEventsNewestFirst(t *testing.T) {
	r := events.NewRing(3)
	evs := someEvents(5)
	if got := r.Recent(0); len(got) != 0 {
		t.Fatalf("empty ring: %d", len(got))
	}
	r.Publish(context.Background(), evs[:2])
	if got := r.Recent(0); len(got) != 2 || got[0].TaskID != evs[1].TaskID {
		t.Fatalf("recent: %+v", got)
	}
	r.Publish(context.Background(), evs[2:])
	got := r.Recent(0)
	if len(got) != 3 || got[0].TaskID != evs[4].TaskID || got[2].TaskID != evs[2].TaskID || got[0].Source != "s3q" {
		t.Fatalf("recent: %+v", got)
	}
	if got := r.Recent(1); len(got) != 1 || got[0].TaskID != evs[4].TaskID {
		t.Fatalf("recent(1): %+v", got)
	}
	b, _ := json.Marshal(got[0])
	if !strings.Contains(string(b), `"detail_type":"Task Expired"`) || !strings.Contains(string(b), `"source":"s3q"`) {
		t.Fatalf("json: %s", b)
	}
}

func TestMultiDeliversToEveryPublisher(t *testing.T) {
	ring := events.NewRing(10)
	failing := failingPublisher{}
	errs, err := events.Multi(ring, events.Log{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, failing).Publish(context.Background(), someEvents(2))
	if err != nil || len(errs) != 2 || errs[0] == nil || errs[1] != nil {
		t.Fatalf("multi: %v %v", errs, err)
	}
	if len(ring.Recent(0)) != 2 {
		t.Fatal("ring missed events")
	}
}

type failingPublisher struct{}

func (failingPublisher) Publish(_ context.Context, evs []queue.Event) ([]error, error) {
	errs := make([]error, len(evs))
	errs[0] = errors.New("nope")
	return errs, nil
}

func equal(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
