package client_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/s3q/s3q/shared/client"
	"github.com/s3q/s3q/shared/queue"
)

// Call reaches any route, and answers an error as the other calls do.
func TestCallReachesAnyRoute(t *testing.T) {
	c, _ := newAPI(t, servers.GoFakeS3)
	var declared struct {
		Queue client.QueueInfo `json:"queue"`
	}
	status, err := c.Call(ctx, http.MethodPut, "/queues/calls", nil, map[string]any{"max_attempts": 2}, &declared)
	if err != nil || status != http.StatusCreated || declared.Queue.Name != "calls" || declared.Queue.MaxAttempts != 2 {
		t.Fatalf("PUT: %d %+v %v", status, declared, err)
	}
	var list client.ListQueuesResult
	if status, err := c.Call(ctx, http.MethodGet, "/queues", nil, nil, &list); err != nil || status != 200 || len(list.Queues) != 1 {
		t.Fatalf("GET: %d %+v %v", status, list, err)
	}
	_, err = c.Call(ctx, http.MethodGet, "/queues/nope", nil, nil, nil)
	var e *client.Error
	if !errors.As(err, &e) || e.Status != 404 || !errors.Is(err, queue.ErrQueueNotFound) {
		t.Fatalf("GET of an undeclared queue: %v", err)
	}
}
