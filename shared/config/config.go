// Package config reads the configuration of an s3q process (a Lambda
// function, the dev server, the CLI) from environment variables, checks
// it, and builds what it describes: the store, the queue, the artifact
// service and the event publisher.
//
//	S3Q_BUCKET             the state bucket (required)
//	S3Q_PREFIX             key prefix for everything s3q stores: empty or ending in "/"
//	S3Q_ENDPOINT           S3 endpoint override, such as http://127.0.0.1:7070 (path-style);
//	                       S3 only, never EventBridge
//	AWS_REGION             the bucket's region (else the SDK's default chain)
//	S3Q_DEFAULT_TTL        global default time to live: "90s", "30m", "1h", "7d"; empty or 0 for none
//	S3Q_SHARDS             index prefixes per queue, 1-16; every process must agree (default 1)
//	S3Q_LOG_LEVEL          debug, info, warn or error (default info)
//	S3Q_EVENT_BUS          EventBridge bus for the sweep's Task Expired and Task Dead-Lettered
//	                       events; none: the events go to the log
//	S3Q_ARTIFACT_TTL       lifetime of a presigned artifact URL before the task's deadline
//	                       bounds it (default 1h)
//	S3Q_MAX_ARTIFACT_BYTES the largest artifact an upload URL accepts, in bytes (default
//	                       104857600, 100 MiB; at most 5 GiB, S3's limit for one PUT)
//	S3Q_METRICS_NAMESPACE  CloudWatch namespace of the EMF metrics (default s3q; the stack
//	                       sets s3q/<env>)
//	S3Q_MAX_WAIT           the longest "wait" a submit or a claim long-poll may ask for; a
//	                       longer one is refused with a 400 naming wait (default 25s;
//	                       the stack sets its maxWaitSeconds)
//	S3Q_WAITS_PER_QUEUE    the most waits (submit-waits and claim long-polls) one queue
//	                       may hold at once; the next is 429 too_many_waits (default 0:
//	                       no bound; the stack sets its waitsPerQueue)
//	S3Q_AUTO_DECLARE       true: the first submit to an undeclared queue declares it; false
//	                       (default): it is 404 queue_not_found
//	S3Q_MAX_QUEUES         most queues the deployment declares (default 1000)
//	S3Q_ALLOW_INSECURE_TARGETS  true: http:// push targets are accepted (s3q dev); default false
//	S3Q_PUSH_BINDINGS      which push targets each queue may declare, JSON: {"orders":
//	                       {"lambda": ["orders-fn"], "secrets": ["/s3q/orders"]}}
//	                       (package dispatch). Unset: no queue may have a target, unless
//	                       S3Q_ALLOW_INSECURE_TARGETS (s3q dev), where any target goes
//	S3Q_OWN_FUNCTIONS      the deployment's own functions, comma-separated: never a push
//	                       target (the stack sets them; the running function, from
//	                       AWS_LAMBDA_FUNCTION_NAME, and S3Q_DISPATCH_FUNCTION are added)
//	S3Q_PUSH_CONCURRENCY   deliveries of one push queue without a max_concurrency that one
//	                       dispatch run makes at once (default 64)
//	S3Q_DISPATCH_FUNCTION  the dispatch function submit wakes for tasks due now (none: the
//	                       minute rule alone delivers)
//	S3Q_LAMBDA_ENDPOINT    Lambda endpoint override for push targets and the wake, such as
//	                       http://127.0.0.1:9001
//
// Per-task-type defaults (ttl, ttl_from, max_attempts, timeout) come from
// config/task_types.json in the bucket (package tasktypes), not from the
// environment.
package config

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/s3q/s3q/shared/artifacts"
	"github.com/s3q/s3q/shared/deploy"
	"github.com/s3q/s3q/shared/dispatch"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
)

