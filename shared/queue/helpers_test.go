package queue_test

import (
	"context"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/queue"
)

var bg = context.Background()
var T0 = time.Date(2026, 1, 28, 9, 0, 0, 0, time.UTC)

func mustSubmit(t *testing.T, q *queue.Queue, req queue.SubmitRequest, now time.Time) queue.Task {
	t.Helper()
	if req.TaskType == "" {
		req.TaskType = "x"
	}
	r, err := q.Submit(bg, req, now)
	if err != nil {
		t.Fatal(err)
	}
	return r.Task
}
