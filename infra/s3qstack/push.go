package s3qstack

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/jsii-runtime-go"

	"github.com/s3q/s3q/shared/metrics/catalog"
)

// Push delivery: the dispatch function, fired every tick like the timers
// and woken by submit (an asynchronous Invoke, at most one per queue and
// second per container) for a task due within a minute, delivers the
// tasks of push queues to their targets, with at most
// dispatchReservedConcurrency runs at once. pushBindings say which
// targets each queue may declare: the tasks function (PUT /queues) and
// dispatch both get them (S3Q_PUSH_BINDINGS) with the stack's own
// functions (S3Q_OWN_FUNCTIONS, never a target), so a declaration naming
// another target is refused (400) and one made before the bindings
// changed is not delivered; dispatch's role may invoke only the bound
// functions (and itself, for its hand-offs and retries) and read only
// the bound parameters.

// PushDeliveryFailuresMetric is the metric the delivery-failure alarm
// watches: the dispatch function's EMF line counts the deliveries that
// failed or timed out (shared/metrics' PushDeliveryFailuresMetric).
const PushDeliveryFailuresMetric = catalog.PushDeliveryFailuresTotal

var (
	reLambdaName = regexp.MustCompile(`^(arn:aws[a-zA-Z-]*:lambda:[a-z0-9-]+:[0-9]{12}:function:)?[A-Za-z0-9_-]{1,64}(:[A-Za-z0-9_$-]{1,128})?$`)
	reSSMName    = regexp.MustCompile(`^(arn:aws[a-zA-Z-]*:ssm:[a-z0-9-]+:[0-9]{12}:parameter/)?[A-Za-z0-9_.\-/]+$`)
)

