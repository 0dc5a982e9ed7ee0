package api_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/s3q/s3q/shared/api"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/reqcount"
	"github.com/s3q/s3q/shared/store/memstore"
)

// The API over a queue, served by net/http. On AWS the Lambda functions
// of package lambdafn serve the same API from API Gateway events.
func ExampleNew() {
	q, decls := queues.New(reqcount.Wrap(memstore.New()), queues.Options{})
	srv := httptest.NewServer(api.New(q, decls, api.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}))
	defer srv.Close()

	resp, _ := http.Post(srv.URL+"/queues/default/tasks", "application/json", strings.NewReader(`{"task_type":"email.send","ttl":"1h"}`))
	fmt.Println(resp.Status)
	resp, _ = http.Post(srv.URL+"/queues/default/tasks", "application/json", strings.NewReader(`{"task_type":"email.send","ttl":"1h","colour":"red"}`))
	b, _ := io.ReadAll(resp.Body)
	fmt.Print(resp.Status, " ", string(b))
	// Output:
	// 201 Created
	// 400 Bad Request {"error":{"code":"invalid_input","message":"unknown field \"colour\"; known fields: dedup_key, delay, expires_at, id, input, max_attempts, on_parent_expired, parent_id, priority, queue, schedule_at, task_type, timeout, traceparent, tracestate, ttl, ttl_from, ttl_seconds, wait","field":"colour"}}
}
