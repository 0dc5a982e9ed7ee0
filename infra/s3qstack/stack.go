// Package s3qstack is the CDK stack of one s3q environment: the bucket, one
// Lambda function per folder under functions/, the HTTP API, the EventBridge
// rules that fire sweep-expired and schedule-tick, the event bus for task
// events, log groups and alarms.
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

	"github.com/s3q/s3q/shared/deploy"
	"github.com/s3q/s3q/shared/metrics/catalog"
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
	Dashboard awscloudwatch.Dashboard
}

// MetricNamespace is the CloudWatch namespace of an environment's s3q metrics.
func MetricNamespace(env string) string { return "s3q/" + env }

// DeadLetteredMetric is the metric the dead-letter alarm watches. A metric
// filter on every function's log group turns each JSON log line with a
// numeric field of this name into a data point of that value: the
// sweep-expired function writes one EMF line per task type and sweep,
// counting the Task Dead-Lettered events it delivered (shared/metrics'
// DeadLetteredMetric).
const DeadLetteredMetric = catalog.TasksDeadLetteredTotal

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
	if err := (&builder{env: props.EnvName, s: settings}).checkBindings(fns); err != nil {
		return nil, err
	}

	sp := props.StackProps
	if sp.Description == nil {
		sp.Description = jsii.String("s3q task queue, environment " + props.EnvName + " (state: one S3 bucket)")
	}
	stack := awscdk.NewStack(scope, jsii.String(id), &sp)
	awscdk.Tags_Of(stack).Add(jsii.String("s3q:env"), jsii.String(props.EnvName), nil)

	b := &builder{stack: stack, env: props.EnvName, s: settings, out: &S3qStack{Stack: stack, Functions: map[string]awslambda.Function{}},
		roles: map[string]awsiam.Role{}, wildcards: map[string][]string{}}
	b.bucket()
	b.eventBus()
	b.api()
	for _, fn := range fns {
		b.function(fn, props.AssetDir)
	}
	b.routeThrottles(fns)
	b.eventBusPolicy(fns)
	b.deadLetterAlarm()
	b.sweepIncompleteAlarm()
	b.push(fns)
	b.waitsWake()
	b.dashboard()
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
	roles      map[string]awsiam.Role      // by function name
	wildcards  map[string][]string         // by function name: its object-key resources ending in *
	routes     []awsapigatewayv2.HttpRoute // every route, for the stage's route settings
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
				// Terminal task records and their status markers (failed,
				// expired, cancelled), tagged by the core. A lifecycle
				// filter cannot wildcard the queue in q/{queue}/tasks/, so
				// the rule is on q/ and the tag says what it deletes.
				// Artifacts have no rule of their own for the same reason:
				// the sweep deletes them (its outbox makes sure of it), and
				// an operator may add a rule per queue folder.
				Id:         jsii.String("terminal-tasks"),
				Prefix:     jsii.String(b.key(pQueues)),
				TagFilters: &map[string]interface{}{deploy.TerminalTagKey: deploy.TerminalTagValue},
				Expiration: awscdk.Duration_Days(jsii.Number(float64(b.s.TerminalRetentionDays))),
			},
		},
	})
	// Records change only by conditional writes: whoever
	// writes them, a PUT without If-None-Match or If-Match is refused.
	var records []*string
	for _, p := range ConditionalWriteKeys {
		records = append(records, b.out.Bucket.ArnForObjects(jsii.String(b.key(p))))
	}
	b.out.Bucket.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("RecordsOnlyByConditionalWrites"),
		Effect:     awsiam.Effect_DENY,
		Principals: &[]awsiam.IPrincipal{awsiam.NewAnyPrincipal()},
		Actions:    jsii.Strings(PutObject),
		Resources:  &records,
		Conditions: &map[string]interface{}{
			"Null": map[string]interface{}{"s3:if-none-match": "true", "s3:if-match": "true"},
		},
	}))
}

