package lambdafn_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/s3q/s3q/shared/metrics"
	"github.com/s3q/s3q/shared/metrics/catalog"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/reqcount"
	"github.com/s3q/s3q/shared/store/memstore"
)

// The HTTP functions write what each request did: tasks submitted,
// completed and failed, and its S3 requests; the dashboard sums them.
func TestHTTPFunctionsWriteTheirActivity(t *testing.T) {
	q, decls := queues.New(reqcount.Wrap(memstore.New()), queues.Options{})
	var emf bytes.Buffer
	d := deps(q, decls)
	d.Metrics = metrics.New(&emf, "")
	sums := func() map[string]float64 {
		out := map[string]float64{}
		for _, l := range strings.Split(strings.TrimSpace(emf.String()), "\n") {
			var m map[string]any
			if l == "" || json.Unmarshal([]byte(l), &m) != nil {
				continue
			}
			for _, name := range []string{catalog.TasksSubmittedTotal, catalog.TasksCompletedTotal, catalog.TasksFailedTotal, catalog.S3RequestsTotal} {
				if v, ok := m[name].(float64); ok {
					out[name] += v
				}
			}
		}
		emf.Reset()
		return out
	}
	for _, c := range []struct {
		fn, file string
		setup    fixture
		want     string
	}{
		{"submit", "submit-batch.json", none, catalog.TasksSubmittedTotal},
		{"tasks", "tasks-complete.json", runningTask, catalog.TasksCompletedTotal},
		{"tasks", "tasks-fail.json", runningTask, catalog.TasksFailedTotal},
	} {
		id, token := c.setup(t, q, decls)
		emf.Reset()
		resp, _ := invoke(t, c.fn, d, readEvent(t, c.file, id, token))
		if resp.StatusCode >= 300 {
			t.Fatalf("%s: %d %s", c.file, resp.StatusCode, resp.Body)
		}
		got := sums()
		want := 1.0
		if c.file == "submit-batch.json" {
			want = 3 // the batch's three tasks
		}
		if got[c.want] != want || got[catalog.S3RequestsTotal] < 1 {
			t.Errorf("%s wrote %v, want %s %v and its S3 requests", c.file, got, c.want, want)
		}
		for name, v := range got {
			if name != c.want && name != catalog.S3RequestsTotal && v != 0 {
				t.Errorf("%s also wrote %s %v", c.file, name, v)
			}
		}
	}
	// A request that changes nothing writes only its S3 requests.
	resp, _ := invoke(t, "tasks", d, readEvent(t, "openapi.json", "", ""))
	if got := sums(); resp.StatusCode != 200 || len(got) != 0 {
		t.Errorf("GET /openapi.json (no S3 request) wrote %v", got)
	}
}
