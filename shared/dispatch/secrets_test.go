package dispatch_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/s3q/s3q/shared/dispatch"
)

type fakeSSM struct {
	calls int
	fail  bool
}

func (f *fakeSSM) GetParameter(_ context.Context, in *ssm.GetParameterInput, _ ...func(*ssm.Options)) (*ssm.GetParameterOutput, error) {
	f.calls++
	if f.fail {
		return nil, errors.New("throttled")
	}
	if !aws.ToBool(in.WithDecryption) {
		return nil, errors.New("not decrypted")
	}
	return &ssm.GetParameterOutput{Parameter: &types.Parameter{Value: aws.String("v-" + aws.ToString(in.Name))}}, nil
}

func TestSSMSecretsAreCachedForTheirTTL(t *testing.T) {
	f := &fakeSSM{}
	s := dispatch.NewSSMSecrets(f, time.Minute)
	now := time.Date(2026, 1, 28, 9, 0, 0, 0, time.UTC)
	for _, at := range []time.Time{now, now.Add(30 * time.Second), now.Add(59 * time.Second)} {
		if v, err := s.Secret(context.Background(), "/hook", at); err != nil || v != "v-/hook" {
			t.Fatalf("%s: %q %v", at, v, err)
		}
	}
	if f.calls != 1 {
		t.Errorf("%d reads within the TTL, want 1", f.calls)
	}
	f.fail = true
	if _, err := s.Secret(context.Background(), "/hook", now.Add(2*time.Minute)); err == nil {
		t.Error("a failed read after the TTL was hidden")
	}
	f.fail = false
	if v, err := s.Secret(context.Background(), "/hook", now.Add(2*time.Minute)); err != nil || v != "v-/hook" || f.calls != 3 {
		t.Errorf("after a failure: %q %v, %d reads", v, err, f.calls)
	}
}
