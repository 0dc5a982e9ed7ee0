package queue_test

import (
	"context"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/store/memstore"
)

// A failure with RetryAfter (a push target's Retry-After) is retried at
// exactly now + RetryAfter, using up an attempt; past the deadline the
// task expires instead of running.
func TestFailWithRetryAfterRetriesAtThatTime(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 28, 9, 0, 0, 0, time.UTC)
	q := queue.New(memstore.New(), queue.Options{})
	exp := now.Add(time.Minute)
	task := mustSubmit(t, q, queue.SubmitRequest{TaskType: "t", ExpiresAt: &exp}, now)
	claim := func(at time.Time) []queue.Claimed {
		c, err := q.Claim(ctx, queue.ClaimRequest{}, at)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	c := claim(now)
	got, err := q.Fail(ctx, task.ID, c[0].Lease.Token, queue.FailRequest{Error: "503", RetryAfter: 30 * time.Second}, now)
	if err != nil || got.Status != queue.StatusPending || !got.AvailableAt.Equal(now.Add(30*time.Second)) || got.Attempt != 1 {
		t.Fatalf("after fail: %s available %s attempt %d, %v", got.Status, got.AvailableAt, got.Attempt, err)
	}
	if len(claim(now.Add(29*time.Second))) != 0 {
		t.Fatal("claimed before Retry-After")
	}
	c = claim(now.Add(30 * time.Second))
	if len(c) != 1 || c[0].Task.Attempt != 2 {
		t.Fatalf("claim at Retry-After: %+v", c)
	}
	later := now.Add(30 * time.Second)
	if _, err := q.Fail(ctx, task.ID, c[0].Lease.Token, queue.FailRequest{Error: "503", RetryAfter: time.Hour}, later); err != nil {
		t.Fatal(err)
	}
	if c := claim(later.Add(2 * time.Hour)); len(c) != 0 {
		t.Fatalf("ran past its deadline: %+v", c)
	}
	if got, _ := q.Get(ctx, task.ID); got.Status != queue.StatusExpired {
		t.Fatalf("past the deadline: %s", got.Status)
	}
	if _, err := q.Fail(ctx, task.ID, "x", queue.FailRequest{RetryAfter: 1 << 62}, now); err == nil {
		t.Error("an out-of-range RetryAfter was accepted")
	}
}
