package s3qstack

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/constructs-go/constructs/v10"

	"github.com/s3q/s3q/shared/deploy"
)

// Settings are the per-environment knobs of one stack. They come from CDK
// context (see SettingsFromContext): cdk.json documents every default, and
// `cdk deploy -c s3q:<field>=<value>` overrides one for a single run.
type Settings struct {
	// MemoryMB is the memory of every function. Defaults to 256.
	MemoryMB int `json:"memoryMb"`

	// APITimeoutSeconds is the timeout of the functions behind the HTTP API
	// (submit, claim, tasks, schedules). API Gateway gives up after 30 s, so
	// anything above 29 only wastes money. Defaults to 29.
	APITimeoutSeconds int `json:"apiTimeoutSeconds"`

	// TimerTimeoutSeconds is the timeout of sweep-expired and schedule-tick.
	// A sweep-expired run stays, while work is near due, until a second
	// before the next minute's run (lambdafn.DefaultSweepStay, bounded
	// by this less 3s); the 10s past the minute leave its last pass time
	// to end, and runs do not pile up: the sweep's reserved concurrency
	// of 1 has Lambda retry the next run a moment later rather than
	// overlap it, and a run's stay is counted from its scheduled time.
	// Defaults to 70.
	TimerTimeoutSeconds int `json:"timerTimeoutSeconds"`

	// LogRetentionDays is how long function and API access logs are kept;
	// one of CloudWatch's allowed values (1, 3, 5, 7, 14, 30, 60, 90, ...).
	// Defaults to 14 in dev, 90 in prod, 30 elsewhere.
	LogRetentionDays int `json:"logRetentionDays"`

	// RetainData keeps the bucket and the log groups when the stack is
	// deleted. When false the bucket is emptied and deleted with the stack
	// (autoDeleteObjects). Defaults to true in prod, false elsewhere.
	RetainData *bool `json:"retainData,omitempty"`

	// DefaultTTL is the global default TTL of a task without one
	// (S3Q_DEFAULT_TTL: "90s", "30m", "1h", "7d"); empty means none.
	// Defaults to "".
	DefaultTTL string `json:"defaultTtl"`

	// TickRateMinutes is how often sweep-expired and schedule-tick run.
	// Defaults to 1.
	TickRateMinutes int `json:"tickRateMinutes"`

	// NoncurrentVersionDays is how long an old version of an object (the
	// task history) is kept after it was replaced. Defaults to 30.
	NoncurrentVersionDays int `json:"noncurrentVersionDays"`

	// TerminalRetentionDays is how long a task record tagged terminal
	// (deploy.TerminalTag) is kept. Defaults to 30.
	TerminalRetentionDays int `json:"terminalRetentionDays"`

	// ArtifactDays was the lifecycle backstop for artifacts of layout 1
	// (one artifacts/ prefix). Since layout 2 artifacts are under each
	// queue's folder, which a lifecycle filter cannot wildcard: the sweep
	// deletes them (docs/layout.md). Kept so that settings files stay
	// valid; it has no effect. Defaults to 1.
	ArtifactDays int `json:"artifactDays"`

	// Shards is S3Q_SHARDS: index prefixes per queue. Every process of a
	// deployment must agree on it. Defaults to 1.
	Shards int `json:"shards"`

	// Prefix is S3Q_PREFIX: a key prefix for everything s3q stores, so the
	// bucket can hold other data. Empty or ending in "/". Defaults to "".
	Prefix string `json:"prefix"`

	// Endpoint is S3Q_ENDPOINT, an S3 endpoint other than AWS's (LocalStack:
	// http://localhost.localstack.cloud:4566). Defaults to "" (AWS).
	Endpoint string `json:"endpoint"`

	// Architecture of the functions: "arm64" (Graviton, cheaper per ms) or
	// "x86_64" (for LocalStack on an x86 machine, which cannot run arm64
	// binaries). scripts/build-functions must build the same (GOARCH).
	// Defaults to arm64.
	Architecture string `json:"architecture"`

	// LogLevel is S3Q_LOG_LEVEL (debug, info, warn, error). Defaults to info.
	LogLevel string `json:"logLevel"`

	// ThrottleRatePerSecond and ThrottleBurst limit the HTTP API's default
	// stage. Defaults to 100 and 200.
	ThrottleRatePerSecond int `json:"throttleRatePerSecond"`
	ThrottleBurst         int `json:"throttleBurst"`

	// SweepReservedConcurrency and TickReservedConcurrency are the
	// reserved concurrent executions of sweep-expired and schedule-tick:
	// capacity no other function of the account can take, so a flood of
	// API calls never throttles (and, after MaxEventAge, drops) a sweep
	// or a tick; it also caps them (1: runs never overlap). 0 reserves
	// none (an account whose concurrency limit is 10 cannot reserve any).
	// Defaults to 1 and 1.
	SweepReservedConcurrency int `json:"sweepReservedConcurrency"`
	TickReservedConcurrency  int `json:"tickReservedConcurrency"`

	// WaitsReservedConcurrency is the reserved concurrent executions of
	// the waits function, which serves the held waits (POST
	// /queues/{queue}/tasks/wait and /claim/wait): a wait holds its
	// invocation up to maxWaitSeconds, so without a cap 50 waits a
	// second would hold 1,250 executions, over the account's default
	// 1,000. Reserved, it is both the most waits running at once (the
	// next one is throttled, and only waits are) and capacity no other
	// function can take from them. At least 1. Defaults to 20.
	WaitsReservedConcurrency int `json:"waitsReservedConcurrency"`

	// WaitsPerQueue is S3Q_WAITS_PER_QUEUE of the waits function: the
	// most waits one queue may hold at once (the next is 429
	// too_many_waits at once, holding nothing), so that one queue's
	// callers cannot hold all waitsReservedConcurrency. 0 is no bound.
	// At most waitsReservedConcurrency. Defaults to 5.
	WaitsPerQueue int `json:"waitsPerQueue"`

	// WaitThrottleRate and WaitThrottleBurst are the throttle of each
	// wait route (requests per second and burst), apart from the other
	// routes'. A wait past its queue's waitsPerQueue is refused in
	// milliseconds, so the routes' rate need not be below what the
	// reserved concurrency can hold: one queue's callers at a request a
	// second no longer use it up. Defaults to 10 and 20.
	WaitThrottleRate  int `json:"waitThrottleRate"`
	WaitThrottleBurst int `json:"waitThrottleBurst"`

	// AutoDeclare is S3Q_AUTO_DECLARE of the functions: the first submit
	// to an undeclared queue declares it. Off, a submit to an undeclared
	// queue is 404 queue_not_found and the submit and waits functions
	// may not write queues/ at all. Defaults to false.
	AutoDeclare bool `json:"autoDeclare"`

	// SubmitThrottleRate/Burst, BatchThrottleRate/Burst and
	// ClaimThrottleRate/Burst are the per-route throttles (requests per
	// second and burst) of POST submit, the batch submit and the claim
	// route, apart from the stage's. None of them holds its function
	// for a wait (waits have their own routes and function), so each
	// bounds its function's concurrency at about rate × its latency.
	// Defaults to 50/100, 5/10 and 10/20.
	SubmitThrottleRate  int `json:"submitThrottleRate"`
	SubmitThrottleBurst int `json:"submitThrottleBurst"`
	BatchThrottleRate   int `json:"batchThrottleRate"`
	BatchThrottleBurst  int `json:"batchThrottleBurst"`
	ClaimThrottleRate   int `json:"claimThrottleRate"`
	ClaimThrottleBurst  int `json:"claimThrottleBurst"`

	// MaxWaitSeconds is S3Q_MAX_WAIT of the HTTP functions: the longest
	// "wait" of a submit or a claim long-poll; a longer one is a 400
	// naming wait. At most apiTimeoutSeconds - 2, so a wait can answer
	// before its function times out. Defaults to 25.
	MaxWaitSeconds int `json:"maxWaitSeconds"`

	// AlarmTopicARN, when set, is an SNS topic every alarm notifies.
	// Defaults to "" (alarms without actions).
	AlarmTopicARN string `json:"alarmTopicArn"`

	// Push delivery (push.go).
	// DispatchTimeoutSeconds is the dispatch function's timeout: a run
	// delivers until nothing is due or this time is nearly over, and only
	// claims a task whose delivery lease (the queue's timeout, default 1m)
	// ends before. Defaults to 300.
	DispatchTimeoutSeconds int `json:"dispatchTimeoutSeconds"`
	// PushBindings say which push targets each queue may declare: by
	// queue name, the Lambda functions (names, name:alias or ARNs) it may
	// target and the SSM parameters (names or ARNs) whose secret may sign
	// its URL target. A declaration naming anything else is refused (400
	// naming target); dispatch may invoke these functions and read these
	// parameters and no others, and the tasks function (which checks a
	// URL target's secret when a queue is declared) may read the
	// parameters' metadata. No function of the stack may be bound.
	// Defaults to none: no queue may have a target.
	PushBindings deploy.Bindings `json:"pushBindings"`
	// DispatchReservedConcurrency is the dispatch function's reserved
	// concurrency: the most dispatch runs at once, whatever submits wake
	// (0: none reserved, and no cap). Defaults to 10.
	DispatchReservedConcurrency int `json:"dispatchReservedConcurrency"`
	// PushConcurrency is S3Q_PUSH_CONCURRENCY: how many deliveries of one
	// push queue without a max_concurrency a dispatch run makes at once.
	// Defaults to 64.
	PushConcurrency int `json:"pushConcurrency"`
	// PushFailureAlarmThreshold is how many failed or timed-out deliveries
	// in 5 minutes raise the delivery-failure alarm. Defaults to 5.
	PushFailureAlarmThreshold int `json:"pushFailureAlarmThreshold"`
}