// The environment variables FromEnv reads.
const (
	EnvBucket           = "S3Q_BUCKET"
	EnvPrefix           = "S3Q_PREFIX"
	EnvEndpoint         = "S3Q_ENDPOINT"
	EnvRegion           = "AWS_REGION"
	EnvDefaultTTL       = "S3Q_DEFAULT_TTL"
	EnvShards           = "S3Q_SHARDS"
	EnvLogLevel         = "S3Q_LOG_LEVEL"
	EnvEventBus         = "S3Q_EVENT_BUS"
	EnvArtifactTTL      = "S3Q_ARTIFACT_TTL"
	EnvMaxArtifactBytes = "S3Q_MAX_ARTIFACT_BYTES"
	EnvMetricsNamespace = "S3Q_METRICS_NAMESPACE"
	EnvMaxWait          = "S3Q_MAX_WAIT"
	EnvWaitsPerQueue    = "S3Q_WAITS_PER_QUEUE"
	EnvAutoDeclare      = "S3Q_AUTO_DECLARE"
	EnvMaxQueues        = "S3Q_MAX_QUEUES"
	EnvInsecureTargets  = "S3Q_ALLOW_INSECURE_TARGETS"
	EnvPushBindings     = "S3Q_PUSH_BINDINGS"
	EnvOwnFunctions     = "S3Q_OWN_FUNCTIONS"
	EnvPushConcurrency  = "S3Q_PUSH_CONCURRENCY"
	// EnvPushQueues is no longer read: a process that finds it set
	// refuses to start (push queues are declared: PUT /queues/{queue}).
	EnvPushQueues       = "S3Q_PUSH_QUEUES"
	EnvDispatchFunction = "S3Q_DISPATCH_FUNCTION"
	EnvLambdaEndpoint   = "S3Q_LAMBDA_ENDPOINT"
)

// DefaultMaxWait is MaxWait when S3Q_MAX_WAIT is not set: under API
// Gateway's 30 s limit with room for the answer.
const DefaultMaxWait = 25 * time.Second

// MaxMaxWait is the most S3Q_MAX_WAIT may be: Lambda's longest run.
const MaxMaxWait = 15 * time.Minute

// MaxShards is the most claim-index shards a queue, and so a deployment's default, may use.
const MaxShards = queue.MaxShards

