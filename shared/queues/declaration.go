package queues

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/s3q/s3q/shared/internal/clip"
	"github.com/s3q/s3q/shared/queue"

	"github.com/s3q/s3q/shared/wire"
)

// Limits of a declaration.
const (
	// defaultMaxQueues is Options.MaxQueues when it is not set.
	defaultMaxQueues = 1000
	// MaxConcurrency is the most max_concurrency a queue may declare:
	// its slots are read in one LIST page.
	MaxConcurrency = 1000
	// DefaultMaxSchedules is a queue's max_schedules when it declares none.
	DefaultMaxSchedules = 100
	// MaxSchedules is the most max_schedules a queue may declare.
	MaxSchedules = 10000
	// defaultCacheFor is Options.CacheFor when it is not set.
	defaultCacheFor = 30 * time.Second
)

type Target = wire.Target

// Declaration is a declared queue: q/{name}/queue.json. Its defaults apply
// to submits that give none and whose task type has none (request > task
// type > queue > global).
type Declaration struct {
	// Name is the queue's name (queue.ValidateQueueName); it is the key's.
	Name string `json:"name"`
	// TTL is the queue's default time to live. Defaults to none.
	TTL *queue.Duration `json:"ttl,omitempty"`
	// TTLFrom is the queue's default ttl_from. Defaults to none (submission).
	TTLFrom queue.TTLFrom `json:"ttl_from,omitempty"`
	// MaxAttempts is the queue's default max_attempts. Defaults to none (3).
	MaxAttempts int `json:"max_attempts,omitempty"`
	// Timeout is the queue's default lease length. Defaults to none (5m).
	Timeout *queue.Duration `json:"timeout,omitempty"`
	// Shards spreads the queue's claim-index markers over this many key
	// ranges (1 to 16). Fixed at the queue's first declaration, kept
	// through a delete. Defaults to the deployment's shards (Options.Shards).
	Shards int `json:"shards,omitempty"`
	// MaxConcurrency is the most tasks of the queue running at once (each
	// holds one of that many slots, q/{queue}/slots/{n}); every claim, pull
	// or push, must take a slot. Defaults to 0: no limit and no slots.
	MaxConcurrency int `json:"max_concurrency,omitempty"`
	// Priority is the queue's default priority of a task, 1 (highest) to
	// 5 (lowest). Defaults to none (3).
	Priority int `json:"priority,omitempty"`
	// MaxPerSecond is the most tasks of the queue started a second, by
	// every claim of every process, pull or push, together
	// (queue.MinPerSecond to queue.MaxPerSecondLimit; fractions allowed).
	// Defaults to none: no limit.
	MaxPerSecond *float64 `json:"max_per_second,omitempty"`
	// Burst is how many tasks may start at once after a quiet spell (1 to
	// queue.MaxBurst); only with MaxPerSecond. Defaults to
	// queue.DefaultBurst(MaxPerSecond): one second's worth, at least 1.
	Burst *int `json:"burst,omitempty"`
	// MaxSchedules is the most schedules that may fire into the queue (1
	// to MaxSchedules): a create past it is refused (schedule.ErrTooMany).
	// Defaults to DefaultMaxSchedules.
	MaxSchedules int `json:"max_schedules,omitempty"`
	// Target, when set, makes the queue a push queue.
	Target *Target `json:"target,omitempty"`
	// AutoDeclared is true for a queue declared by a submit (auto_declare).
	AutoDeclared bool `json:"auto_declared,omitempty"`
	// Paused is true while the queue is paused (Registry.Pause): claims,
	// pull or push, take nothing from it; submits and the sweep go on.
	// PausedAt is when it was paused. Neither is a setting: a
	// declaration's update keeps them.
	Paused    bool       `json:"paused,omitempty"`
	PausedAt  *time.Time `json:"paused_at,omitempty"`
	CreatedAt time.Time  `json:"created_at"`
	UpdatedAt time.Time  `json:"updated_at"`
}

// Settings returns what the queue core needs of d (queue.Settings), for
// the core's calls that take it (Queue.CountQueue, Queue.Stats). d is a
// declaration this package returned, with its shards filled in. Its
// ReadShards is every shard (queue.MaxShards): d alone does not say
// which shards a writer that had not read it used.
func (d Declaration) Settings() queue.Settings {
	return queue.Settings{
		Name: d.Name, Declared: !d.CreatedAt.IsZero(), Shards: d.Shards, ReadShards: queue.MaxShards,
		TTL: d.TTL, TTLFrom: d.TTLFrom, MaxAttempts: d.MaxAttempts, Timeout: d.Timeout,
		MaxConcurrency: d.MaxConcurrency, Priority: d.Priority, Paused: d.Paused, PausedAt: d.PausedAt,
		MaxPerSecond: deref(d.MaxPerSecond), Burst: deref(d.Burst),
	}
}

// deref is *p, or the zero value when p is nil.
func deref[T any](p *T) T {
	var v T
	if p != nil {
		v = *p
	}
	return v
}

// settable returns d with only what a caller may set.
func (d Declaration) settable() Declaration {
	return Declaration{Name: d.Name, TTL: d.TTL, TTLFrom: d.TTLFrom, MaxAttempts: d.MaxAttempts,
		Timeout: d.Timeout, Shards: d.Shards, MaxConcurrency: d.MaxConcurrency, Priority: d.Priority, MaxSchedules: d.MaxSchedules,
		MaxPerSecond: d.MaxPerSecond, Burst: d.Burst, Target: d.Target}
}