// reservedConcurrency is the reserved concurrency of a function (the
// timers, dispatch among them, and waits), 0 for none.
func (s Settings) reservedConcurrency(fn string) int {
	switch fn {
	case "sweep-expired":
		return s.SweepReservedConcurrency
	case "schedule-tick":
		return s.TickReservedConcurrency
	case "dispatch":
		return s.DispatchReservedConcurrency
	case "waits":
		return s.WaitsReservedConcurrency
	}
	return 0
}

// Retain reports whether data outlives the stack.
func (s Settings) Retain() bool { return s.RetainData != nil && *s.RetainData }

// DefaultSettings returns the built-in settings of an environment; cdk.json
// repeats them so they are visible where they are changed.
func DefaultSettings(env string) Settings {
	retain := env == "prod"
	days := 30
	switch env {
	case "dev":
		days = 14
	case "prod":
		days = 90
	}
	return Settings{
		MemoryMB:              256,
		APITimeoutSeconds:     29,
		TimerTimeoutSeconds:   70,
		LogRetentionDays:      days,
		RetainData:            &retain,
		TickRateMinutes:       1,
		NoncurrentVersionDays: 30,
		TerminalRetentionDays: 30,
		ArtifactDays:          1,
		Shards:                1,
		LogLevel:              "info",
		Architecture:          "arm64",
		ThrottleRatePerSecond: 100,
		ThrottleBurst:         200,

		SweepReservedConcurrency:    1,
		TickReservedConcurrency:     1,
		SubmitThrottleRate:          50,
		SubmitThrottleBurst:         100,
		BatchThrottleRate:           5,
		BatchThrottleBurst:          10,
		ClaimThrottleRate:           10,
		ClaimThrottleBurst:          20,
		WaitsReservedConcurrency:    20,
		WaitsPerQueue:               5,
		WaitThrottleRate:            10,
		WaitThrottleBurst:           20,
		MaxWaitSeconds:              25,
		DispatchTimeoutSeconds:      300,
		PushBindings:                deploy.Bindings{},
		DispatchReservedConcurrency: 10,
		PushConcurrency:             64,
		PushFailureAlarmThreshold:   5,
	}
}

