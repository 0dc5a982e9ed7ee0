package lambdafn_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/dispatch"
	"github.com/s3q/s3q/shared/lambdafn"
	"github.com/s3q/s3q/shared/lambdafn/lambdafntest"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/s3local/s3localtest"
)

type wakes struct {
	mu  sync.Mutex
	got []dispatch.Wake
}

func (w *wakes) Wake(_ context.Context, wk dispatch.Wake) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.got = append(w.got, wk)
}

// The submit function wakes dispatch for a task due now in a push queue,
// and the dispatch function, invoked with the sample events, delivers it.
func TestSubmitWakesDispatchAndTheSampleEventsDeliver(t *testing.T) {
	hits := 0
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits++
		fmt.Fprint(w, `{"ok":true}`)
	}))
	defer target.Close()
	st := s3localtest.NewStore(t, servers.GoFakeS3)
	q, decls := queues.New(st, queues.Options{AllowInsecureTargets: true})
	if _, _, err := decls.Declare(context.Background(), queues.Declaration{Name: "orders", Target: &queues.Target{URL: target.URL, Secret: "k"}}, time.Now()); err != nil {
		t.Fatal(err)
	}
	targets := dispatch.NewDeclared(decls, 0)
	w := &wakes{}
	d := lambdafn.Deps{
		Queue: q, Queues: decls, Logger: slog.New(slog.DiscardHandler), Waker: w,
		Dispatcher: dispatch.New(q, targets, dispatch.Options{
			Logger: slog.New(slog.DiscardHandler), HTTP: dispatch.NewHTTP(dispatch.StaticSecrets{"k": "v"}, true),
		}),
	}
	for _, c := range []struct{ queue, body string }{{"orders", `{"task_type":"a"}`}, {"default", `{"task_type":"a"}`}, {"orders", `{"task_type":"a","delay":"1h"}`}} {
		resp, _ := invoke(t, lambdafn.Submit, d, lambdafntest.APIEvent("POST", "/queues/"+c.queue+"/tasks", c.body))
		if resp.StatusCode != 201 {
			t.Fatalf("submit: %d %s", resp.StatusCode, resp.Body)
		}
	}
	if len(w.got) != 1 || w.got[0].Queue != "orders" || !w.got[0].At.IsZero() {
		t.Fatalf("wakes %+v, want one for orders, now", w.got)
	}
	h, err := lambdafn.New(lambdafn.Dispatch, d)
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{"dispatch-wake.json", "dispatch.json"} {
		ev, err := os.ReadFile(filepath.Join(eventsDir, file))
		if err != nil {
			t.Fatal(err)
		}
		out, err := h.Invoke(context.Background(), ev)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		var rep struct {
			Result dispatch.Report `json:"result"`
		}
		if err := json.Unmarshal(out, &rep); err != nil {
			t.Fatal(err)
		}
		if file == "dispatch-wake.json" && rep.Result.Completed != 1 {
			t.Errorf("%s: %s", file, out)
		}
	}
	if hits != 1 {
		t.Errorf("%d deliveries, want 1", hits)
	}
	// Not wired: says so and succeeds.
	h, _ = lambdafn.New(lambdafn.Dispatch, lambdafn.Deps{Now: time.Now})
	if _, err := h.Invoke(context.Background(), []byte(`{}`)); err != nil {
		t.Error(err)
	}
}

// A wake held back to the next second waits in the function until then;
// a wake for later than MaxWakeDelay does not wait at all (no invocation
// sleeps for a future task).
func TestADispatchWakeForLaterWaitsUntilItsTimeOnlyWithinMaxWakeDelay(t *testing.T) {
	st := s3localtest.NewStore(t, servers.GoFakeS3)
	q, decls := queues.New(st, queues.Options{})
	d := lambdafn.Deps{
		Queue: q, Logger: slog.New(slog.DiscardHandler),
		Dispatcher: dispatch.New(q, dispatch.NewDeclared(decls, 0), dispatch.Options{Logger: slog.New(slog.DiscardHandler)}),
	}
	h, err := lambdafn.New(lambdafn.Dispatch, d)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(300 * time.Millisecond)
	ev, _ := json.Marshal(dispatch.Wake{Queue: "orders", At: at})
	if _, err := h.Invoke(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	if time.Now().Before(at) {
		t.Errorf("ran before %s", at)
	}
	// A minute ahead: at once. The context's deadline is far, so only a
	// wait for the wake's time could hold the invocation.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	ev, _ = json.Marshal(dispatch.Wake{Queue: "orders", At: start.Add(time.Minute)})
	if _, err := h.Invoke(ctx, ev); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited > 20*time.Second {
		t.Errorf("a wake a minute ahead held the invocation %s", waited)
	}
}