// Config is the configuration of one s3q process.
type Config struct {
	// Bucket is the S3 bucket holding all state. Required.
	Bucket string
	// Prefix is put before every key, so the bucket can hold other data.
	// Empty or ending in "/". Defaults to "".
	Prefix string
	// Endpoint overrides the S3 endpoint (a local or S3-compatible server);
	// requests then use path-style addressing. Defaults to AWS S3.
	Endpoint string
	// Region is the bucket's region. Defaults to the AWS SDK's chain.
	Region string
	// DefaultTTL is the global default time to live of a task. Defaults to
	// none (tasks never expire unless asked).
	DefaultTTL time.Duration
	// Shards is the number of index prefixes per queue. Defaults to 1.
	Shards int
	// LogLevel is the lowest level logged. Defaults to info.
	LogLevel slog.Level
	// EventBus is the EventBridge bus the sweep publishes Task Expired
	// and Task Dead-Lettered events to. Defaults to none: the events go to
	// the log.
	EventBus string
	// ArtifactTTL is artifact_ttl: how long a presigned artifact URL lives
	// before the task's deadline bounds it. Defaults to 1h.
	ArtifactTTL time.Duration
	// MaxArtifactBytes is the largest artifact an upload URL accepts: an
	// upload request declares its size, at most this, and the URL is
	// signed for exactly that Content-Length. Defaults to 100 MiB.
	MaxArtifactBytes int64
	// MetricsNamespace is the CloudWatch namespace of the EMF metrics.
	// Defaults to "s3q".
	MetricsNamespace string
	// MaxWait is the longest "wait" of a submit or a claim long-poll the
	// API accepts; a longer one is a 400 invalid_input naming wait. Each
	// second of a wait holds a function invocation (and its memory) for
	// that second. Defaults to DefaultMaxWait (25s).
	MaxWait time.Duration
	// WaitsPerQueue is the most waits one queue may hold at once
	// (api.Options.WaitsPerQueue). Defaults to 0: no bound.
	WaitsPerQueue int
	// AutoDeclare lets the first submit to an undeclared queue declare it.
	// Defaults to false: such a submit is 404 queue_not_found.
	AutoDeclare bool
	// MaxQueues is the most queues the deployment declares. Defaults to
	// 1,000.
	MaxQueues int
	// AllowInsecureTargets accepts http:// push targets. Defaults to false.
	AllowInsecureTargets bool
	// PushBindings are the push targets each queue may declare (see
	// PushPolicy). Defaults to nil: unset.
	PushBindings deploy.Bindings
	// OwnFunctions are the deployment's own functions, never a push
	// target: S3Q_OWN_FUNCTIONS, the running function
	// (AWS_LAMBDA_FUNCTION_NAME) and DispatchFunction.
	OwnFunctions []string
	// DispatchMaxInFlight is how many deliveries of one push queue
	// without a max_concurrency a dispatch run makes at once (a queue with
	// one makes up to that many). Defaults to 0: dispatch.DefaultMaxInFlight (64).
	DispatchMaxInFlight int
	// CheckTarget is the declaration's check of a push target
	// (queues.Options.CheckTarget). Not read from the environment: the
	// process sets it (lambdafn.Build, from PushPolicy). Defaults to none.
	CheckTarget func(ctx context.Context, queue string, target queues.Target) error
	// DispatchFunction is the dispatch function the submit function wakes
	// (asynchronous Invoke) for a task due now. Defaults to none.
	DispatchFunction string
	// LambdaEndpoint overrides the Lambda endpoint (a local endpoint
	// speaking the Invoke protocol). Defaults to AWS Lambda.
	LambdaEndpoint string
}

// FieldError is one invalid environment variable.
type FieldError struct {
	Var     string // the variable, such as "S3Q_SHARDS"
	Message string // what is wrong and what would be right
}

// Error returns the variable and what is wrong with it.
func (e *FieldError) Error() string { return e.Var + " " + e.Message }

// FromEnv reads the configuration from getenv (os.Getenv in a process, a
// map lookup in a test) and checks it. Every problem is reported at once,
// as a *FieldError each, joined in one error beginning "config: ".
func FromEnv(getenv func(string) string) (Config, error) {
	r := &envReader{getenv: getenv}
	c := Config{
		Bucket:   r.get(EnvBucket),
		Prefix:   r.getenv(EnvPrefix),
		Endpoint: r.get(EnvEndpoint),
		Region:   r.get(EnvRegion),
		EventBus: r.get(EnvEventBus),
		Shards:   1,

		DispatchFunction: r.get(EnvDispatchFunction),
		LambdaEndpoint:   r.get(EnvLambdaEndpoint),

		ArtifactTTL:      artifacts.DefaultTTL,
		MaxArtifactBytes: artifacts.DefaultMaxBytes,
		MetricsNamespace: "s3q",
		MaxWait:          DefaultMaxWait,
	}
	r.readPlaces(&c)
	r.readDurations(&c)
	r.readLimits(&c)
	if len(r.errs) > 0 {
		return Config{}, fmt.Errorf("config: %w", errors.Join(r.errs...))
	}
	return c, nil
}

// envReader reads configuration variables and collects what is wrong
// with them, in the order read.
type envReader struct {
	getenv func(string) string
	errs   []error
}

// get returns variable v, trimmed.
func (r *envReader) get(v string) string { return strings.TrimSpace(r.getenv(v)) }

// bad records what is wrong with variable v.
func (r *envReader) bad(v, format string, args ...any) {
	r.errs = append(r.errs, &FieldError{Var: v, Message: fmt.Sprintf(format, args...)})
}