// Context keys read by SettingsFromContext and the app.
const (
	// ContextEnv names the environment: the stack is s3q-<env>.
	ContextEnv = "env"
	// ContextSettings holds a JSON object of Settings per environment name.
	ContextSettings = "s3q:settings"
	// ContextAssetDir is the folder holding <function>.zip. Defaults to ../dist.
	ContextAssetDir = "s3q:assetDir"
	// ContextOverridePrefix prefixes a single-setting override, as in
	// `-c s3q:memoryMb=512`.
	ContextOverridePrefix = "s3q:"
)

var envNameRE = regexp.MustCompile(`^[a-z][a-z0-9-]{0,15}$`)

// ValidEnvName reports whether env can name a stack and every resource in it
// (lowercase letters, digits and '-', at most 16 characters).
func ValidEnvName(env string) error {
	if !envNameRE.MatchString(env) {
		return fmt.Errorf("environment name %q must match %s", env, envNameRE)
	}
	return nil
}

// SettingsFromContext resolves the settings of env, most specific last:
// DefaultSettings(env), then context "s3q:settings".<env> (cdk.json), then
// single overrides "s3q:<jsonField>" (from -c on the command line).
func SettingsFromContext(node constructs.Node, env string) (Settings, error) {
	s := DefaultSettings(env)
	if raw := node.TryGetContext(strPtr(ContextSettings)); raw != nil {
		all, ok := raw.(map[string]interface{})
		if !ok {
			return s, fmt.Errorf("context %s must be an object of environments", ContextSettings)
		}
		if perEnv, ok := all[env]; ok {
			b, err := json.Marshal(perEnv)
			if err != nil {
				return s, err
			}
			if err := strictUnmarshal(b, &s); err != nil {
				return s, fmt.Errorf("context %s.%s: %w", ContextSettings, env, err)
			}
		}
	}
	overrides := map[string]interface{}{}
	for _, field := range jsonFields() {
		v := node.TryGetContext(strPtr(ContextOverridePrefix + field.name))
		if v == nil {
			continue
		}
		if str, ok := v.(string); ok && field.kind != "string" {
			// -c gives strings; a setting that is a number or a bool is parsed.
			parsed, err := parseScalar(str, field.kind)
			if err != nil {
				return s, fmt.Errorf("context %s%s: %w", ContextOverridePrefix, field.name, err)
			}
			v = parsed
		}
		overrides[field.name] = v
	}
	if len(overrides) > 0 {
		b, _ := json.Marshal(overrides)
		if err := strictUnmarshal(b, &s); err != nil {
			return s, fmt.Errorf("context overrides: %w", err)
		}
	}
	return s, s.Validate()
}

