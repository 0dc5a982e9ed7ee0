package s3qstack

import (
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/s3q/s3q/shared/deploy"
)

// The dispatch function may invoke exactly the Lambda targets of the
// push bindings and read exactly their SSM parameters (tasks too, to
// check a secret at declaration); both get the bindings and the stack's
// own functions in their environment; dispatch has its reserved
// concurrency; submit may invoke dispatch and is told its name; a rule
// fires it every tick; an alarm watches delivery failures; cdk-nag finds
// nothing unsuppressed.
func TestPushDeliveryGrantsOnlyTheBoundTargetsAndSecrets(t *testing.T) {
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
	s.PushBindings = deploy.Bindings{
		"orders":  {Lambda: []string{"orders-worker"}, Secrets: []string{"/s3q/hooks/orders"}},
		"billing": {Lambda: []string{"arn:aws:lambda:eu-west-1:123456789012:function:billing:live", "orders-worker"}},
	}
	s.DispatchReservedConcurrency = 7
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
	var tasksParam []string
	for _, stmt := range f.statementsOf(t, "tasks") {
		for _, a := range list(stmt["Action"]) {
			switch {
			case a == "ssm:GetParameter":
				for _, r := range list(stmt["Resource"]) {
					tasksParam = append(tasksParam, render(r))
				}
			case strings.HasPrefix(a.(string), "lambda:"):
				t.Errorf("tasks has %v", a)
			}
		}
	}
	if len(tasksParam) != 1 || !strings.Contains(tasksParam[0], "parameter/s3q/hooks/orders") {
		t.Errorf("tasks may read %v, want the bound parameter only (its secret is checked at declaration)", tasksParam)
	}
	bindings := `{"billing":{"lambda":["arn:aws:lambda:eu-west-1:123456789012:function:billing:live","orders-worker"]},"orders":{"lambda":["orders-worker"],"secrets":["/s3q/hooks/orders"]}}`
	var ownNames []string
	for _, fn := range Functions() {
		ownNames = append(ownNames, "s3q-stage-"+fn.Name)
	}
	own := strings.Join(ownNames, ",")
	if !strings.Contains(own, "s3q-stage-dispatch") || !strings.Contains(own, "s3q-stage-tasks") {
		t.Fatalf("own functions %s", own)
	}
	for _, fn := range []string{"s3q-stage-dispatch", "s3q-stage-tasks"} {
		tpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]interface{}{
			"FunctionName": fn,
			"Environment": map[string]interface{}{"Variables": assertions.Match_ObjectLike(&map[string]interface{}{
				"S3Q_PUSH_BINDINGS": bindings, "S3Q_OWN_FUNCTIONS": own,
			})},
		})
	}
	tpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]interface{}{
		"FunctionName": "s3q-stage-dispatch", "ReservedConcurrentExecutions": 7,
		"Environment": map[string]interface{}{"Variables": assertions.Match_ObjectLike(&map[string]interface{}{"S3Q_PUSH_CONCURRENCY": "64"})},
	})
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
	s.PushBindings = deploy.Bindings{
		"orders":  {Lambda: []string{"no spaces allowed"}, Secrets: []string{"bad*name"}},
		"a/b":     {Lambda: []string{"fn"}},
		"nothing": {},
	}
	s.DispatchTimeoutSeconds = 10
	s.DispatchReservedConcurrency = -1
	s.PushConcurrency = 0
	err := s.Validate()
	for _, want := range []string{"pushBindings.orders.lambda", "pushBindings.orders.secrets", `"a/b" is not a queue name`, "pushBindings.nothing binds nothing",
		"dispatchTimeoutSeconds", "dispatchReservedConcurrency", "pushConcurrency"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v does not name %s", err, want)
		}
	}
}

// No function of the stack can be bound as a push target, by name or by
// ARN, with or without a qualifier: dispatch would invoke itself (or an
// API function) with a task's payload.
func TestTheStacksOwnFunctionsCannotBeBound(t *testing.T) {
	dir, err := os.MkdirTemp("", "s3q-infra-push-own-")
	if err != nil {
		t.Fatal(err)
	}
	if err := writeDummyZips(dir); err != nil {
		t.Fatal(err)
	}
	for _, fn := range []string{"s3q-dev-dispatch", "arn:aws:lambda:us-east-1:123456789012:function:s3q-dev-dispatch:live", "s3q-dev-tasks:$LATEST"} {
		s := DefaultSettings("dev")
		s.PushBindings = deploy.Bindings{"orders": {Lambda: []string{fn}}}
		app := awscdk.NewApp(nil)
		_, err := NewS3qStack(app, "s3q-dev", &S3qStackProps{EnvName: "dev", AssetDir: dir, Settings: &s})
		if err == nil || !strings.Contains(err.Error(), "no s3q function can be a push target") {
			t.Errorf("binding %s: %v", fn, err)
		}
	}
}
