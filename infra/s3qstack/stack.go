// Package s3qstack is the CDK stack of one s3q environment: the bucket, one
// Lambda function per folder under functions/, the HTTP API, the EventBridge
// rules that fire sweep-expired and schedule-tick, the event bus for task
// events, log groups and alarms (DESIGN.md §10).
package s3qstack

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2authorizers"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2integrations"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// S3qStackProps configures one environment's stack.
type S3qStackProps struct {
	awscdk.StackProps

	// EnvName names the environment (dev, prod, ...): every resource name
	// carries "s3q-<env>", so environments deploy side by side in one
	// account. Required.
	EnvName string

	// AssetDir is the folder holding <function>.zip for every function
	// (make build writes ../dist). Required.
	AssetDir string

	// Settings are the environment's knobs. Defaults to
	// DefaultSettings(EnvName) when nil.
	Settings *Settings
}

// S3qStack is the built stack with handles the tests and the app use.
type S3qStack struct {
	awscdk.Stack
	Bucket    awss3.Bucket
	Functions map[string]awslambda.Function
	Api       awsapigatewayv2.HttpApi
	Stage     awsapigatewayv2.HttpStage
	EventBus  awsevents.EventBus
}

// MetricNamespace is the CloudWatch namespace of an environment's s3q metrics.
func MetricNamespace(env string) string { return "s3q/" + env }

// DeadLetteredMetric is the metric the dead-letter alarm watches. A metric
// filter on every function's log group turns each JSON log line with a
// numeric field of this name into a data point of that value: the
// sweep-expired function writes one EMF line per task type and sweep,
// counting the Task Dead-Lettered events it delivered (shared/metrics'
// DeadLetteredMetric).
const DeadLetteredMetric = "tasks_dead_lettered_total"

// NewS3qStack builds the stack "s3q-<env>" (id is used as given).
func NewS3qStack(scope constructs.Construct, id string, props *S3qStackProps) (*S3qStack, error) {
	if props == nil {
		return nil, fmt.Errorf("s3qstack: props are required")
	}
	if err := ValidEnvName(props.EnvName); err != nil {
		return nil, err
	}
	settings := DefaultSettings(props.EnvName)
	if props.Settings != nil {
		settings = *props.Settings
	}
	if err := settings.Validate(); err != nil {
		return nil, err
	}
	fns := Functions()
	if err := checkAssets(props.AssetDir, fns); err != nil {
		return nil, err
	}

	sp := props.StackProps
	if sp.Description == nil {
		sp.Description = jsii.String("s3q task queue, environment " + props.EnvName + " (state: one S3 bucket)")
	}
	stack := awscdk.NewStack(scope, jsii.String(id), &sp)
	awscdk.Tags_Of(stack).Add(jsii.String("s3q:env"), jsii.String(props.EnvName), nil)

	b := &builder{stack: stack, env: props.EnvName, s: settings, out: &S3qStack{Stack: stack, Functions: map[string]awslambda.Function{}}}
	b.bucket()
	b.eventBus()
	b.api()
	for _, fn := range fns {
		b.function(fn, props.AssetDir)
	}
	b.deadLetterAlarm()
	b.push()
	b.outputs()
	suppressFindings(b)
	return b.out, nil
}

