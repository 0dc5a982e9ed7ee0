package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/s3q/s3q/shared/deploy"
	"github.com/s3q/s3q/shared/internal/clip"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
)

// ParseBindings reads bindings from JSON: {"orders": {"lambda":
// ["orders-handler"], "secrets": ["/s3q/orders/signing"]}}. Queue names,
// function names and parameter names are checked.
func ParseBindings(b []byte) (deploy.Bindings, error) {
	var out deploy.Bindings
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&out); err != nil {
		return nil, fmt.Errorf("push bindings: %w", err)
	}
	if out == nil {
		out = deploy.Bindings{}
	}
	for name, bd := range out {
		if err := queue.ValidateQueueName(name); err != nil {
			return nil, fmt.Errorf("push bindings: %w", err)
		}
		for _, fn := range bd.Lambda {
			if err := queues.ValidateTarget(queues.Target{Lambda: fn}, false); err != nil {
				return nil, fmt.Errorf("push bindings: queue %s: %w", name, err)
			}
		}
		for _, s := range bd.Secrets {
			if err := queues.ValidateTarget(queues.Target{URL: "https://x/", Secret: s}, false); err != nil {
				return nil, fmt.Errorf("push bindings: queue %s: %w", name, err)
			}
		}
	}
	return out, nil
}

// Policy decides which push targets a queue may use. It is checked when a
// queue is declared (Check, queues.Options.CheckTarget) and
// again by the dispatcher before it delivers (the bindings and own
// functions alone): a declaration made
// before the bindings changed is not delivered.
type Policy struct {
	// Bindings, when not nil, are the only targets a queue may use: a
	// Lambda function or a secret not bound to the queue is refused, and a
	// queue with no binding may have no target. Nil allows every target
	// (s3q dev without --push-binding).
	Bindings deploy.Bindings
	// Own are the deployment's own functions (names): never a target,
	// whatever the bindings say, so dispatch cannot be made to invoke
	// itself or any other s3q function with a task's payload.
	Own []string
	// Secrets, when set, checks a URL target's secret at declaration: it
	// must exist and be readable.
	Secrets SecretChecker
}

// SecretChecker checks that a signing secret exists and can be read,
// without returning it.
type SecretChecker interface {
	CheckSecret(ctx context.Context, name string) error
}

// allows says whether queue may use target under the bindings and the
// own functions (a nil Policy allows everything); a refusal is a
// *queue.ValidationError naming target.
func (p *Policy) allows(queueName string, t queues.Target) error {
	if p == nil {
		return nil
	}
	if t.Lambda != "" && slices.Contains(p.Own, FunctionName(t.Lambda)) {
		return refuse("target", "%q is a function of this s3q deployment; it cannot be a push target", clip.Input(t.Lambda))
	}
	if p.Bindings == nil {
		return nil
	}
	b, ok := p.Bindings[queueName]
	switch {
	case !ok:
		return refuse("target", "the deployment binds no push target to queue %s (pushBindings)", queueName)
	case t.Lambda != "" && !slices.Contains(b.Lambda, t.Lambda):
		return refuse("target", "function %q is not bound to queue %s (pushBindings)", clip.Input(t.Lambda), queueName)
	case t.URL != "" && !slices.Contains(b.Secrets, t.Secret):
		return refuse("target", "secret %q is not bound to queue %s (pushBindings)", clip.Input(t.Secret), queueName)
	}
	return nil
}

// Check is the declaration's check (queues.Options.CheckTarget): the
// bindings and the own functions, as the dispatcher checks them, then that a URL target's secret exists and can be read (400 naming
// target.secret), so that a wrong secret is refused at once instead of
// failing every delivery until the task is dead-lettered.
func (p *Policy) Check(ctx context.Context, queueName string, t queues.Target) error {
	if err := p.allows(queueName, t); err != nil {
		return err
	}
	if p == nil || p.Secrets == nil || t.URL == "" {
		return nil
	}
	if err := p.Secrets.CheckSecret(ctx, t.Secret); err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		return refuse("target.secret", "%q cannot be read: %v", clip.Input(t.Secret), err)
	}
	return nil
}

func refuse(field, format string, args ...any) error {
	return &queue.ValidationError{Field: field, Message: fmt.Sprintf(format, args...), Err: queue.ErrInvalidInput}
}

// FunctionName returns the function name of a Lambda target: the name
// without the ARN or account before it and without a qualifier after it.
func FunctionName(target string) string {
	if i := strings.LastIndex(target, "function:"); i >= 0 {
		target = target[i+len("function:"):]
	}
	name, _, _ := strings.Cut(target, ":")
	return name
}

// CheckSecret says whether the named secret exists.
func (s StaticSecrets) CheckSecret(_ context.Context, name string) error {
	if _, ok := s[name]; !ok {
		return fmt.Errorf("no secret %q", name)
	}
	return nil
}

// SSMCheck checks secrets in SSM Parameter Store: GetParameter without
// decryption, so the check never holds the secret's value. It proves the
// parameter exists and the caller's role may read it (the stack grants the
// declaring function the same parameters as dispatch: the bound ones).
type SSMCheck struct {
	Client SSMGetter
}

// CheckSecret reads the parameter's metadata.
func (s SSMCheck) CheckSecret(ctx context.Context, name string) error {
	out, err := s.Client.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(name), WithDecryption: aws.Bool(false)})
	if err != nil {
		return fmt.Errorf("get parameter %s: %w", name, err)
	}
	if out.Parameter == nil || aws.ToString(out.Parameter.Value) == "" {
		return fmt.Errorf("parameter %s is empty", name)
	}
	return nil
}
