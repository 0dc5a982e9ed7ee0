package dispatch_test

import (
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/api/openapitest"
	"github.com/s3q/s3q/shared/dispatch"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/store"
)

// The OpenAPI document's webhook describes the deliveries: every test
// target checks each one it receives against it (newTarget); here a
// delivery with an output, one retried and one with every header, and
// the body's fields are exactly dispatch.Payload's.
func TestDeliveriesAreTheDocumentsWebhook(t *testing.T) {
	doc := openapitest.Document(t)
	props := doc.Components.Schemas["PushDelivery"].Value.Properties
	var got, want []string
	for k := range props {
		got = append(got, k)
	}
	rt := reflect.TypeFor[dispatch.Payload]()
	for i := range rt.NumField() {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		want = append(want, name)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("the webhook's body has %v, dispatch.Payload %v", got, want)
	}

	t.Cleanup(func() { // after the stores' parallel subtests
		for _, p := range []string{"PushDelivery.task", "PushDelivery.lease", "PushDelivery.deadline", "Task.last_error", "Task.dedup_key", "Task.input", "Lease.token"} {
			if !openapitest.Seen(p) {
				t.Errorf("no delivery carried %s", p)
			}
		}
	})
	forEachStore(t, func(t *testing.T, st store.Store) {
		e, _ := newHTTPEnv(t, st, func(p dispatch.Payload, w http.ResponseWriter, _ *http.Request) {
			if p.Task.Attempt == 1 {
				w.Header().Set("Retry-After", "5")
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			w.Write([]byte(`{"ok":true}`))
		})
		task := e.submit(t, queue.SubmitRequest{DedupKey: "k", Input: []byte(`{"n":1}`)})
		d := e.dispatcher(st, nil)
		if rep := run(t, d, "push"); rep.Retried != 1 {
			t.Fatalf("first attempt: %+v", rep)
		}
		e.clk.Advance(6 * time.Second)
		if rep := run(t, d, "push"); rep.Completed != 1 {
			t.Fatalf("second attempt: %+v", rep)
		}
		if got := e.get(t, task.ID); got.Status != queue.StatusCompleted {
			t.Fatalf("task %s", got.Status)
		}
	})
}