// checkAssets makes sure every function has its zip before CDK hashes it,
// with a message that says what to run.
func checkAssets(dir string, fns []Function) error {
	if dir == "" {
		return fmt.Errorf("s3qstack: AssetDir is required")
	}
	var missing []string
	for _, fn := range fns {
		if _, err := os.Stat(filepath.Join(dir, fn.Name+".zip")); err != nil {
			missing = append(missing, fn.Name+".zip")
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("s3qstack: %s lacks %s: run `make build` (every functions/<name>/main.go becomes dist/<name>.zip; a function whose main.go does not exist yet cannot be deployed)",
			dir, strings.Join(missing, ", "))
	}
	return nil
}

type builder struct {
	stack      awscdk.Stack
	env        string
	s          Settings
	out        *S3qStack
	accessLogs awslogs.LogGroup
	roles      []awsiam.Role
}

func (b *builder) name(suffix string) string { return "s3q-" + b.env + "-" + suffix }

func (b *builder) removal() awscdk.RemovalPolicy {
	if b.s.Retain() {
		return awscdk.RemovalPolicy_RETAIN
	}
	return awscdk.RemovalPolicy_DESTROY
}

// key prefixes a bucket key with the deployment's S3Q_PREFIX.
func (b *builder) key(k string) string { return b.s.Prefix + k }

func (b *builder) bucket() {
	var prefixFilter *string
	if b.s.Prefix != "" {
		prefixFilter = jsii.String(b.s.Prefix)
	}
	b.out.Bucket = awss3.NewBucket(b.stack, jsii.String("Bucket"), &awss3.BucketProps{
		Versioned:          jsii.Bool(true),
		Encryption:         awss3.BucketEncryption_S3_MANAGED,
		BlockPublicAccess:  awss3.BlockPublicAccess_BLOCK_ALL(),
		EnforceSSL:         jsii.Bool(true),
		MinimumTLSVersion:  jsii.Number(1.2),
		ObjectOwnership:    awss3.ObjectOwnership_BUCKET_OWNER_ENFORCED,
		RemovalPolicy:      b.removal(),
		AutoDeleteObjects:  jsii.Bool(!b.s.Retain()),
		EventBridgeEnabled: jsii.Bool(false),
		LifecycleRules: &[]*awss3.LifecycleRule{
			{
				// Old versions are the task history (GET /tasks/{id}/history).
				Id:                                  jsii.String("noncurrent-versions"),
				Prefix:                              prefixFilter,
				NoncurrentVersionExpiration:         awscdk.Duration_Days(jsii.Number(float64(b.s.NoncurrentVersionDays))),
				ExpiredObjectDeleteMarker:           jsii.Bool(true),
				AbortIncompleteMultipartUploadAfter: awscdk.Duration_Days(jsii.Number(1)),
			},
			{
				// Backstop: the sweep deletes artifacts earlier (DESIGN §6).
				Id:         jsii.String("artifacts"),
				Prefix:     jsii.String(b.key(pArtifacts)),
				Expiration: awscdk.Duration_Days(jsii.Number(float64(b.s.ArtifactDays))),
			},
			{
				// Terminal task records, tagged by the core.
				Id:         jsii.String("terminal-tasks"),
				Prefix:     jsii.String(b.key(pTasks)),
				TagFilters: &map[string]interface{}{TerminalTagKey: TerminalTagValue},
				Expiration: awscdk.Duration_Days(jsii.Number(float64(b.s.TerminalRetentionDays))),
			},
		},
	})
}

func (b *builder) eventBus() {
	b.out.EventBus = awsevents.NewEventBus(b.stack, jsii.String("EventBus"), &awsevents.EventBusProps{
		EventBusName: jsii.String(b.name("events")),
		Description:  jsii.String("s3q task events (Task Expired) of environment " + b.env),
	})
}

func (b *builder) logGroup(id, name string) awslogs.LogGroup {
	return awslogs.NewLogGroup(b.stack, jsii.String(id), &awslogs.LogGroupProps{
		LogGroupName:  jsii.String(name),
		Retention:     retention(b.s.LogRetentionDays),
		RemovalPolicy: b.removal(),
	})
}

func (b *builder) api() {
	b.out.Api = awsapigatewayv2.NewHttpApi(b.stack, jsii.String("Api"), &awsapigatewayv2.HttpApiProps{
		ApiName:            jsii.String(b.name("api")),
		Description:        jsii.String("s3q HTTP API (DESIGN §8), IAM (SigV4) auth on every route"),
		DefaultAuthorizer:  awsapigatewayv2authorizers.NewHttpIamAuthorizer(),
		CreateDefaultStage: jsii.Bool(false),
	})
	b.out.Stage = awsapigatewayv2.NewHttpStage(b.stack, jsii.String("ApiStage"), &awsapigatewayv2.HttpStageProps{
		HttpApi:    b.out.Api,
		StageName:  jsii.String("$default"),
		AutoDeploy: jsii.Bool(true),
		Throttle: &awsapigatewayv2.ThrottleSettings{
			RateLimit:  jsii.Number(float64(b.s.ThrottleRatePerSecond)),
			BurstLimit: jsii.Number(float64(b.s.ThrottleBurst)),
		},
	})
	b.accessLogs = b.logGroup("ApiAccessLogs", "/aws/apigateway/"+b.name("api"))
	format, _ := jsonString(map[string]string{
		"requestId": "$context.requestId", "ip": "$context.identity.sourceIp",
		"caller": "$context.identity.caller", "user": "$context.identity.user",
		"requestTime": "$context.requestTime", "routeKey": "$context.routeKey",
		"status": "$context.status", "latencyMs": "$context.responseLatency",
		"integrationError": "$context.integrationErrorMessage", "authError": "$context.authorizer.error",
	})
	cfnStage := b.out.Stage.Node().DefaultChild().(awsapigatewayv2.CfnStage)
	cfnStage.SetAccessLogSettings(&awsapigatewayv2.CfnStage_AccessLogSettingsProperty{
		DestinationArn: b.accessLogs.LogGroupArn(),
		Format:         jsii.String(format),
	})
}

// function adds one Lambda function with its role, log group, triggers and
// error alarm.
func (b *builder) function(fn Function, assetDir string) {
	id := camel(fn.Name)
	logs := b.logGroup(id+"Logs", "/aws/lambda/"+b.name(fn.Name))

	role := awsiam.NewRole(b.stack, jsii.String(id+"Role"), &awsiam.RoleProps{
		AssumedBy:   awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
		Description: jsii.String("s3q " + b.env + " " + fn.Name + ": the bucket prefixes it touches and its own log group"),
	})
	b.roles = append(b.roles, role)
	// Logs: the function's own log group only (instead of the managed
	// AWSLambdaBasicExecutionRole, which allows every log group).
	logs.GrantWrite(role)
	for _, st := range b.s3Statements(fn) {
		role.AddToPolicy(st)
	}

	timeout := b.s.APITimeoutSeconds
	if fn.Timer {
		timeout = b.s.TimerTimeoutSeconds
	}
	env := map[string]*string{
		"S3Q_BUCKET":    b.out.Bucket.BucketName(),
		"S3Q_PREFIX":    jsii.String(b.s.Prefix),
		"S3Q_SHARDS":    jsii.String(strconv.Itoa(b.s.Shards)),
		"S3Q_LOG_LEVEL": jsii.String(b.s.LogLevel),
		// The EMF metrics (tasks_expired_total, tasks_dead_lettered_total,
		// ...) go where the dead-letter alarm looks, one namespace per
		// environment.
		"S3Q_METRICS_NAMESPACE": jsii.String(MetricNamespace(b.env)),
	}
	if b.s.DefaultTTL != "" {
		env["S3Q_DEFAULT_TTL"] = jsii.String(b.s.DefaultTTL)
	}
	if b.s.Endpoint != "" {
		env["S3Q_ENDPOINT"] = jsii.String(b.s.Endpoint)
	}
	if fn.PutEvents {
		env["S3Q_EVENT_BUS"] = b.out.EventBus.EventBusName()
	}
	props := &awslambda.FunctionProps{
		FunctionName: jsii.String(b.name(fn.Name)),
		Description:  jsii.String("s3q " + fn.Name + " (" + b.env + ")"),
		Runtime:      awslambda.Runtime_PROVIDED_AL2023(),
		Architecture: architecture(b.s.Architecture),
		Handler:      jsii.String("bootstrap"),
		Code:         awslambda.Code_FromAsset(jsii.String(filepath.Join(assetDir, fn.Name+".zip")), nil),
		MemorySize:   jsii.Number(float64(b.s.MemoryMB)),
		Timeout:      awscdk.Duration_Seconds(jsii.Number(float64(timeout))),
		Role:         role,
		LogGroup:     logs,
		Environment:  &env,
	}
	if fn.Timer {
		// A failed run is retried by the next tick, not by Lambda's async
		// retries, which would overlap with it.
		props.RetryAttempts = jsii.Number(0)
		props.MaxEventAge = awscdk.Duration_Seconds(jsii.Number(float64(60 * b.s.TickRateMinutes)))
	}
	f := awslambda.NewFunction(b.stack, jsii.String(id), props)
	b.out.Functions[fn.Name] = f

	if fn.PutEvents {
		b.out.EventBus.GrantPutEventsTo(f, nil)
	}
	if len(fn.Routes) > 0 {
		integ := awsapigatewayv2integrations.NewHttpLambdaIntegration(jsii.String(id+"Integration"), f, nil)
		for _, route := range fn.Routes {
			method, path, _ := strings.Cut(route, " ")
			b.out.Api.AddRoutes(&awsapigatewayv2.AddRoutesOptions{
				Path:        jsii.String(path),
				Methods:     &[]awsapigatewayv2.HttpMethod{awsapigatewayv2.HttpMethod(method)},
				Integration: integ,
			})
		}
	}
	if fn.Timer {
		awsevents.NewRule(b.stack, jsii.String(id+"Tick"), &awsevents.RuleProps{
			RuleName:    jsii.String(b.name(fn.Name + "-tick")),
			Description: jsii.String("fires s3q " + fn.Name + " every tick"),
			Schedule:    awsevents.Schedule_Rate(awscdk.Duration_Minutes(jsii.Number(float64(b.s.TickRateMinutes)))),
			Targets:     &[]awsevents.IRuleTarget{awseventstargets.NewLambdaFunction(f, nil)},
		})
	}

	awslogs.NewMetricFilter(b.stack, jsii.String(id+"DeadLettered"), &awslogs.MetricFilterProps{
		LogGroup:        logs,
		FilterPattern:   awslogs.FilterPattern_NumberValue(jsii.String("$."+DeadLetteredMetric), jsii.String(">"), jsii.Number(0)),
		MetricNamespace: jsii.String(MetricNamespace(b.env)),
		MetricName:      jsii.String(DeadLetteredMetric),
		MetricValue:     jsii.String("$." + DeadLetteredMetric),
	})
	b.alarm(f.MetricErrors(&awscloudwatch.MetricOptions{
		Period:    awscdk.Duration_Minutes(jsii.Number(5)),
		Statistic: jsii.String("Sum"),
	}), id+"ErrorsAlarm", b.name(fn.Name+"-errors"), "s3q "+fn.Name+" ("+b.env+") returned errors")
}

func (b *builder) deadLetterAlarm() {
	metric := awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
		Namespace:  jsii.String(MetricNamespace(b.env)),
		MetricName: jsii.String(DeadLetteredMetric),
		Statistic:  jsii.String("Sum"),
		Period:     awscdk.Duration_Minutes(jsii.Number(5)),
	})
	b.alarm(metric, "DeadLetteredAlarm", b.name("tasks-dead-lettered"),
		"s3q ("+b.env+"): tasks reached failed (the dead-letter state)")
}

