package s3qstack

import (
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// The dispatch function may invoke exactly the Lambda targets of the
// settings and read exactly their SSM parameters; submit may invoke
// dispatch and is told its name; a rule fires it every tick; an alarm
// watches delivery failures; cdk-nag finds nothing unsuppressed.
func TestPushDeliveryGrantsOnlyTheNamedTargetsAndSecrets(t *testing.T) {
	dir, err := os.MkdirTemp("", "s3q-infra-push-")
	if err != nil {
		t.Fatal(err)
	}
	if err := writeDummyZips(dir); err != nil {
		t.Fatal(err)
	}
	outdir, _ := os.MkdirTemp("", "s3q-infra-push-out-")
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(outdir)})
	s := DefaultSettings("stage")
	s.PushTargets = []string{"orders-worker", "arn:aws:lambda:eu-west-1:123456789012:function:billing:live"}
	s.PushSecrets = []string{"/s3q/hooks/orders"}
	st, err := NewS3qStack(app, "s3q-stage", &S3qStackProps{EnvName: "stage", AssetDir: dir, Settings: &s})
	if err != nil {
		t.Fatal(err)
	}
	awscdk.Aspects_Of(app).Add(cdknag.NewAwsSolutionsChecks(nil), nil)
	tpl := assertions.Template_FromStack(st.Stack, nil)
	f := &fixture{stack: st, template: tpl, json: *tpl.ToJSON()}

	var invoke, getParam []string
	for _, stmt := range f.statementsOf(t, "dispatch") {
		for _, a := range list(stmt["Action"]) {
			switch a {
			case "lambda:InvokeFunction":
				for _, r := range list(stmt["Resource"]) {
					invoke = append(invoke, render(r))
				}
			case "ssm:GetParameter":
				for _, r := range list(stmt["Resource"]) {
					getParam = append(getParam, render(r))
				}
			case "*", "lambda:*", "ssm:*":
				t.Errorf("dispatch has %v", a)
			}
		}
	}
	if len(invoke) != 3 || !strings.Contains(strings.Join(invoke, " "), "function:orders-worker") ||
		!strings.Contains(strings.Join(invoke, " "), "function:billing:live") || !strings.Contains(strings.Join(invoke, " "), "function:s3q-stage-dispatch") {
		t.Errorf("dispatch may invoke %v; want orders-worker, billing:live and itself", invoke)
	}
	if len(getParam) != 1 || !strings.Contains(getParam[0], "parameter/s3q/hooks/orders") {
		t.Errorf("dispatch may read %v", getParam)
	}
	for _, r := range append(invoke, getParam...) {
		if strings.Contains(r, "*") {
			t.Errorf("wildcard resource %s", r)
		}
	}
	wakes := false
	for _, stmt := range f.statementsOf(t, "submit") {
		for _, a := range list(stmt["Action"]) {
			if a == "lambda:InvokeFunction" {
				wakes = len(list(stmt["Resource"])) == 1 && strings.Contains(render(list(stmt["Resource"])[0]), "function:s3q-stage-dispatch")
			}
		}
	}
	if !wakes {
		t.Error("submit may not invoke dispatch")
	}
	tpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]interface{}{
		"FunctionName": "s3q-stage-submit",
		"Environment":  map[string]interface{}{"Variables": assertions.Match_ObjectLike(&map[string]interface{}{"S3Q_DISPATCH_FUNCTION": "s3q-stage-dispatch"})},
	})
	tpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]interface{}{
		"FunctionName": "s3q-stage-dispatch", "Timeout": 300,
	})
	tpl.HasResourceProperties(jsii.String("AWS::Events::Rule"), map[string]interface{}{
		"Name": "s3q-stage-dispatch-tick", "ScheduleExpression": "rate(1 minute)",
	})
	tpl.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]interface{}{
		"AlarmName": "s3q-stage-push-delivery-failures", "MetricName": PushDeliveryFailuresMetric, "Threshold": 5,
	})
	tpl.HasResourceProperties(jsii.String("AWS::Logs::MetricFilter"), map[string]interface{}{
		"LogGroupName": map[string]interface{}{"Ref": assertions.Match_StringLikeRegexp(jsii.String("^DispatchLogs"))},
		"MetricTransformations": []interface{}{assertions.Match_ObjectLike(&map[string]interface{}{
			"MetricName": PushDeliveryFailuresMetric, "MetricNamespace": "s3q/stage",
		})},
	})
	a := assertions.Annotations_FromStack(st.Stack)
	match := assertions.Match_StringLikeRegexp(jsii.String("AwsSolutions-.*"))
	for _, m := range *a.FindError(jsii.String("*"), match) {
		t.Errorf("error %s: %v", *m.Id, m.Entry.Data)
	}
	for _, m := range *a.FindWarning(jsii.String("*"), match) {
		t.Errorf("warning %s: %v", *m.Id, m.Entry.Data)
	}
}

func TestPushSettingsAreValidated(t *testing.T) {
	s := DefaultSettings("dev")
	s.PushTargets = []string{"no spaces allowed"}
	s.PushSecrets = []string{"bad*name"}
	s.DispatchTimeoutSeconds = 10
	err := s.Validate()
	for _, want := range []string{"pushTargets", "pushSecrets", "dispatchTimeoutSeconds"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v does not name %s", err, want)
		}
	}
}