// ConditionalWriteKeys are the key patterns (relative to S3Q_PREFIX) the
// bucket policy refuses a PutObject on unless it carries If-None-Match or
// If-Match (condition keys s3:if-none-match, s3:if-match): task records,
// dedup pointers, and schedule definitions and states. Every write of
// the core there is conditional except two, which is why the schedule
// pattern is schedules/*.json and not schedules/*: a fire's history entry
// (schedules/{id}/history/{t}, a plain PUT that a repeated fire rewrites
// with the same task) and, on servers that refuse a create-only write on
// a once-deleted key, the re-create of a definition (versitygw; on S3 a
// create after a delete succeeds, so that path answers 403 only in a
// create racing a delete of the same id). Markers, hints and the
// sweep index are plain PUTs of empty objects and are not covered.
var ConditionalWriteKeys = []string{pTasks + "*", pDedup + "*", pSchedules + "*.json"}

func (b *builder) eventBus() {
	b.out.EventBus = awsevents.NewEventBus(b.stack, jsii.String("EventBus"), &awsevents.EventBusProps{
		EventBusName: jsii.String(b.name("events")),
		Description:  jsii.String("s3q task events (Task Expired) of environment " + b.env),
	})
}

// eventBusPolicy denies events:PutEvents on the bus to every principal but
// the roles of the functions that publish (sweep-expired, and tasks for
// the owed event of a retry or purge): IAM grants of
// other principals in the account do not reach it.
func (b *builder) eventBusPolicy(fns []Function) {
	var arns []*string
	for _, fn := range fns {
		if fn.PutEvents {
			arns = append(arns, b.roles[fn.Name].RoleArn())
		}
	}
	b.out.EventBus.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("OnlyThePublishersPutEvents"),
		Effect:     awsiam.Effect_DENY,
		Principals: &[]awsiam.IPrincipal{awsiam.NewAnyPrincipal()},
		Actions:    jsii.Strings("events:PutEvents"),
		Resources:  jsii.Strings(*b.out.EventBus.EventBusArn()),
		Conditions: &map[string]interface{}{
			"ArnNotEquals": map[string]interface{}{"aws:PrincipalArn": arns},
		},
	}))
}

// RouteClass names the throttle a route gets: "batch" for the submit
// function's batch route, "submit" for its other routes, "claim" for the
// claim function's, "wait" for each of the waits function's, "" (the
// stage's default) for the rest.
func RouteClass(fn Function, route string) string {
	switch {
	case fn.Name == "waits":
		return "wait"
	case fn.Name == "submit" && strings.HasSuffix(route, "/batch"):
		return "batch"
	case fn.Name == "submit":
		return "submit"
	case fn.Name == "claim":
		return "claim"
	}
	return ""
}

// routeThrottles gives the submit, batch, claim and wait routes their own
// rate and burst (the stage's RouteSettings), so a flood of one cannot
// use up the others' share of the stage's limit. Only the wait routes
// hold their function (up to maxWaitSeconds); their function's reserved
// concurrency caps how many run at once (see waits).
func (b *builder) routeThrottles(fns []Function) {
	limits := map[string][2]int{
		"submit": {b.s.SubmitThrottleRate, b.s.SubmitThrottleBurst},
		"batch":  {b.s.BatchThrottleRate, b.s.BatchThrottleBurst},
		"claim":  {b.s.ClaimThrottleRate, b.s.ClaimThrottleBurst},
		"wait":   {b.s.WaitThrottleRate, b.s.WaitThrottleBurst},
	}
	settings := map[string]interface{}{}
	for _, fn := range fns {
		for _, route := range fn.Routes {
			if l, ok := limits[RouteClass(fn, route)]; ok {
				settings[route] = map[string]interface{}{"ThrottlingRateLimit": l[0], "ThrottlingBurstLimit": l[1]}
			}
		}
	}
	cfnStage := b.out.Stage.Node().DefaultChild().(awsapigatewayv2.CfnStage)
	cfnStage.SetRouteSettings(settings)
	// A route setting names a route key, which must exist first.
	for _, r := range b.routes {
		b.out.Stage.Node().AddDependency(r)
	}
}