func (b *builder) alarm(m awscloudwatch.IMetric, id, name, description string) {
	a := awscloudwatch.NewAlarm(b.stack, jsii.String(id), &awscloudwatch.AlarmProps{
		AlarmName:          jsii.String(name),
		AlarmDescription:   jsii.String(description),
		Metric:             m,
		Threshold:          jsii.Number(1),
		EvaluationPeriods:  jsii.Number(1),
		ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
		TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
	})
	if b.s.AlarmTopicARN != "" {
		a.Node().DefaultChild().(awscloudwatch.CfnAlarm).SetAlarmActions(&[]*string{jsii.String(b.s.AlarmTopicARN)})
	}
}

// s3Statements turns a function's access table into IAM statements: one per
// set of object actions over the keys it applies to, and one ListBucket
// statement on the bucket limited by s3:prefix to the same prefixes.
func (b *builder) s3Statements(fn Function) []awsiam.PolicyStatement {
	byActions := map[string][]string{}
	var listPrefixes []string
	versions := false
	for _, a := range fn.Access {
		var actions []string
		if a.Read {
			actions = append(actions, "s3:GetObject")
		}
		if a.Write {
			actions = append(actions, "s3:PutObject")
			if a.Prefix == pTasks {
				actions = append(actions, "s3:PutObjectTagging")
			}
		}
		if a.Delete {
			actions = append(actions, "s3:DeleteObject")
		}
		if a.Versions {
			actions = append(actions, "s3:GetObjectVersion")
			versions = true
		}
		pattern := b.key(a.Prefix)
		if strings.HasSuffix(a.Prefix, "/") {
			pattern += "*"
		}
		k := strings.Join(actions, ",")
		byActions[k] = append(byActions[k], pattern)
		listPrefixes = append(listPrefixes, pattern)
	}
	keys := make([]string, 0, len(byActions))
	for k := range byActions {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []awsiam.PolicyStatement
	for _, k := range keys {
		var resources []*string
		for _, p := range byActions[k] {
			resources = append(resources, b.out.Bucket.ArnForObjects(jsii.String(p)))
		}
		out = append(out, awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:       jsii.String(sid(k)),
			Actions:   jsii.Strings(strings.Split(k, ",")...),
			Resources: &resources,
		}))
	}
	listActions := []string{"s3:ListBucket"}
	if versions {
		listActions = append(listActions, "s3:ListBucketVersions")
	}
	// StringLikeIfExists, not StringLike: S3 answers a GET of a missing key
	// with 404 only to a caller that may list the bucket, and that check
	// carries no s3:prefix. With StringLike every miss would be a 403 and
	// the core's ErrNotFound paths (unknown task, no config/task_types.json,
	// If-Match on a deleted record) would break. A LIST with a prefix
	// outside the table is still denied.
	out = append(out, awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("ListOwnPrefixes"),
		Actions:   jsii.Strings(listActions...),
		Resources: jsii.Strings(*b.out.Bucket.BucketArn()),
		Conditions: &map[string]interface{}{
			"StringLikeIfExists": map[string]interface{}{"s3:prefix": listPrefixes},
		},
	}))
	return out
}