// readPlaces checks where the state and the functions are: the bucket,
// its key prefix, the S3 and Lambda endpoints; and reads the static push
// queues.
func (r *envReader) readPlaces(c *Config) {
	switch {
	case c.Bucket == "":
		r.bad(EnvBucket, "is required: the name of the bucket s3q keeps its state in")
	case !validBucket(c.Bucket):
		r.bad(EnvBucket, "%q is not a bucket name: 3-63 of a-z 0-9 . -, starting and ending with a letter or digit", c.Bucket)
	}
	if c.Prefix != "" && (!strings.HasSuffix(c.Prefix, "/") || strings.HasPrefix(c.Prefix, "/") || strings.Contains(c.Prefix, "..") || strings.ContainsFunc(c.Prefix, isControl)) {
		r.bad(EnvPrefix, "%q must end in \"/\", not start with one, and hold no \"..\" or control characters (e.g. \"s3q/\")", c.Prefix)
	}
	r.checkEndpoint(EnvEndpoint, c.Endpoint, "http://127.0.0.1:7070")
	r.checkEndpoint(EnvLambdaEndpoint, c.LambdaEndpoint, "http://127.0.0.1:9001")
	if r.get(EnvPushQueues) != "" {
		r.bad(EnvPushQueues, "is no longer read: declare each push queue with its target (PUT /queues/{queue}) and bind the target to it (S3Q_PUSH_BINDINGS)")
	}
	if s := r.get(EnvPushBindings); s != "" {
		b, err := dispatch.ParseBindings([]byte(s))
		if err != nil {
			r.bad(EnvPushBindings, "%v", err)
		} else {
			c.PushBindings = b
		}
	}
	for _, fn := range append(strings.Split(r.get(EnvOwnFunctions), ","), r.get("AWS_LAMBDA_FUNCTION_NAME"), c.DispatchFunction) {
		if fn = strings.TrimSpace(fn); fn != "" && !slices.Contains(c.OwnFunctions, dispatch.FunctionName(fn)) {
			c.OwnFunctions = append(c.OwnFunctions, dispatch.FunctionName(fn))
		}
	}
}

// PushPolicy is the deployment's push policy: PushBindings (when unset,
// none, so that no queue may have a target, unless AllowInsecureTargets,
// as in s3q dev, where any may), OwnFunctions never a target, and URL
// targets' secrets checked at declaration by secrets (when not nil).
func (c Config) PushPolicy(secrets dispatch.SecretChecker) *dispatch.Policy {
	b := c.PushBindings
	if b == nil && !c.AllowInsecureTargets {
		b = deploy.Bindings{}
	}
	return &dispatch.Policy{Bindings: b, Own: c.OwnFunctions, Secrets: secrets}
}

// checkEndpoint reports variable v when its value s is set and is not an
// http(s) URL with a host, such as example.
func (r *envReader) checkEndpoint(v, s, example string) {
	if s == "" {
		return
	}
	if u, err := url.Parse(s); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		r.bad(v, "%q is not an endpoint URL such as %s", s, example)
	}
}