func (b *builder) logGroup(id, name string) awslogs.LogGroup {
	return awslogs.NewLogGroup(b.stack, jsii.String(id), &awslogs.LogGroupProps{
		LogGroupName:  jsii.String(name),
		Retention:     retention(b.s.LogRetentionDays),
		RemovalPolicy: b.removal(),
	})
}

// AccessLogFormat is the JSON line the API stage logs per request: who
// (the SigV4 caller's ARN, account and access key), what (method, path,
// route), and the answer. requestId is also the request_id of the
// function's own log line of the request.
var AccessLogFormat = map[string]string{
	"requestId":            "$context.requestId",
	"callerArn":            "$context.identity.userArn",
	"caller":               "$context.identity.caller",
	"user":                 "$context.identity.user",
	"accountId":            "$context.identity.accountId",
	"accessKey":            "$context.identity.accessKey",
	"ip":                   "$context.identity.sourceIp",
	"requestTime":          "$context.requestTime",
	"method":               "$context.httpMethod",
	"path":                 "$context.path",
	"routeKey":             "$context.routeKey",
	"status":               "$context.status",
	"latencyMs":            "$context.responseLatency",
	"integrationLatencyMs": "$context.integrationLatency",
	"integrationError":     "$context.integrationErrorMessage",
	"authError":            "$context.authorizer.error",
}