func (b *builder) outputs() {
	out := func(id, value, desc string) {
		awscdk.NewCfnOutput(b.stack, jsii.String(id), &awscdk.CfnOutputProps{Value: jsii.String(value), Description: jsii.String(desc)})
	}
	out("ApiUrl", *b.out.Stage.Url(), "base URL of the HTTP API (SigV4, service execute-api)")
	out("ApiId", *b.out.Api.ApiId(), "id of the HTTP API (LocalStack URL: http://<id>.execute-api.localhost.localstack.cloud:4566/)")
	out("BucketName", *b.out.Bucket.BucketName(), "the state bucket (S3Q_BUCKET)")
	out("EventBusName", *b.out.EventBus.EventBusName(), "event bus of Task Expired events")
	out("Region", *b.stack.Region(), "region of the stack")
}

// sid makes a statement id from an action list: "s3:GetObject,s3:PutObject"
// becomes "GetObjectPutObject".
func sid(actions string) string {
	var sb strings.Builder
	for _, a := range strings.Split(actions, ",") {
		sb.WriteString(strings.TrimPrefix(a, "s3:"))
	}
	return sb.String()
}

// camel turns "sweep-expired" into "SweepExpired" for construct ids.
func camel(s string) string {
	var sb strings.Builder
	for _, part := range strings.Split(s, "-") {
		if part != "" {
			sb.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return sb.String()
}

func architecture(name string) awslambda.Architecture {
	if name == "x86_64" {
		return awslambda.Architecture_X86_64()
	}
	return awslambda.Architecture_ARM_64()
}

func retention(days int) awslogs.RetentionDays { return retentions[days] }