var (
	// A function name, or a full or partial ARN, with an optional qualifier.
	reLambdaTarget = regexp.MustCompile(`^(arn:aws[a-zA-Z-]*:lambda:[a-z0-9-]+:[0-9]{12}:function:|[0-9]{12}:function:)?[A-Za-z0-9_-]{1,64}(:(\$LATEST|[A-Za-z0-9_-]{1,128}))?$`)
	// An SSM parameter name or ARN.
	reSSMParameter = regexp.MustCompile(`^(arn:aws[a-zA-Z-]*:ssm:[a-z0-9-]+:[0-9]{12}:parameter/)?[A-Za-z0-9_.\-/]{1,1000}$`)
)

// validate checks the settable fields of d; insecure allows http targets.
// A bad field is a *queue.ValidationError naming it.
func (d *Declaration) validate(insecure bool) error {
	if err := queue.ValidateQueueName(d.Name); err != nil {
		return err
	}
	if d.TTL != nil && d.TTL.Std() <= 0 {
		return invalid("ttl", "must be more than 0 (leave it out for no default)")
	}
	switch d.TTLFrom {
	case "", queue.TTLFromSubmission, queue.TTLFromFirstAttempt:
	default:
		return invalid("ttl_from", "%q is not one of submission, first_attempt", clip.Input(string(d.TTLFrom)))
	}
	if d.MaxAttempts < 0 || d.MaxAttempts > queue.MaxAttemptsLimit {
		return invalid("max_attempts", "must be between 1 and %d (0 or absent: no queue default)", queue.MaxAttemptsLimit)
	}
	if d.Timeout != nil && (d.Timeout.Std() <= 0 || d.Timeout.Std() > queue.MaxLease) {
		return invalid("timeout", "must be more than 0 and at most %s", queue.FormatDuration(queue.MaxLease))
	}
	if d.Shards < 0 || d.Shards > queue.MaxShards {
		return invalid("shards", "must be between 1 and %d (0 or absent: the deployment's); a queue's shards are fixed when it is first declared", queue.MaxShards)
	}
	if d.MaxConcurrency < 0 || d.MaxConcurrency > MaxConcurrency {
		return invalid("max_concurrency", "must be between 1 and %d (0 or absent: no limit)", MaxConcurrency)
	}
	if err := queue.ValidatePriority("priority", d.Priority); err != nil {
		return err
	}
	if err := queue.ValidateRate(d.MaxPerSecond, d.Burst); err != nil {
		return err
	}
	if d.MaxSchedules < 0 || d.MaxSchedules > MaxSchedules {
		return invalid("max_schedules", "must be between 1 and %d (0 or absent: %d)", MaxSchedules, DefaultMaxSchedules)
	}
	if d.Target != nil {
		return ValidateTarget(*d.Target, insecure)
	}
	return nil
}

// ValidateTarget checks a target's form (not whether the deployment lets a queue
// use it: Options.CheckTarget): exactly one of lambda and url; a Lambda
// function name or ARN; an absolute https URL (http too when insecure, as
// in s3q dev) without credentials or fragment, with the SSM parameter name
// of its signing secret. A bad field is a *queue.ValidationError naming
// it (target, target.lambda, target.url, target.secret).
func ValidateTarget(t Target, insecure bool) error {
	switch {
	case t.Lambda == "" && t.URL == "":
		return invalid("target", "give one of target.lambda and target.url")
	case t.Lambda != "" && t.URL != "":
		return invalid("target.url", "give target.lambda or target.url, not both")
	case t.Lambda != "":
		if !reLambdaTarget.MatchString(t.Lambda) {
			return invalid("target.lambda", "%q is not a Lambda function name or ARN", clip.Input(t.Lambda))
		}
		if t.Secret != "" {
			return invalid("target.secret", "is only for target.url; a Lambda target is invoked with IAM")
		}
		return nil
	}
	u, err := url.Parse(t.URL)
	if err != nil || u.Host == "" || u.Opaque != "" {
		return invalid("target.url", "%q is not an absolute URL", clip.Input(t.URL))
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && insecure:
	case u.Scheme == "http":
		return invalid("target.url", "must be https (http only where the deployment allows insecure targets)")
	default:
		return invalid("target.url", "must be https, not %q", clip.Input(u.Scheme))
	}
	if u.User != nil {
		return invalid("target.url", "must not carry credentials; sign with target.secret")
	}
	if u.Fragment != "" || len(t.URL) > 2048 {
		return invalid("target.url", "must have no fragment and be at most 2048 bytes")
	}
	if t.Secret == "" {
		return invalid("target.secret", "is required with target.url: the SSM parameter name of the signing secret")
	}
	if !reSSMParameter.MatchString(t.Secret) || strings.Contains(t.Secret, "//") {
		return invalid("target.secret", "%q is not an SSM parameter name", clip.Input(t.Secret))
	}
	return nil
}

// invalid is a *queue.ValidationError about field.
func invalid(field, format string, args ...any) error {
	return &queue.ValidationError{Field: field, Message: fmt.Sprintf(format, args...), Err: queue.ErrInvalidInput}
}
