package dispatch

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
)

// DefaultSecretTTL is how long an SSM secret is cached.
const DefaultSecretTTL = 5 * time.Minute

// SecretSource reads the signing key of a URL target by its name.
type SecretSource interface {
	Secret(ctx context.Context, name string, now time.Time) (string, error)
}

// StaticSecrets are fixed secrets by name (s3q dev, tests).
type StaticSecrets map[string]string

// Secret returns the named secret.
func (s StaticSecrets) Secret(_ context.Context, name string, _ time.Time) (string, error) {
	v, ok := s[name]
	if !ok {
		return "", fmt.Errorf("no secret %q", name)
	}
	return v, nil
}

// SSMGetter is the part of the SSM client dispatch uses: *ssm.Client
// implements it.
type SSMGetter interface {
	GetParameter(ctx context.Context, in *ssm.GetParameterInput, opts ...func(*ssm.Options)) (*ssm.GetParameterOutput, error)
}

var _ SSMGetter = (*ssm.Client)(nil)

// SSMSecrets reads secrets from SSM Parameter Store (SecureString,
// decrypted) and keeps each for TTL, so a warm dispatcher asks once per
// TTL per secret; concurrent misses of one name share one read. A failed
// read is not cached.
type SSMSecrets struct {
	client SSMGetter
	ttl    time.Duration

	mu       sync.Mutex
	cache    map[string]cachedSecret
	inflight map[string]*secretFetch
}

// secretFetch is one GetParameter that concurrent misses of a name share.
type secretFetch struct {
	done  chan struct{}
	value string
	err   error
}

type cachedSecret struct {
	value string
	until time.Time
}

// NewSSMSecrets returns a cache over client; ttl <= 0 means DefaultSecretTTL.
func NewSSMSecrets(client SSMGetter, ttl time.Duration) *SSMSecrets {
	if ttl <= 0 {
		ttl = DefaultSecretTTL
	}
	return &SSMSecrets{client: client, ttl: ttl, cache: map[string]cachedSecret{}, inflight: map[string]*secretFetch{}}
}

// Secret returns the parameter's value, from the cache while it is fresh.
func (s *SSMSecrets) Secret(ctx context.Context, name string, now time.Time) (string, error) {
	s.mu.Lock()
	c, ok := s.cache[name]
	if ok && now.Before(c.until) {
		s.mu.Unlock()
		return c.value, nil
	}
	// Concurrent misses share one read: a cold dispatcher starts many
	// deliveries at once, and SSM throttles GetParameter.
	f, shared := s.inflight[name]
	if !shared {
		f = &secretFetch{done: make(chan struct{})}
		s.inflight[name] = f
	}
	s.mu.Unlock()
	if shared {
		select {
		case <-f.done:
			return f.value, f.err
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	f.value, f.err = s.get(ctx, name)
	s.mu.Lock()
	if f.err == nil {
		s.cache[name] = cachedSecret{value: f.value, until: now.Add(s.ttl)}
	}
	delete(s.inflight, name)
	s.mu.Unlock()
	close(f.done)
	return f.value, f.err
}

func (s *SSMSecrets) get(ctx context.Context, name string) (string, error) {
	out, err := s.client.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(name), WithDecryption: aws.Bool(true)})
	if err != nil {
		return "", fmt.Errorf("get parameter %s: %w", name, err)
	}
	if out.Parameter == nil || aws.ToString(out.Parameter.Value) == "" {
		return "", fmt.Errorf("parameter %s is empty", name)
	}
	return aws.ToString(out.Parameter.Value), nil
}