func (b *builder) api() {
	b.out.Api = awsapigatewayv2.NewHttpApi(b.stack, jsii.String("Api"), &awsapigatewayv2.HttpApiProps{
		ApiName:            jsii.String(b.name("api")),
		Description:        jsii.String("s3q HTTP API, IAM (SigV4) auth on every route"),
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
	format, _ := jsonString(AccessLogFormat)
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
	b.roles[fn.Name] = role
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
	if len(fn.Routes) > 0 {
		env["S3Q_MAX_WAIT"] = jsii.String(strconv.Itoa(b.s.MaxWaitSeconds) + "s")
	}
	if fn.Name == "waits" && b.s.WaitsPerQueue > 0 {
		env["S3Q_WAITS_PER_QUEUE"] = jsii.String(strconv.Itoa(b.s.WaitsPerQueue))
	}
	if b.s.AutoDeclare {
		env["S3Q_AUTO_DECLARE"] = jsii.String("true")
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
	// Its own share of the account's concurrency (a timer, waits): no
	// flood of other calls can throttle it, and it can take no more
	// (0: none reserved).
	if n := b.s.reservedConcurrency(fn.Name); n > 0 {
		props.ReservedConcurrentExecutions = jsii.Number(float64(n))
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
			b.routes = append(b.routes, *b.out.Api.AddRoutes(&awsapigatewayv2.AddRoutesOptions{
				Path:        jsii.String(path),
				Methods:     &[]awsapigatewayv2.HttpMethod{awsapigatewayv2.HttpMethod(method)},
				Integration: integ,
			})...)
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

// waitsWake lets the waits function wake dispatch as submit does: a task
// it submits that is due now in a push queue (S3Q_DISPATCH_FUNCTION and
// lambda:InvokeFunction on exactly the dispatch function).
func (b *builder) waitsWake() {
	w, d := b.out.Functions["waits"], b.out.Functions["dispatch"]
	if w == nil || d == nil {
		return
	}
	w.AddEnvironment(jsii.String("S3Q_DISPATCH_FUNCTION"), jsii.String(b.name("dispatch")), nil)
	w.Role().AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("WakeDispatch"),
		Actions:   jsii.Strings("lambda:InvokeFunction"),
		Resources: jsii.Strings(b.lambdaARN(b.name("dispatch"))),
	}))
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

// SweepIncompleteMetric is the EMF metric sweep-expired writes after each
// run: 1 when the run stopped before it had done everything due (its time
// budget ran out, or a request failed), else 0. It is on the sweep's line
// (shared/metrics' Sweep), whose only dimension is service=s3q.
const SweepIncompleteMetric = catalog.SweepIncomplete

// sweepIncompleteAlarm fires when a sweep in the last 5 minutes left work
// for the next one: expiries, events and lease reclaims are then late.
func (b *builder) sweepIncompleteAlarm() {
	metric := awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
		Namespace:     jsii.String(MetricNamespace(b.env)),
		MetricName:    jsii.String(SweepIncompleteMetric),
		DimensionsMap: &map[string]*string{"service": jsii.String("s3q")},
		Statistic:     jsii.String("Maximum"),
		Period:        awscdk.Duration_Minutes(jsii.Number(5)),
	})
	b.alarm(metric, "SweepIncompleteAlarm", b.name("sweep-incomplete"),
		"s3q ("+b.env+"): a sweep did not finish what was due (time budget or errors); the next one carries on")
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

// s3Statements turns a function's access table into IAM statements: one
// per set of object actions over the keys it applies to, one ListBucket
// statement on the bucket limited by s3:prefix to the prefixes it lists,
// and one ListBucketVersions statement likewise when it lists versions.
// It notes the function's wildcard resources for the exact IAM5
// suppressions (nag.go).
func (b *builder) s3Statements(fn Function) []awsiam.PolicyStatement {
	byActions := map[string][]string{}
	listed := map[string][]string{}
	for _, a := range fn.Access {
		if a.AutoDeclare && !b.s.AutoDeclare {
			continue // a submit to an undeclared queue is a 404 here
		}
		var actions []string
		for _, act := range a.Actions {
			switch {
			case bucketActions[act] && a.Prefix == pQueues:
				// The queues' folders: exactly q/ (a delimited LIST), not
				// every key below it.
				listed[act] = append(listed[act], b.key(a.Prefix))
			case bucketActions[act]:
				listed[act] = append(listed[act], b.key(a.Prefix)+"*")
			default:
				actions = append(actions, act)
			}
		}
		if len(actions) == 0 {
			continue
		}
		sort.Strings(actions)
		pattern := b.key(a.Prefix)
		if a.Prefix == "" || strings.HasSuffix(a.Prefix, "/") {
			pattern += "*"
		}
		k := strings.Join(actions, ",")
		byActions[k] = append(byActions[k], pattern)
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
			// A wildcard over the whole deployment (an empty prefix) is
			// never suppressed: it stays an IAM5 finding.
			if strings.Contains(p, "*") && p != b.key("*") {
				b.wildcards[fn.Name] = append(b.wildcards[fn.Name], p)
			}
		}
		out = append(out, awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:       jsii.String(sid(k)),
			Actions:   jsii.Strings(strings.Split(k, ",")...),
			Resources: &resources,
		}))
	}
	// StringLikeIfExists, not StringLike: S3 answers a GET of a missing key
	// with 404 only to a caller that may list the bucket, and that check
	// carries no s3:prefix. With StringLike every miss would be a 403 and
	// the core's ErrNotFound paths (unknown task, no config/task_types.json,
	// If-Match on a deleted record) would break. A LIST with a prefix
	// outside the table is still denied. A function that lists nothing
	// gets ListBucket only without a prefix (Null s3:prefix).
	listCond := map[string]interface{}{"Null": map[string]interface{}{"s3:prefix": "true"}}
	if p := listed[ListBucket]; len(p) > 0 {
		listCond = map[string]interface{}{"StringLikeIfExists": map[string]interface{}{"s3:prefix": p}}
	}
	out = append(out, awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("ListOwnPrefixes"),
		Actions:    jsii.Strings(ListBucket),
		Resources:  jsii.Strings(*b.out.Bucket.BucketArn()),
		Conditions: &listCond,
	}))
	if p := listed[ListBucketVersions]; len(p) > 0 {
		out = append(out, awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:        jsii.String("ListOwnVersions"),
			Actions:    jsii.Strings(ListBucketVersions),
			Resources:  jsii.Strings(*b.out.Bucket.BucketArn()),
			Conditions: &map[string]interface{}{"StringLike": map[string]interface{}{"s3:prefix": p}},
		}))
	}
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
	out("DashboardUrl", "https://console.aws.amazon.com/cloudwatch/home?region="+*b.stack.Region()+"#dashboards:name="+DashboardName(b.env),
		"the CloudWatch dashboard of this environment")
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