// Validate checks the settings before they reach a template.
func (s Settings) Validate() error {
	var errs []string
	check := func(ok bool, format string, args ...interface{}) {
		if !ok {
			errs = append(errs, fmt.Sprintf(format, args...))
		}
	}
	check(s.MemoryMB >= 128 && s.MemoryMB <= 10240, "memoryMb %d not in [128, 10240]", s.MemoryMB)
	check(s.APITimeoutSeconds >= 1 && s.APITimeoutSeconds <= 30, "apiTimeoutSeconds %d not in [1, 30]", s.APITimeoutSeconds)
	check(s.TimerTimeoutSeconds >= 1 && s.TimerTimeoutSeconds <= 900, "timerTimeoutSeconds %d not in [1, 900]", s.TimerTimeoutSeconds)
	_, okRetention := retentions[s.LogRetentionDays]
	check(okRetention, "logRetentionDays %d is not a CloudWatch retention", s.LogRetentionDays)
	check(s.TickRateMinutes >= 1, "tickRateMinutes %d < 1", s.TickRateMinutes)
	check(s.NoncurrentVersionDays >= 1, "noncurrentVersionDays %d < 1", s.NoncurrentVersionDays)
	check(s.TerminalRetentionDays >= 1, "terminalRetentionDays %d < 1", s.TerminalRetentionDays)
	check(s.ArtifactDays >= 1, "artifactDays %d < 1", s.ArtifactDays)
	check(s.Shards >= 1 && s.Shards <= 16, "shards %d not in [1, 16]", s.Shards)
	check(s.Prefix == "" || (strings.HasSuffix(s.Prefix, "/") && !strings.HasPrefix(s.Prefix, "/") && !strings.ContainsAny(s.Prefix, "*?")),
		"prefix %q must be empty or end in / (no leading /, no wildcards)", s.Prefix)
	check(map[string]bool{"debug": true, "info": true, "warn": true, "error": true}[s.LogLevel], "logLevel %q not one of debug, info, warn, error", s.LogLevel)
	check(s.Architecture == "arm64" || s.Architecture == "x86_64", "architecture %q not arm64 or x86_64", s.Architecture)
	check(s.Endpoint == "" || strings.HasPrefix(s.Endpoint, "http://") || strings.HasPrefix(s.Endpoint, "https://"), "endpoint %q is not a URL", s.Endpoint)
	check(s.ThrottleRatePerSecond >= 1 && s.ThrottleBurst >= 1, "throttle rate and burst must be >= 1")
	check(s.RetainData != nil, "retainData must be set")
	check(s.SweepReservedConcurrency >= 0 && s.TickReservedConcurrency >= 0, "sweepReservedConcurrency and tickReservedConcurrency must be >= 0 (0: none reserved)")
	for _, t := range [][3]interface{}{
		{"submitThrottle", s.SubmitThrottleRate, s.SubmitThrottleBurst},
		{"batchThrottle", s.BatchThrottleRate, s.BatchThrottleBurst},
		{"claimThrottle", s.ClaimThrottleRate, s.ClaimThrottleBurst},
		{"waitThrottle", s.WaitThrottleRate, s.WaitThrottleBurst},
	} {
		check(t[1].(int) >= 1 && t[2].(int) >= 1, "%sRate and %sBurst must be >= 1", t[0], t[0])
	}
	check(s.WaitsReservedConcurrency >= 1, "waitsReservedConcurrency %d < 1: held waits must run capped, apart from the other functions", s.WaitsReservedConcurrency)
	check(s.WaitsPerQueue >= 0 && s.WaitsPerQueue <= s.WaitsReservedConcurrency,
		"waitsPerQueue %d not in [0, waitsReservedConcurrency = %d]", s.WaitsPerQueue, s.WaitsReservedConcurrency)
	check(s.MaxWaitSeconds >= 1 && s.MaxWaitSeconds <= s.APITimeoutSeconds-2,
		"maxWaitSeconds %d not in [1, apiTimeoutSeconds-2 = %d]", s.MaxWaitSeconds, s.APITimeoutSeconds-2)
	errs = append(errs, s.validatePush()...)
	if len(errs) > 0 {
		return fmt.Errorf("settings: %s", strings.Join(errs, "; "))
	}
	return nil
}