// readDurations reads the default task TTL, the artifact TTL and the
// longest synchronous wait.
func (r *envReader) readDurations(c *Config) {
	if s := r.get(EnvDefaultTTL); s != "" {
		d, err := queue.ParseDuration(s)
		switch {
		case err != nil:
			r.bad(EnvDefaultTTL, "%q is not a duration such as 90s, 30m, 1h or 7d", s)
		case d < 0:
			r.bad(EnvDefaultTTL, "%q must not be negative (0 or empty means no default)", s)
		default:
			c.DefaultTTL = d
		}
	}
	if s := r.get(EnvArtifactTTL); s != "" {
		d, err := queue.ParseDuration(s)
		switch {
		case err != nil:
			r.bad(EnvArtifactTTL, "%q is not a duration such as 15m, 1h or 1d", s)
		case d <= 0:
			r.bad(EnvArtifactTTL, "%q must be more than 0 (empty means %s)", s, queue.FormatDuration(artifacts.DefaultTTL))
		default:
			c.ArtifactTTL = d
		}
	}
	if s := r.get(EnvMaxWait); s != "" {
		d, err := queue.ParseDuration(s)
		switch {
		case err != nil:
			r.bad(EnvMaxWait, "%q is not a duration such as 20s", s)
		case d <= 0 || d > MaxMaxWait:
			r.bad(EnvMaxWait, "%q must be more than 0 and at most %s (empty means %s)", s, queue.FormatDuration(MaxMaxWait), queue.FormatDuration(DefaultMaxWait))
		default:
			c.MaxWait = d
		}
	}
	if s := r.get(EnvWaitsPerQueue); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 || n > 1000 {
			r.bad(EnvWaitsPerQueue, "%q must be a whole number from 0 (no bound) to 1000", s)
		} else {
			c.WaitsPerQueue = n
		}
	}
}

// readLimits reads the artifact size limit, the metrics namespace, the
// shard count, the switches, the queue limit and the log level.
func (r *envReader) readLimits(c *Config) {
	if s := r.get(EnvMaxArtifactBytes); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 1 || n > artifacts.MaxPutBytes {
			r.bad(EnvMaxArtifactBytes, "%q is not a number of bytes from 1 to %d (empty means %d, 100 MiB)", s, artifacts.MaxPutBytes, artifacts.DefaultMaxBytes)
		} else {
			c.MaxArtifactBytes = n
		}
	}
	if s := r.get(EnvMetricsNamespace); s != "" {
		if !validNamespace(s) {
			r.bad(EnvMetricsNamespace, "%q is not a CloudWatch namespace: 1-255 of A-Z a-z 0-9 . - _ / # : and space, not starting with \"AWS/\" (e.g. s3q/prod)", s)
		} else {
			c.MetricsNamespace = s
		}
	}
	if s := r.get(EnvShards); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxShards {
			r.bad(EnvShards, "%q is not a number of shards from 1 to %d", s, MaxShards)
		} else {
			c.Shards = n
		}
	}
	for _, b := range []struct {
		env string
		to  *bool
	}{{EnvAutoDeclare, &c.AutoDeclare}, {EnvInsecureTargets, &c.AllowInsecureTargets}} {
		if s := r.get(b.env); s != "" {
			v, err := strconv.ParseBool(s)
			if err != nil {
				r.bad(b.env, "%q is not true or false", s)
			}
			*b.to = v
		}
	}
	if s := r.get(EnvPushConcurrency); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > queues.MaxConcurrency {
			r.bad(EnvPushConcurrency, "%q is not a number of deliveries from 1 to %d", s, queues.MaxConcurrency)
		} else {
			c.DispatchMaxInFlight = n
		}
	}
	if s := r.get(EnvMaxQueues); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			r.bad(EnvMaxQueues, "%q is not a number of queues, 1 or more", s)
		} else {
			c.MaxQueues = n
		}
	}
	if s := r.get(EnvLogLevel); s != "" {
		if err := c.LogLevel.UnmarshalText([]byte(s)); err != nil {
			r.bad(EnvLogLevel, "%q is not one of debug, info, warn, error", s)
		}
	}
}

// validBucket checks an S3 bucket name, loosely: what S3 itself allows.
func validBucket(name string) bool {
	if len(name) < 3 || len(name) > 63 {
		return false
	}
	for i, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
		case (r == '-' || r == '.') && i > 0 && i < len(name)-1:
		default:
			return false
		}
	}
	return true
}

// validNamespace checks a CloudWatch metric namespace.
func validNamespace(ns string) bool {
	if len(ns) > 255 || strings.HasPrefix(ns, "AWS/") {
		return false
	}
	for _, r := range ns {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case strings.ContainsRune(".-_/#: ", r):
		default:
			return false
		}
	}
	return true
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }
