package dispatch_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/deploy"
	"github.com/s3q/s3q/shared/dispatch"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/store"
	"github.com/s3q/s3q/shared/worker"
)

// The review's cross-queue secret replay: a caller who may declare only
// its own queue declares it with another queue's secret and a URL of its
// own, receives signed deliveries there, and replays one to the other
// queue's real target. The signature binds the target URL and the queue,
// so that target refuses it (401) while it accepts its own deliveries;
// and under push bindings the declaration itself is refused, 400 naming
// target.
func TestADeliveryCapturedWithAnotherQueuesSecretIsRefusedByThatQueuesTarget(t *testing.T) {
	forEachStore(t, func(t *testing.T, st store.Store) {
		var accepted, refused atomic.Int32
		var ordersURL string
		orders := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			if _, err := worker.VerifySignature(worker.PushTarget{Secret: secret, URL: ordersURL, Queue: "orders"}, r, body, time.Now()); err != nil {
				refused.Add(1)
				http.Error(w, err.Error(), http.StatusUnauthorized)
				return
			}
			accepted.Add(1)
			fmt.Fprint(w, `{}`)
		}))
		defer orders.Close()
		ordersURL = orders.URL
		type capture struct {
			header http.Header
			body   []byte
		}
		captured := make(chan capture, 10)
		mine := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			captured <- capture{r.Header.Clone(), body}
			fmt.Fprint(w, `{}`)
		}))
		defer mine.Close()

		ctx := context.Background()
		q, decls := queues.New(st, queues.Options{AllowInsecureTargets: true})
		for name, url := range map[string]string{"orders": orders.URL, "mine": mine.URL} {
			if _, _, err := decls.Declare(ctx, queues.Declaration{Name: name, Target: &queues.Target{URL: url, Secret: "s3q/secret"}}, time.Now()); err != nil {
				t.Fatal(err)
			}
		}
		d := dispatch.New(q, dispatch.NewDeclared(decls, 0), dispatch.Options{
			Logger: slog.New(slog.DiscardHandler), Soon: -1,
			HTTP: dispatch.NewHTTP(dispatch.StaticSecrets{"s3q/secret": secret}, true),
		})
		for _, name := range []string{"orders", "mine"} {
			if _, err := q.Submit(ctx, queue.SubmitRequest{Queue: name, TaskType: "t"}, time.Now()); err != nil {
				t.Fatal(err)
			}
			if _, err := d.Run(ctx, name, time.Time{}); err != nil {
				t.Fatal(err)
			}
		}
		if accepted.Load() != 1 || refused.Load() != 0 {
			t.Fatalf("orders' own delivery: accepted %d, refused %d", accepted.Load(), refused.Load())
		}
		c := <-captured
		req, _ := http.NewRequest(http.MethodPost, orders.URL, bytes.NewReader(c.body))
		req.Header = c.header
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || accepted.Load() != 1 {
			t.Fatalf("the replay to orders' target: %d (accepted %d)", resp.StatusCode, accepted.Load())
		}

		// Under bindings, the secret of orders is not the caller's to name.
		_, bound := queues.New(st, queues.Options{AllowInsecureTargets: true, CheckTarget: (&dispatch.Policy{
			Bindings: deploy.Bindings{"orders": {Secrets: []string{"s3q/secret"}}, "mine": {Secrets: []string{"s3q/mine"}}},
		}).Check})
		_, _, err = bound.Declare(ctx, queues.Declaration{Name: "mine", Target: &queues.Target{URL: mine.URL, Secret: "s3q/secret"}}, time.Now())
		if !isField(err, "target") {
			t.Fatalf("declaring mine with orders' secret: %v, want a 400 naming target", err)
		}
	})
}

func isField(err error, field string) bool {
	var verr *queue.ValidationError
	return errors.As(err, &verr) && verr.Field == field
}
