package s3qstack

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/jsii-runtime-go"

	"github.com/s3q/s3q/shared/metrics/catalog"
)

// Push delivery: the dispatch function, fired every tick
// like the timers and woken by submit (an asynchronous Invoke) for a task
// due now, delivers the tasks of push queues to their targets. Its role
// may invoke only the Lambda targets named in pushTargets and read only
// the SSM parameters named in pushSecrets; a queue declared with another
// target gets AccessDenied, which fails its deliveries (and the
// delivery-failure alarm says so).

// PushDeliveryFailuresMetric is the metric the delivery-failure alarm
// watches: the dispatch function's EMF line counts the deliveries that
// failed or timed out (shared/metrics' PushDeliveryFailuresMetric).
const PushDeliveryFailuresMetric = catalog.PushDeliveryFailuresTotal

var (
	reLambdaName = regexp.MustCompile(`^(arn:aws[a-zA-Z-]*:lambda:[a-z0-9-]+:[0-9]{12}:function:)?[A-Za-z0-9_-]{1,64}(:[A-Za-z0-9_$-]{1,128})?$`)
	reSSMName    = regexp.MustCompile(`^(arn:aws[a-zA-Z-]*:ssm:[a-z0-9-]+:[0-9]{12}:parameter/)?[A-Za-z0-9_.\-/]+$`)
)

// validatePush checks the push settings (dispatchTimeoutSeconds,
// pushTargets, pushSecrets, pushFailureAlarmThreshold).
func (p Settings) validatePush() []string {
	var errs []string
	if p.DispatchTimeoutSeconds < 60 || p.DispatchTimeoutSeconds > 900 {
		errs = append(errs, fmt.Sprintf("dispatchTimeoutSeconds %d not in [60, 900]", p.DispatchTimeoutSeconds))
	}
	for _, t := range p.PushTargets {
		if !reLambdaName.MatchString(t) {
			errs = append(errs, fmt.Sprintf("pushTargets: %q is not a Lambda function name or ARN", t))
		}
	}
	for _, s := range p.PushSecrets {
		if len(s) > 2048 || !reSSMName.MatchString(s) {
			errs = append(errs, fmt.Sprintf("pushSecrets: %q is not an SSM parameter name or ARN", s))
		}
	}
	if p.PushFailureAlarmThreshold < 1 {
		errs = append(errs, fmt.Sprintf("pushFailureAlarmThreshold %d < 1", p.PushFailureAlarmThreshold))
	}
	return errs
}

// push wires the dispatch function: its timeout, its grants on the
// targets and secrets of the settings and on itself (a retry wakes it),
// submit's wake (S3Q_DISPATCH_FUNCTION and lambda:InvokeFunction), and
// the delivery-failure alarm.
func (b *builder) push() {
	d, submit := b.out.Functions["dispatch"], b.out.Functions["submit"]
	if d == nil || submit == nil {
		return
	}
	d.Node().DefaultChild().(awslambda.CfnFunction).SetTimeout(jsii.Number(float64(b.s.DispatchTimeoutSeconds)))

	submit.AddEnvironment(jsii.String("S3Q_DISPATCH_FUNCTION"), jsii.String(b.name("dispatch")), nil)
	submit.Role().AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("WakeDispatch"),
		Actions:   jsii.Strings("lambda:InvokeFunction"),
		Resources: jsii.Strings(b.lambdaARN(b.name("dispatch"))),
	}))
	invoke := []string{b.lambdaARN(b.name("dispatch"))} // its own retries
	for _, t := range b.s.PushTargets {
		invoke = append(invoke, b.lambdaARN(t))
	}
	d.Role().AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("InvokePushTargets"),
		Actions:   jsii.Strings("lambda:InvokeFunction"),
		Resources: jsii.Strings(invoke...),
	}))
	if len(b.s.PushSecrets) > 0 {
		var arns []string
		for _, s := range b.s.PushSecrets {
			arns = append(arns, b.ssmARN(s))
		}
		d.Role().AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:       jsii.String("ReadPushSecrets"),
			Actions:   jsii.Strings("ssm:GetParameter"),
			Resources: jsii.Strings(arns...),
		}))
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
