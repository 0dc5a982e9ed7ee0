package dispatch_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/s3q/s3q/shared/deploy"
	"github.com/s3q/s3q/shared/dispatch"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/store/memstore"
)

// metaSSM holds parameters by name and answers GetParameter without
// decryption only: the declaration's check never reads a secret's value.
type metaSSM map[string]bool

func (m metaSSM) GetParameter(_ context.Context, in *ssm.GetParameterInput, _ ...func(*ssm.Options)) (*ssm.GetParameterOutput, error) {
	if aws.ToBool(in.WithDecryption) {
		return nil, errors.New("the check asked for the secret's value")
	}
	if !m[aws.ToString(in.Name)] {
		return nil, errors.New("ParameterNotFound")
	}
	return &ssm.GetParameterOutput{Parameter: &types.Parameter{Value: aws.String("AQICAH-ciphertext")}}, nil
}

// A queue may declare only the targets the deployment binds to it (400
// naming target), never one of the deployment's own functions, and a URL
// target's secret must exist (400 naming target.secret); the dispatcher
// does not deliver a queue declared before its binding went.
func TestTargetsAreBoundToQueues(t *testing.T) {
	ctx := context.Background()
	p := &dispatch.Policy{
		Bindings: deploy.Bindings{
			"orders":  {Lambda: []string{"orders-fn", "arn:aws:lambda:eu-west-1:123456789012:function:billing:live"}, Secrets: []string{"/s3q/orders"}},
			"reports": {Secrets: []string{"/s3q/reports", "/s3q/missing"}},
			"self":    {Lambda: []string{"s3q-prod-dispatch"}},
		},
		Own:     []string{"s3q-prod-dispatch", "s3q-prod-tasks"},
		Secrets: dispatch.SSMCheck{Client: metaSSM{"/s3q/orders": true, "/s3q/reports": true}},
	}
	_, decls := queues.New(memstore.New(), queues.Options{CheckTarget: p.Check})
	for _, c := range []struct {
		queue  string
		target queues.Target
		field  string // "" when accepted
	}{
		{"orders", queues.Target{Lambda: "orders-fn"}, ""},
		{"orders", queues.Target{Lambda: "arn:aws:lambda:eu-west-1:123456789012:function:billing:live"}, ""},
		{"orders", queues.Target{URL: "https://hooks.example.com/orders", Secret: "/s3q/orders"}, ""},
		{"orders", queues.Target{Lambda: "billing"}, "target"},                                 // bound by ARN with a qualifier only
		{"orders", queues.Target{Lambda: "orders-fn:live"}, "target"},                          // bound without one
		{"orders", queues.Target{URL: "https://x.example/", Secret: "/s3q/reports"}, "target"}, // another queue's secret
		{"reports", queues.Target{Lambda: "orders-fn"}, "target"},
		{"reports", queues.Target{URL: "https://x.example/", Secret: "/s3q/missing"}, "target.secret"},
		{"unbound", queues.Target{URL: "https://x.example/", Secret: "/s3q/orders"}, "target"},
		{"self", queues.Target{Lambda: "s3q-prod-dispatch"}, "target"}, // bound, but s3q's own
		{"self", queues.Target{Lambda: "arn:aws:lambda:eu-west-1:123456789012:function:s3q-prod-tasks:1"}, "target"},
	} {
		_, _, err := decls.Declare(ctx, queues.Declaration{Name: c.queue, Target: &c.target}, time.Date(2026, 1, 28, 9, 0, 0, 0, time.UTC))
		switch {
		case c.field == "" && err != nil:
			t.Errorf("%s %+v: %v", c.queue, c.target, err)
		case c.field != "" && !isField(err, c.field):
			t.Errorf("%s %+v: %v, want a 400 naming %s", c.queue, c.target, err, c.field)
		}
	}
	// Without bindings any target goes, but still none of s3q's own.
	open := &dispatch.Policy{Own: []string{"s3q-prod-dispatch"}}
	if err := open.Check(ctx, "any", queues.Target{Lambda: "whatever"}); err != nil {
		t.Error(err)
	}
	if err := open.Check(ctx, "any", queues.Target{Lambda: "123456789012:function:s3q-prod-dispatch"}); !isField(err, "target") {
		t.Errorf("dispatch as a target: %v", err)
	}
	var none *dispatch.Policy
	if err := none.Check(ctx, "any", queues.Target{Lambda: "s3q-prod-dispatch"}); err != nil {
		t.Errorf("a nil policy: %v", err)
	}
}

// A queue declared with a target before the bindings changed is not
// delivered: the run reports an error and its tasks stay pending.
func TestADeclarationTheBindingsNoLongerAllowIsNotDelivered(t *testing.T) {
	e := newEnv(memstore.New(), dispatch.PushQueue{Name: "fn", Target: queues.Target{Lambda: "old-fn"}})
	task := e.submit(t, queue.SubmitRequest{})
	d := dispatch.New(e.q, e.targets(), dispatch.Options{
		Now: e.clk.Now, Soon: -1, Lambda: &dispatch.Lambda{Client: nil},
		Policy: &dispatch.Policy{Bindings: deploy.Bindings{"fn": {Lambda: []string{"new-fn"}}}},
	})
	rep := run(t, d, "")
	if rep.Errors != 1 || rep.Delivered != 0 {
		t.Fatalf("report %+v", rep)
	}
	if got := e.get(t, task.ID); got.Status != queue.StatusPending || got.Attempt != 0 {
		t.Fatalf("task %s attempt %d", got.Status, got.Attempt)
	}
}
