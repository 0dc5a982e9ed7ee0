package s3local_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/s3local"
)

// A finished task's record carries the tag the bucket's lifecycle rule
// deletes by; a pending one does not. Checked with the S3 API itself, on
// versitygw: gofakes3 v1.2.0 accepts x-amz-tagging but does not store
// tags (its writes still succeed, which the other suites prove).
func TestTerminalTaskRecordsCarryTheLifecycleTag(t *testing.T) {
	for _, srv := range []*s3local.Server{servers.VersityGW} {
		t.Run(srv.Name, func(t *testing.T) {
			ctx := context.Background()
			prefix := "tags-" + queue.NewID(t0())[:8] + "/"
			q := queues.NewQueue(srv.Store(prefix), queues.Options{})
			res, err := q.Submit(ctx, queue.SubmitRequest{TaskType: "x"}, t0())
			if err != nil {
				t.Fatal(err)
			}
			tags := func() map[string]string {
				out, err := srv.Client().GetObjectTagging(ctx, &s3.GetObjectTaggingInput{Bucket: aws.String(srv.Bucket), Key: aws.String(prefix + queue.TaskKey(res.Task.Queue, res.Task.ID))})
				if err != nil {
					t.Fatalf("get tagging: %v", err)
				}
				m := map[string]string{}
				for _, tg := range out.TagSet {
					m[aws.ToString(tg.Key)] = aws.ToString(tg.Value)
				}
				return m
			}
			if got := tags(); got["s3q-terminal"] != "" {
				t.Fatalf("a pending task is tagged: %v", got)
			}
			cs, err := q.Claim(ctx, queue.ClaimRequest{}, t0())
			if err != nil || len(cs) != 1 {
				t.Fatalf("claim: %v %d", err, len(cs))
			}
			if _, err := q.Complete(ctx, queue.CompleteRequest{ID: res.Task.Ref(), LeaseToken: cs[0].Lease.Token}, t0()); err != nil {
				t.Fatal(err)
			}
			if got := tags(); got["s3q-terminal"] != "true" {
				t.Fatalf("a completed task's tags are %v, want s3q-terminal=true", got)
			}
		})
	}
}

func t0() time.Time { return time.Date(2026, 1, 28, 9, 0, 0, 0, time.UTC) }