var reQueueName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`) // a queue name, as the API takes it

// validatePush checks the push settings (dispatchTimeoutSeconds,
// pushBindings, dispatchReservedConcurrency, pushConcurrency,
// pushFailureAlarmThreshold).
func (p Settings) validatePush() []string {
	var errs []string
	if p.DispatchTimeoutSeconds < 60 || p.DispatchTimeoutSeconds > 900 {
		errs = append(errs, fmt.Sprintf("dispatchTimeoutSeconds %d not in [60, 900]", p.DispatchTimeoutSeconds))
	}
	for _, q := range sortedKeys(p.PushBindings) {
		b := p.PushBindings[q]
		if !reQueueName.MatchString(q) {
			errs = append(errs, fmt.Sprintf("pushBindings: %q is not a queue name", q))
		}
		if len(b.Lambda)+len(b.Secrets) == 0 {
			errs = append(errs, fmt.Sprintf("pushBindings.%s binds nothing: give lambda or secrets", q))
		}
		for _, t := range b.Lambda {
			if !reLambdaName.MatchString(t) {
				errs = append(errs, fmt.Sprintf("pushBindings.%s.lambda: %q is not a Lambda function name or ARN", q, t))
			}
		}
		for _, s := range b.Secrets {
			if len(s) > 2048 || !reSSMName.MatchString(s) {
				errs = append(errs, fmt.Sprintf("pushBindings.%s.secrets: %q is not an SSM parameter name or ARN", q, s))
			}
		}
	}
	if p.DispatchReservedConcurrency < 0 {
		errs = append(errs, fmt.Sprintf("dispatchReservedConcurrency %d < 0 (0: none reserved)", p.DispatchReservedConcurrency))
	}
	if p.PushConcurrency < 1 || p.PushConcurrency > 1000 {
		errs = append(errs, fmt.Sprintf("pushConcurrency %d not in [1, 1000]", p.PushConcurrency))
	}
	if p.PushFailureAlarmThreshold < 1 {
		errs = append(errs, fmt.Sprintf("pushFailureAlarmThreshold %d < 1", p.PushFailureAlarmThreshold))
	}
	return errs
}

// checkBindings refuses bindings that name a function of the stack: no
// s3q function may be a push target (dispatch would invoke itself, or an
// API function, with a task's payload).
func (b *builder) checkBindings(fns []Function) error {
	var errs []string
	for _, q := range sortedKeys(b.s.PushBindings) {
		for _, t := range b.s.PushBindings[q].Lambda {
			for _, fn := range fns {
				if functionName(t) == b.name(fn.Name) {
					errs = append(errs, fmt.Sprintf("pushBindings.%s.lambda: %q is the stack's own %s function; no s3q function can be a push target", q, t, fn.Name))
				}
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("settings: %s", strings.Join(errs, "; "))
	}
	return nil
}

// functionName is the name of a function named or given by ARN, without
// its qualifier.
func functionName(t string) string {
	if i := strings.LastIndex(t, "function:"); i >= 0 {
		t = t[i+len("function:"):]
	}
	name, _, _ := strings.Cut(t, ":")
	return name
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// push wires the dispatch function: its timeout and reserved concurrency
// (function.go), its grants on the bound targets and secrets and on
// itself (hand-offs and retries wake it), the bindings and the stack's
// own functions in the environment of dispatch and tasks (which checks a
// URL target's secret at declaration, so it may read the bound
// parameters too), submit's wake (S3Q_DISPATCH_FUNCTION and
// lambda:InvokeFunction), and the delivery-failure alarm.
func (b *builder) push(fns []Function) {
	d, submit, tasks := b.out.Functions["dispatch"], b.out.Functions["submit"], b.out.Functions["tasks"]
	if d == nil || submit == nil || tasks == nil {
		return
	}
	d.Node().DefaultChild().(awslambda.CfnFunction).SetTimeout(jsii.Number(float64(b.s.DispatchTimeoutSeconds)))
	bindings, _ := json.Marshal(b.s.PushBindings)
	var own []string
	for _, fn := range fns {
		own = append(own, b.name(fn.Name))
	}
	for _, f := range []awslambda.Function{d, tasks} {
		f.AddEnvironment(jsii.String("S3Q_PUSH_BINDINGS"), jsii.String(string(bindings)), nil)
		f.AddEnvironment(jsii.String("S3Q_OWN_FUNCTIONS"), jsii.String(strings.Join(own, ",")), nil)
	}
	d.AddEnvironment(jsii.String("S3Q_PUSH_CONCURRENCY"), jsii.String(strconv.Itoa(b.s.PushConcurrency)), nil)
	var targets, secrets []string
	for _, q := range sortedKeys(b.s.PushBindings) {
		for _, t := range b.s.PushBindings[q].Lambda {
			if !slices.Contains(targets, t) {
				targets = append(targets, t)
			}
		}
		for _, s := range b.s.PushBindings[q].Secrets {
			if !slices.Contains(secrets, s) {
				secrets = append(secrets, s)
			}
		}
	}

	submit.AddEnvironment(jsii.String("S3Q_DISPATCH_FUNCTION"), jsii.String(b.name("dispatch")), nil)
	submit.Role().AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("WakeDispatch"),
		Actions:   jsii.Strings("lambda:InvokeFunction"),
		Resources: jsii.Strings(b.lambdaARN(b.name("dispatch"))),
	}))
	invoke := []string{b.lambdaARN(b.name("dispatch"))} // its own hand-offs and retries
	for _, t := range targets {
		invoke = append(invoke, b.lambdaARN(t))
	}
	d.Role().AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("InvokePushTargets"),
		Actions:   jsii.Strings("lambda:InvokeFunction"),
		Resources: jsii.Strings(invoke...),
	}))
	if len(secrets) > 0 {
		var arns []string
		for _, s := range secrets {
			arns = append(arns, b.ssmARN(s))
		}
		for _, f := range []awslambda.Function{d, tasks} {
			f.Role().AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
				Sid:       jsii.String("ReadPushSecrets"),
				Actions:   jsii.Strings("ssm:GetParameter"),
				Resources: jsii.Strings(arns...),
			}))
		}
	}

	logs, ok := b.stack.Node().TryFindChild(jsii.String("DispatchLogs")).(awslogs.LogGroup)
	if !ok {
		panic("s3qstack: the dispatch function has no log group DispatchLogs")
	}
	mf := awslogs.NewMetricFilter(b.stack, jsii.String("DispatchDeliveryFailures"), &awslogs.MetricFilterProps{
		LogGroup:        logs,
		FilterPattern:   awslogs.FilterPattern_NumberValue(jsii.String("$."+PushDeliveryFailuresMetric), jsii.String(">"), jsii.Number(0)),
		MetricNamespace: jsii.String(MetricNamespace(b.env)),
		MetricName:      jsii.String(PushDeliveryFailuresMetric),
		MetricValue:     jsii.String("$." + PushDeliveryFailuresMetric),
	})
	mf.Node().AddDependency(d)
	a := awscloudwatch.NewAlarm(b.stack, jsii.String("PushDeliveryFailuresAlarm"), &awscloudwatch.AlarmProps{
		AlarmName:        jsii.String(b.name("push-delivery-failures")),
		AlarmDescription: jsii.String("s3q (" + b.env + "): push deliveries failed or timed out"),
		Metric: awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
			Namespace: jsii.String(MetricNamespace(b.env)), MetricName: jsii.String(PushDeliveryFailuresMetric),
			Statistic: jsii.String("Sum"), Period: awscdk.Duration_Minutes(jsii.Number(5)),
		}),
		Threshold:          jsii.Number(float64(b.s.PushFailureAlarmThreshold)),
		EvaluationPeriods:  jsii.Number(1),
		ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
		TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
	})
	if b.s.AlarmTopicARN != "" {
		a.Node().DefaultChild().(awscloudwatch.CfnAlarm).SetAlarmActions(&[]*string{jsii.String(b.s.AlarmTopicARN)})
	}
}

// lambdaARN returns the ARN of a function named (NAME or NAME:ALIAS) or
// given by ARN: exactly that function, no wildcard.
func (b *builder) lambdaARN(nameOrARN string) string {
	if strings.HasPrefix(nameOrARN, "arn:") {
		return nameOrARN
	}
	return *awscdk.Stack_Of(b.stack).FormatArn(&awscdk.ArnComponents{
		Service: jsii.String("lambda"), Resource: jsii.String("function"), ResourceName: jsii.String(nameOrARN),
		ArnFormat: awscdk.ArnFormat_COLON_RESOURCE_NAME,
	})
}

// ssmARN returns the ARN of an SSM parameter named or given by ARN.
func (b *builder) ssmARN(nameOrARN string) string {
	if strings.HasPrefix(nameOrARN, "arn:") {
		return nameOrARN
	}
	return *awscdk.Stack_Of(b.stack).FormatArn(&awscdk.ArnComponents{
		Service: jsii.String("ssm"), Resource: jsii.String("parameter"), ResourceName: jsii.String(strings.TrimPrefix(nameOrARN, "/")),
		ArnFormat: awscdk.ArnFormat_SLASH_RESOURCE_NAME,
	})
}