// retentions maps the day counts CloudWatch Logs accepts to CDK's names.
var retentions = map[int]awslogs.RetentionDays{
	1: awslogs.RetentionDays_ONE_DAY, 3: awslogs.RetentionDays_THREE_DAYS, 5: awslogs.RetentionDays_FIVE_DAYS,
	7: awslogs.RetentionDays_ONE_WEEK, 14: awslogs.RetentionDays_TWO_WEEKS, 30: awslogs.RetentionDays_ONE_MONTH,
	60: awslogs.RetentionDays_TWO_MONTHS, 90: awslogs.RetentionDays_THREE_MONTHS, 120: awslogs.RetentionDays_FOUR_MONTHS,
	150: awslogs.RetentionDays_FIVE_MONTHS, 180: awslogs.RetentionDays_SIX_MONTHS, 365: awslogs.RetentionDays_ONE_YEAR,
	400: awslogs.RetentionDays_THIRTEEN_MONTHS, 545: awslogs.RetentionDays_EIGHTEEN_MONTHS, 731: awslogs.RetentionDays_TWO_YEARS,
	1096: awslogs.RetentionDays_THREE_YEARS, 1827: awslogs.RetentionDays_FIVE_YEARS, 2192: awslogs.RetentionDays_SIX_YEARS,
	2557: awslogs.RetentionDays_SEVEN_YEARS, 2922: awslogs.RetentionDays_EIGHT_YEARS, 3288: awslogs.RetentionDays_NINE_YEARS,
	3653: awslogs.RetentionDays_TEN_YEARS,
}

type jsonField struct{ name, kind string }

// jsonFields lists the JSON names of Settings with their kinds.
func jsonFields() []jsonField {
	return []jsonField{
		{"memoryMb", "int"}, {"apiTimeoutSeconds", "int"}, {"timerTimeoutSeconds", "int"},
		{"logRetentionDays", "int"}, {"retainData", "bool"}, {"defaultTtl", "string"},
		{"tickRateMinutes", "int"}, {"noncurrentVersionDays", "int"}, {"terminalRetentionDays", "int"},
		{"artifactDays", "int"}, {"shards", "int"}, {"prefix", "string"}, {"logLevel", "string"},
		{"endpoint", "string"}, {"architecture", "string"},
		{"throttleRatePerSecond", "int"}, {"throttleBurst", "int"}, {"alarmTopicArn", "string"},
		{"sweepReservedConcurrency", "int"}, {"tickReservedConcurrency", "int"},
		{"submitThrottleRate", "int"}, {"submitThrottleBurst", "int"}, {"batchThrottleRate", "int"},
		{"batchThrottleBurst", "int"}, {"claimThrottleRate", "int"}, {"claimThrottleBurst", "int"},
		{"maxWaitSeconds", "int"},
		{"waitsReservedConcurrency", "int"}, {"waitsPerQueue", "int"}, {"waitThrottleRate", "int"}, {"waitThrottleBurst", "int"},
		{"autoDeclare", "bool"},
		{"dispatchTimeoutSeconds", "int"}, {"pushBindings", "object"},
		{"dispatchReservedConcurrency", "int"}, {"pushConcurrency", "int"},
		{"pushFailureAlarmThreshold", "int"},
	}
}

func parseScalar(s, kind string) (interface{}, error) {
	switch kind {
	case "int":
		return strconv.Atoi(s)
	case "bool":
		return strconv.ParseBool(s)
	case "object":
		var v interface{}
		err := json.Unmarshal([]byte(s), &v)
		return v, err
	case "list":
		out := []interface{}{}
		for _, v := range strings.Split(s, ",") {
			if v = strings.TrimSpace(v); v != "" {
				out = append(out, v)
			}
		}
		return out, nil
	}
	return s, nil
}

func strictUnmarshal(b []byte, v interface{}) error {
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

func strPtr(s string) *string { return &s }
