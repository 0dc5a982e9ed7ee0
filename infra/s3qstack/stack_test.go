package s3qstack

import (
	"archive/zip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/s3q/s3q/shared/deploy"
)

// fixture is one synthesized environment: the stack, its template, and the
// template as plain JSON for the walks the assertions package cannot do.
type fixture struct {
	stack    *S3qStack
	template assertions.Template
	json     map[string]interface{}
}

var (
	fixturesOnce sync.Once
	fixtures     map[string]*fixture
	fixturesErr  error
)

// envs builds dev and prod side by side in one app, as two environments in
// one account are, with cdk-nag's AwsSolutions pack applied.
func envs(t *testing.T) map[string]*fixture {
	t.Helper()
	fixturesOnce.Do(func() {
		dir, err := os.MkdirTemp("", "s3q-infra-assets-")
		if err != nil {
			fixturesErr = err
			return
		}
		if fixturesErr = writeDummyZips(dir); fixturesErr != nil {
			return
		}
		outdir, _ := os.MkdirTemp("", "s3q-infra-out-")
		app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(outdir)})
		fixtures = map[string]*fixture{}
		for _, env := range []string{"dev", "prod"} {
			st, err := NewS3qStack(app, "s3q-"+env, &S3qStackProps{EnvName: env, AssetDir: dir})
			if err != nil {
				fixturesErr = err
				return
			}
			fixtures[env] = &fixture{stack: st}
		}
		awscdk.Aspects_Of(app).Add(cdknag.NewAwsSolutionsChecks(nil), nil)
		for env, f := range fixtures {
			f.template = assertions.Template_FromStack(f.stack.Stack, nil)
			f.json = *f.template.ToJSON()
			if fixturesErr = writeTemplate(env, f.json); fixturesErr != nil {
				return
			}
		}
	})
	if fixturesErr != nil {
		t.Fatal(fixturesErr)
	}
	return fixtures
}

// TemplateDirEnv names the folder where the tests leave each synthesized
// template, as s3q-<env>.template.json, when it is set: `make infra-test`
// sets it to .bin/templates, and `make rie-test` runs every function's zip
// with the environment the dev template gives it, so that the stack is
// synthesized once for both.
const TemplateDirEnv = "S3Q_TEMPLATE_DIR"

func writeTemplate(env string, tpl map[string]interface{}) error {
	dir := os.Getenv(TemplateDirEnv)
	if dir == "" {
		return nil
	}
	b, err := json.MarshalIndent(tpl, "", " ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "s3q-"+env+".template.json"), b, 0o644)
}

// writeDummyZips puts a zip holding a placeholder bootstrap for every
// function in dir; the template only needs the files to hash.
func writeDummyZips(dir string) error {
	for _, fn := range Functions() {
		f, err := os.Create(filepath.Join(dir, fn.Name+".zip"))
		if err != nil {
			return err
		}
		zw := zip.NewWriter(f)
		w, err := zw.Create("bootstrap")
		if err == nil {
			_, err = w.Write([]byte("#!/bin/sh\necho " + fn.Name + "\n"))
		}
		if err == nil {
			err = zw.Close()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// resources returns the template's resources of one type by logical id.
func (f *fixture) resources(typ string) map[string]map[string]interface{} {
	out := map[string]map[string]interface{}{}
	for id, r := range f.json["Resources"].(map[string]interface{}) {
		res := r.(map[string]interface{})
		if res["Type"] == typ {
			out[id] = res
		}
	}
	return out
}

func props(res map[string]interface{}) map[string]interface{} {
	p, _ := res["Properties"].(map[string]interface{})
	return p
}

// functionID returns the logical id of the Lambda function named fn.
func (f *fixture) functionID(t *testing.T, fn string) string {
	t.Helper()
	return f.stack.Resolve(f.stack.Functions[fn].Node().DefaultChild().(awscdk.CfnResource).LogicalId()).(string)
}

// statementsOf returns the statements of every policy attached to the role
// of function fn.
func (f *fixture) statementsOf(t *testing.T, fn string) []map[string]interface{} {
	t.Helper()
	fnRes := f.resources("AWS::Lambda::Function")[f.functionID(t, fn)]
	roleID := props(fnRes)["Role"].(map[string]interface{})["Fn::GetAtt"].([]interface{})[0].(string)
	var out []map[string]interface{}
	for _, pol := range f.resources("AWS::IAM::Policy") {
		for _, role := range props(pol)["Roles"].([]interface{}) {
			if role.(map[string]interface{})["Ref"] == roleID {
				for _, st := range props(pol)["PolicyDocument"].(map[string]interface{})["Statement"].([]interface{}) {
					out = append(out, st.(map[string]interface{}))
				}
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("function %s: no policy statements", fn)
	}
	return out
}

func list(v interface{}) []interface{} {
	if l, ok := v.([]interface{}); ok {
		return l
	}
	return []interface{}{v}
}

// render flattens a resource expression ({"Fn::Join": ["", [{"Fn::GetAtt":
// [...]}, "/tasks/*"]]}) into "<Bucket.Arn>/tasks/*" for comparisons.
func render(v interface{}) string {
	switch x := v.(type) {
	case string:
		return x
	case map[string]interface{}:
		if j, ok := x["Fn::Join"]; ok {
			parts := j.([]interface{})
			var sb strings.Builder
			for _, p := range parts[1].([]interface{}) {
				sb.WriteString(render(p))
			}
			return sb.String()
		}
		if g, ok := x["Fn::GetAtt"]; ok {
			ga := g.([]interface{})
			return fmt.Sprintf("<%s.%s>", ga[0], ga[1])
		}
		if r, ok := x["Ref"]; ok {
			return fmt.Sprintf("<%s>", r)
		}
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func TestStack(t *testing.T) {
	all := envs(t)
	dev, prod := all["dev"], all["prod"]

	t.Run("the_bucket_is_versioned_encrypted_private_and_tls_only", func(t *testing.T) {
		dev.template.HasResourceProperties(jsii.String("AWS::S3::Bucket"), map[string]interface{}{
			"VersioningConfiguration": map[string]interface{}{"Status": "Enabled"},
			"BucketEncryption": map[string]interface{}{"ServerSideEncryptionConfiguration": []interface{}{
				map[string]interface{}{"ServerSideEncryptionByDefault": map[string]interface{}{"SSEAlgorithm": "AES256"}},
			}},
			"PublicAccessBlockConfiguration": map[string]interface{}{
				"BlockPublicAcls": true, "BlockPublicPolicy": true, "IgnorePublicAcls": true, "RestrictPublicBuckets": true,
			},
		})
		dev.template.HasResourceProperties(jsii.String("AWS::S3::BucketPolicy"), map[string]interface{}{
			"PolicyDocument": map[string]interface{}{"Statement": assertions.Match_ArrayWith(&[]interface{}{
				assertions.Match_ObjectLike(&map[string]interface{}{
					"Effect": "Deny", "Action": "s3:*",
					"Condition": map[string]interface{}{"Bool": map[string]interface{}{"aws:SecureTransport": "false"}},
				}),
			})},
		})
		dev.template.ResourceCountIs(jsii.String("AWS::S3::Bucket"), jsii.Number(1))
	})

	t.Run("the_lifecycle_expires_old_versions_and_terminal_tasks_with_their_status_markers", func(t *testing.T) {
		d := DefaultSettings("dev")
		dev.template.HasResourceProperties(jsii.String("AWS::S3::Bucket"), map[string]interface{}{
			"LifecycleConfiguration": map[string]interface{}{"Rules": assertions.Match_ArrayWith(&[]interface{}{
				assertions.Match_ObjectLike(&map[string]interface{}{
					"Id": "noncurrent-versions", "Status": "Enabled",
					"NoncurrentVersionExpiration": map[string]interface{}{"NoncurrentDays": d.NoncurrentVersionDays},
					"ExpiredObjectDeleteMarker":   true,
				}),
				assertions.Match_ObjectLike(&map[string]interface{}{
					"Id": "terminal-tasks", "Status": "Enabled", "Prefix": "q/",
					"ExpirationInDays": d.TerminalRetentionDays,
					"TagFilters":       []interface{}{map[string]interface{}{"Key": deploy.TerminalTagKey, "Value": deploy.TerminalTagValue}},
				}),
			})},
		})
	})

	t.Run("prod_retains_the_bucket_and_dev_does_not", func(t *testing.T) {
		prod.template.HasResource(jsii.String("AWS::S3::Bucket"), map[string]interface{}{
			"DeletionPolicy": "Retain", "UpdateReplacePolicy": "Retain",
		})
		prod.template.ResourceCountIs(jsii.String("Custom::S3AutoDeleteObjects"), jsii.Number(0))
		dev.template.HasResource(jsii.String("AWS::S3::Bucket"), map[string]interface{}{"DeletionPolicy": "Delete"})
		dev.template.ResourceCountIs(jsii.String("Custom::S3AutoDeleteObjects"), jsii.Number(1))
		for id, lg := range prod.resources("AWS::Logs::LogGroup") {
			if lg["DeletionPolicy"] != "Retain" {
				t.Errorf("prod log group %s: DeletionPolicy %v, want Retain", id, lg["DeletionPolicy"])
			}
		}
	})

	t.Run("every_function_is_arm64_provided_al2023_with_its_environment", func(t *testing.T) {
		d := DefaultSettings("dev")
		dev.template.ResourceCountIs(jsii.String("AWS::Lambda::Function"), jsii.Number(float64(len(Functions())+1))) // + autoDeleteObjects provider
		for _, fn := range Functions() {
			timeout := d.APITimeoutSeconds
			if fn.Timer {
				timeout = d.TimerTimeoutSeconds
			}
			env := map[string]interface{}{
				"S3Q_BUCKET":    map[string]interface{}{"Ref": assertions.Match_StringLikeRegexp(jsii.String("^Bucket"))},
				"S3Q_PREFIX":    "",
				"S3Q_SHARDS":    "1",
				"S3Q_LOG_LEVEL": "info",
				// EMF metrics in the namespace the dead-letter alarm watches.
				"S3Q_METRICS_NAMESPACE": MetricNamespace("dev"),
			}
			if fn.PutEvents {
				env["S3Q_EVENT_BUS"] = map[string]interface{}{"Ref": assertions.Match_StringLikeRegexp(jsii.String("^EventBus"))}
			}
			if len(fn.Routes) > 0 {
				env["S3Q_MAX_WAIT"] = "25s"
			}
			var ownNames []string
			for _, f := range Functions() {
				ownNames = append(ownNames, "s3q-dev-"+f.Name)
			}
			own := strings.Join(ownNames, ",")
			switch fn.Name { // push delivery (push.go); waits submits too
			case "submit":
				env["S3Q_DISPATCH_FUNCTION"] = "s3q-dev-dispatch"
			case "waits":
				env["S3Q_DISPATCH_FUNCTION"], env["S3Q_WAITS_PER_QUEUE"] = "s3q-dev-dispatch", "5"
			case "tasks":
				env["S3Q_PUSH_BINDINGS"], env["S3Q_OWN_FUNCTIONS"] = "{}", own
			case "dispatch":
				timeout = d.DispatchTimeoutSeconds
				env["S3Q_PUSH_BINDINGS"], env["S3Q_OWN_FUNCTIONS"], env["S3Q_PUSH_CONCURRENCY"] = "{}", own, "64"
			}
			dev.template.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]interface{}{
				"FunctionName":  "s3q-dev-" + fn.Name,
				"Runtime":       "provided.al2023",
				"Architectures": []interface{}{"arm64"},
				"Handler":       "bootstrap",
				"MemorySize":    d.MemoryMB,
				"Timeout":       timeout,
				"Environment":   map[string]interface{}{"Variables": assertions.Match_Exact(env)},
				"LoggingConfig": map[string]interface{}{"LogGroup": map[string]interface{}{"Ref": assertions.Match_AnyValue()}},
			})
		}
	})

	t.Run("every_function_logs_to_its_own_group_with_retention", func(t *testing.T) {
		for env, f := range all {
			days := DefaultSettings(env).LogRetentionDays
			for _, fn := range Functions() {
				f.template.HasResourceProperties(jsii.String("AWS::Logs::LogGroup"), map[string]interface{}{
					"LogGroupName": "/aws/lambda/s3q-" + env + "-" + fn.Name, "RetentionInDays": days,
				})
			}
			f.template.HasResourceProperties(jsii.String("AWS::Logs::LogGroup"), map[string]interface{}{
				"LogGroupName": "/aws/apigateway/s3q-" + env + "-api", "RetentionInDays": days,
			})
		}
	})

	t.Run("no_iam_statement_allows_s3_star_or_any_resource", func(t *testing.T) {
		for env, f := range all {
			checked := 0
			walk := func(where string, doc interface{}) {
				for _, s := range list(doc.(map[string]interface{})["Statement"]) {
					st := s.(map[string]interface{})
					if st["Effect"] != "Allow" {
						continue
					}
					checked++
					for _, a := range list(st["Action"]) {
						if a == "*" || a == "s3:*" {
							t.Errorf("%s %s: allows %v", env, where, a)
						}
					}
					for _, r := range list(st["Resource"]) {
						if r == "*" {
							t.Errorf("%s %s: allows %v on every resource", env, where, st["Action"])
						}
					}
					if st["NotAction"] != nil || st["NotResource"] != nil {
						t.Errorf("%s %s: NotAction/NotResource allow", env, where)
					}
				}
			}
			for id, p := range f.resources("AWS::IAM::Policy") {
				walk("policy "+id, props(p)["PolicyDocument"])
			}
			for id, p := range f.resources("AWS::S3::BucketPolicy") {
				walk("bucket policy "+id, props(p)["PolicyDocument"])
			}
			for id, r := range f.resources("AWS::IAM::Role") {
				for _, p := range list(props(r)["Policies"]) {
					if p != nil {
						walk("role "+id, p.(map[string]interface{})["PolicyDocument"])
					}
				}
				// CDK's own autoDeleteObjects provider (dev only) keeps its
				// managed basic execution role; suppressed with a reason.
				if m := props(r)["ManagedPolicyArns"]; m != nil && !strings.HasPrefix(id, "CustomS3AutoDeleteObjects") {
					t.Errorf("%s role %s: managed policies %v (use a scoped inline policy)", env, id, render(m))
				}
			}
			if checked == 0 {
				t.Fatalf("%s: no Allow statement walked", env)
			}
		}
	})

	t.Run("each_function_touches_only_the_prefixes_in_its_table", func(t *testing.T) {
		for _, fn := range Functions() {
			allowed := map[string]bool{}
			for _, a := range fn.Access {
				p := a.Prefix
				if strings.HasSuffix(p, "/") {
					p += "*"
				}
				allowed["<"+bucketID(dev)+".Arn>/"+p] = true
			}
			for _, st := range dev.statementsOf(t, fn.Name) {
				for _, a := range list(st["Action"]) {
					action := a.(string)
					if !strings.HasPrefix(action, "s3:") || action == "s3:ListBucket" || action == "s3:ListBucketVersions" {
						continue
					}
					for _, res := range list(st["Resource"]) {
						if !allowed[render(res)] {
							t.Errorf("%s: %s on %s is not in its access table", fn.Name, action, render(res))
						}
					}
				}
			}
		}
	})

	t.Run("the_access_table_gives_each_function_what_it_needs_and_no_more", func(t *testing.T) {
		can := func(fn, action, key string) bool {
			for _, st := range dev.statementsOf(t, fn) {
				for _, a := range list(st["Action"]) {
					if a != action {
						continue
					}
					for _, res := range list(st["Resource"]) {
						pat := strings.TrimPrefix(render(res), "<"+bucketID(dev)+".Arn>/")
						if globMatch(pat, key) {
							return true
						}
					}
				}
			}
			return false
		}
		for _, c := range []struct {
			fn, action, key string
			want            bool
		}{
			{"submit", "s3:PutObject", "q/default/tasks/0/x.json", true},
			{"submit", "s3:PutObject", "q/default/index/ready/0/t_x", true},
			{"submit", "s3:GetObject", "config/task_types.json", true},
			{"submit", "s3:PutObject", "config/task_types.json", false},
			{"submit", "s3:PutObject", "q/default/schedules/s.json", false},
			{"submit", "s3:DeleteObject", "q/default/tasks/0/x.json", false},
			{"claim", "s3:PutObject", "q/default/tasks/0/x.json", true},
			{"claim", "s3:DeleteObject", "q/default/index/deadline/0/x", true},
			{"claim", "s3:PutObject", "sweep/20260101T000000.000000Z_event_default.x", true},
			{"submit", "s3:PutObject", "q/default/children/p/c", true},
			{"submit", "s3:GetObject", "q/default/artifacts/x/out.bin", false},
			{"claim", "s3:GetObject", "q/default/schedules/s.json", false},
			{"tasks", "s3:GetObjectVersion", "q/default/tasks/0/x.json", true},
			{"tasks", "s3:PutObject", "q/default/artifacts/x/out.bin", true},
			{"tasks", "s3:PutObjectTagging", "q/default/tasks/0/x.json", true},
			{"schedules", "s3:DeleteObject", "q/default/schedules/s.json", true},
			{"schedules", "s3:PutObject", "due/t_s", true},
			{"sweep-expired", "s3:DeleteObject", "q/default/artifacts/x/out.bin", true},
			{"sweep-expired", "s3:PutObject", "q/default/artifacts/x/out.bin", false},
			{"schedule-tick", "s3:PutObject", "q/default/schedules/s/state.json", true},
			{"schedule-tick", "s3:DeleteObject", "due/t_s", true},
			{"schedule-tick", "s3:GetObjectVersion", "q/default/tasks/0/x.json", false},
			{"schedule-tick", "s3:GetObject", "config/task_types.json", true},
			// Task type defaults are read by the functions that submit.
			{"claim", "s3:GetObject", "config/task_types.json", false},
			{"tasks", "s3:GetObject", "config/task_types.json", false},
			{"sweep-expired", "s3:GetObject", "config/task_types.json", false},
			// sweep/: the wake-ups (a deadline written), the outbox (every
			// expiry and dead-letter), parked leases; children/: the child
			// index. Every function that submits or transitions.
			{"submit", "s3:PutObject", "sweep/wake/20260101T000000.000000Z_default", true},
			{"tasks", "s3:PutObject", "sweep/20260101T000000.000000Z_event_default.x", true},
			{"tasks", "s3:DeleteObject", "sweep/20260101T000000.000000Z_artifacts_default.x", true},
			{"sweep-expired", "s3:PutObject", "sweep/20260101T000000.000000Z_lease_default.x", true},
			{"sweep-expired", "s3:DeleteObject", "sweep/20260101T000000.000000Z_event_default.x", true},
			{"sweep-expired", "s3:DeleteObject", "q/default/children/p/c", true},
			{"schedule-tick", "s3:PutObject", "sweep/wake/20260101T000000.000000Z_default", true},
			{"claim", "s3:DeleteObject", "q/default/children/p/c", true},
			// A leases/ prefix and a queue list are not prefixes of the core.
			{"claim", "s3:PutObject", "leases/20260101T000000.000000Z_x", false},
			{"sweep-expired", "s3:GetObject", "leases/20260101T000000.000000Z_x", false},
			{"sweep-expired", "s3:PutObject", "q/default/queue.json", false},
			// Declared queues and their concurrency slots.
			{"submit", "s3:GetObject", "q/default/queue.json", true},
			{"submit", "s3:PutObject", "q/default/queue.json", false}, // only with autoDeclare (off by default)
			{"waits", "s3:PutObject", "q/default/queue.json", false},
			{"waits", "s3:GetObject", "q/default/queue.json", true},
			{"waits", "s3:PutObject", "q/default/tasks/0/x.json", true},
			{"waits", "s3:PutObject", "q/default/slots/0000", true},
			{"waits", "s3:GetObjectVersion", "q/default/tasks/0/x.json", false},
			{"claim", "s3:GetObject", "q/default/queue.json", true},
			{"claim", "s3:PutObject", "q/default/queue.json", false},
			{"claim", "s3:PutObject", "q/default/slots/0000", true},
			{"claim", "s3:DeleteObject", "q/default/slots/0000", false}, // slots are freed by If-Match, never deleted
			{"tasks", "s3:PutObject", "q/default/slots/0000", true},
			{"tasks", "s3:DeleteObject", "q/default/slots/0000", false},
			{"tasks", "s3:PutObject", "q/default/queue.json", true},
			{"tasks", "s3:DeleteObject", "q/default/queue.json", false}, // a deleted queue is a tombstone
			{"sweep-expired", "s3:PutObject", "q/default/slots/0000", true},
			{"submit", "s3:PutObject", "q/default/slots/0000", false},
			// Artifacts: the tasks function signs PUT and GET URLs, and a
			// purge deletes a purged task's; the sweep lists and deletes,
			// and reads none.
			{"tasks", "s3:GetObject", "q/default/artifacts/x/out.bin", true},
			{"tasks", "s3:DeleteObject", "q/default/artifacts/x/out.bin", true},
			// A record is deleted only by a purge (the tasks function),
			// after its tombstone's compare-and-swap.
			{"tasks", "s3:DeleteObject", "q/default/tasks/0/x.json", true},
			{"claim", "s3:DeleteObject", "q/default/tasks/0/x.json", false},
			{"sweep-expired", "s3:DeleteObject", "q/default/tasks/0/x.json", false},
			{"sweep-expired", "s3:GetObject", "q/default/artifacts/x/out.bin", false},
			{"claim", "s3:PutObject", "q/default/artifacts/x/out.bin", false},
		} {
			if got := can(c.fn, c.action, c.key); got != c.want {
				t.Errorf("%s %s %s: allowed %v, want %v", c.fn, c.action, c.key, got, c.want)
			}
		}
	})

	t.Run("the_sweep_may_list_the_artifacts_and_the_sweep_index_it_reads", func(t *testing.T) {
		var prefixes []interface{}
		for _, st := range dev.statementsOf(t, "sweep-expired") {
			if contains(list(st["Action"]), "s3:ListBucket") {
				cond, _ := st["Condition"].(map[string]interface{})["StringLikeIfExists"].(map[string]interface{})
				prefixes = list(cond["s3:prefix"])
			}
		}
		for _, want := range []string{"q/*/artifacts/*", "sweep/*", "q/*/index/deadline/*", "q/*/children/*"} {
			if !contains(prefixes, want) {
				t.Errorf("sweep-expired cannot list %s: its ListBucket prefixes are %v", want, prefixes)
			}
		}
	})

	t.Run("list_bucket_is_limited_to_the_bucket_and_the_functions_prefixes", func(t *testing.T) {
		for _, fn := range Functions() {
			found := false
			for _, st := range dev.statementsOf(t, fn.Name) {
				if !contains(list(st["Action"]), "s3:ListBucket") {
					continue
				}
				found = true
				if got := render(st["Resource"]); got != "<"+bucketID(dev)+".Arn>" {
					t.Errorf("%s: ListBucket on %s, want the bucket", fn.Name, got)
				}
				lists := 0
				for _, a := range fn.Access {
					if contains(toIfaces(a.Actions), ListBucket) && !a.AutoDeclare {
						lists++
					}
				}
				cond := st["Condition"].(map[string]interface{})
				if lists == 0 {
					// Only the implicit check of a GET of a missing key (404, not 403).
					if got := render(cond); got != `{"Null":{"s3:prefix":"true"}}` {
						t.Errorf("%s lists nothing, yet its ListBucket condition is %s", fn.Name, got)
					}
					continue
				}
				like, _ := cond["StringLikeIfExists"].(map[string]interface{})
				prefixes := list(like["s3:prefix"])
				if len(prefixes) != lists {
					t.Errorf("%s: ListBucket prefixes %v, want one per prefix it lists (%d)", fn.Name, prefixes, lists)
				}
				for _, p := range prefixes {
					if p == "*" || p == "" {
						t.Errorf("%s: ListBucket prefix %q lists everything", fn.Name, p)
					}
				}
			}
			if !found {
				t.Errorf("%s: no ListBucket statement (a GET of a missing key would answer 403, not 404)", fn.Name)
			}
		}
	})

	t.Run("only_the_sweep_publishes_events_and_only_to_the_bus", func(t *testing.T) {
		dev.template.HasResourceProperties(jsii.String("AWS::Events::EventBus"), map[string]interface{}{"Name": "s3q-dev-events"})
		for _, fn := range Functions() {
			n := 0
			for _, st := range dev.statementsOf(t, fn.Name) {
				if !contains(list(st["Action"]), "events:PutEvents") {
					continue
				}
				n++
				if got, want := render(st["Resource"]), "<"+busID(dev)+".Arn>"; got != want {
					t.Errorf("%s: PutEvents on %s, want %s", fn.Name, got, want)
				}
			}
			if want := map[bool]int{true: 1, false: 0}[fn.PutEvents]; n != want {
				t.Errorf("%s: %d PutEvents statements, want %d", fn.Name, n, want)
			}
		}
	})

	t.Run("every_route_of_the_http_api_reaches_its_function", func(t *testing.T) {
		want := map[string]string{}
		for _, fn := range Functions() {
			for _, r := range fn.Routes {
				want[r] = fn.Name
			}
		}
		// Every route of the API, written out again here so a route dropped from the
		// table fails the test.
		design := []string{
			"GET /queues", "PUT /queues/{queue}", "GET /queues/{queue}", "DELETE /queues/{queue}",
			"POST /queues/{queue}/tasks", "POST /queues/{queue}/tasks/batch", "GET /queues/{queue}/tasks", "GET /tasks",
			"GET /queues/{queue}/tasks/{id}", "GET /queues/{queue}/tasks/{id}/history",
			"POST /queues/{queue}/tasks/{id}/cancel", "POST /queues/{queue}/tasks/{id}/retry", "POST /queues/{queue}/tasks/{id}/expire",
			"POST /queues/{queue}/claim",
			"POST /queues/{queue}/tasks/{id}/heartbeat", "POST /queues/{queue}/tasks/{id}/complete",
			"POST /queues/{queue}/tasks/{id}/fail", "POST /queues/{queue}/tasks/{id}/reschedule",
			"POST /queues/{queue}/tasks/{id}/artifacts", "GET /queues/{queue}/tasks/{id}/artifacts/{name}",
			"POST /queues/{queue}/schedules", "GET /queues/{queue}/schedules",
			"GET /queues/{queue}/schedules/{id}", "PUT /queues/{queue}/schedules/{id}", "DELETE /queues/{queue}/schedules/{id}",
			"POST /queues/{queue}/schedules/{id}/pause", "POST /queues/{queue}/schedules/{id}/resume",
			"POST /queues/{queue}/schedules/{id}/trigger", "GET /queues/{queue}/schedules/{id}/history",
		}
		for _, r := range design {
			if _, ok := want[r]; !ok {
				t.Errorf("route %s of the API is missing", r)
			}
		}
		// The unscoped routes of the first API are gone; GET /tasks stays, and
		// GET /openapi.json describes the API.
		for r := range want {
			if r != "GET /tasks" && r != "GET /queues" && r != "GET /openapi.json" && !strings.HasPrefix(strings.SplitN(r, " ", 2)[1], "/queues/{queue}") {
				t.Errorf("route %s does not name its queue", r)
			}
		}
		integrations := dev.resources("AWS::ApiGatewayV2::Integration")
		routes := dev.resources("AWS::ApiGatewayV2::Route")
		if len(routes) != len(want) {
			t.Errorf("%d routes, want %d", len(routes), len(want))
		}
		for _, rt := range routes {
			key := props(rt)["RouteKey"].(string)
			fn, ok := want[key]
			if !ok {
				t.Errorf("unexpected route %s", key)
				continue
			}
			target := render(props(rt)["Target"]) // integrations/<Integration>
			integID := strings.TrimSuffix(strings.TrimPrefix(target, "integrations/<"), ">")
			uri := render(props(integrations[integID])["IntegrationUri"])
			if uri != "<"+dev.functionID(t, fn)+".Arn>" {
				t.Errorf("route %s reaches %s, want function %s", key, uri, fn)
			}
		}
	})

	t.Run("no_route_is_unauthenticated", func(t *testing.T) {
		for env, f := range all {
			routes := f.resources("AWS::ApiGatewayV2::Route")
			if len(routes) == 0 {
				t.Fatalf("%s: no routes", env)
			}
			for id, rt := range routes {
				if got := props(rt)["AuthorizationType"]; got != "AWS_IAM" {
					t.Errorf("%s route %s (%v): AuthorizationType %v, want AWS_IAM", env, id, props(rt)["RouteKey"], got)
				}
			}
		}
	})

	t.Run("the_api_stage_logs_access_and_throttles", func(t *testing.T) {
		dev.template.HasResourceProperties(jsii.String("AWS::ApiGatewayV2::Stage"), map[string]interface{}{
			"StageName":  "$default",
			"AutoDeploy": true,
			"AccessLogSettings": map[string]interface{}{
				"DestinationArn": map[string]interface{}{"Fn::GetAtt": assertions.Match_AnyValue()},
				"Format":         assertions.Match_AnyValue(),
			},
			"DefaultRouteSettings": map[string]interface{}{"ThrottlingRateLimit": 100, "ThrottlingBurstLimit": 200},
		})
	})

	t.Run("the_access_log_says_who_called_which_path", func(t *testing.T) {
		for _, st := range dev.resources("AWS::ApiGatewayV2::Stage") {
			var format map[string]string
			if err := json.Unmarshal([]byte(props(st)["AccessLogSettings"].(map[string]interface{})["Format"].(string)), &format); err != nil {
				t.Fatal(err)
			}
			for k, v := range map[string]string{
				"path": "$context.path", "routeKey": "$context.routeKey", "method": "$context.httpMethod",
				"callerArn": "$context.identity.userArn", "caller": "$context.identity.caller",
				"requestId": "$context.requestId", "status": "$context.status",
			} {
				if format[k] != v {
					t.Errorf("access log %s = %q, want %q", k, format[k], v)
				}
			}
		}
	})

	t.Run("submit_batch_claim_and_wait_routes_have_their_own_throttles", func(t *testing.T) {
		d := DefaultSettings("dev")
		want := map[string]interface{}{}
		classes := map[string]int{}
		for _, fn := range Functions() {
			for _, r := range fn.Routes {
				var rate, burst int
				switch RouteClass(fn, r) {
				case "submit":
					rate, burst = d.SubmitThrottleRate, d.SubmitThrottleBurst
				case "batch":
					rate, burst = d.BatchThrottleRate, d.BatchThrottleBurst
				case "claim":
					rate, burst = d.ClaimThrottleRate, d.ClaimThrottleBurst
				case "wait":
					rate, burst = d.WaitThrottleRate, d.WaitThrottleBurst
				default:
					continue
				}
				classes[RouteClass(fn, r)]++
				want[r] = map[string]interface{}{"ThrottlingRateLimit": rate, "ThrottlingBurstLimit": burst}
			}
		}
		if classes["submit"] == 0 || classes["batch"] != 1 || classes["claim"] == 0 || classes["wait"] != 2 {
			t.Fatalf("route classes %v: want submit, one batch route, claim and two wait routes", classes)
		}
		dev.template.HasResourceProperties(jsii.String("AWS::ApiGatewayV2::Stage"), map[string]interface{}{
			"RouteSettings": assertions.Match_Exact(want),
		})
		// The stage is deployed after the routes its settings name.
		for id, st := range dev.resources("AWS::ApiGatewayV2::Stage") {
			deps := map[string]bool{}
			for _, d := range list(st["DependsOn"]) {
				if d != nil {
					deps[d.(string)] = true
				}
			}
			for rid := range dev.resources("AWS::ApiGatewayV2::Route") {
				if !deps[rid] {
					t.Errorf("stage %s does not depend on route %s", id, rid)
				}
			}
		}
	})

	t.Run("sweep_tick_dispatch_and_waits_have_reserved_concurrency_and_the_other_functions_do_not", func(t *testing.T) {
		want := map[string]interface{}{"sweep-expired": 1.0, "schedule-tick": 1.0, "dispatch": 10.0, "waits": float64(DefaultSettings("dev").WaitsReservedConcurrency)}
		for _, fn := range Functions() {
			got := props(dev.resources("AWS::Lambda::Function")[dev.functionID(t, fn.Name)])["ReservedConcurrentExecutions"]
			if got != want[fn.Name] {
				t.Errorf("%s: ReservedConcurrentExecutions %v, want %v", fn.Name, got, want[fn.Name])
			}
		}
		if want["waits"] != 20.0 {
			t.Errorf("waitsReservedConcurrency defaults to %v, want 20 (infra/README's budget)", want["waits"])
		}
	})

	t.Run("the_wait_routes_are_served_by_the_waits_function_alone", func(t *testing.T) {
		for _, fn := range Functions() {
			for _, r := range fn.Routes {
				if isWait := strings.HasSuffix(r, "/wait"); isWait != (fn.Name == "waits") {
					t.Errorf("route %s is served by %s", r, fn.Name)
				}
			}
		}
		for env, f := range all {
			f.template.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]interface{}{
				"FunctionName":                 "s3q-" + env + "-waits",
				"ReservedConcurrentExecutions": 20,
				"Timeout":                      DefaultSettings(env).APITimeoutSeconds,
				"Environment": map[string]interface{}{"Variables": assertions.Match_ObjectLike(&map[string]interface{}{
					"S3Q_MAX_WAIT":          "25s",
					"S3Q_WAITS_PER_QUEUE":   "5",
					"S3Q_DISPATCH_FUNCTION": "s3q-" + env + "-dispatch",
				})},
			})
			for _, path := range []string{"/queues/{queue}/tasks/wait", "/queues/{queue}/claim/wait"} {
				f.template.HasResourceProperties(jsii.String("AWS::ApiGatewayV2::Route"), map[string]interface{}{
					"RouteKey":          "POST " + path,
					"AuthorizationType": "AWS_IAM",
				})
			}
		}
	})

	t.Run("sweep_tick_and_dispatch_fire_every_minute", func(t *testing.T) {
		for env, f := range all {
			for _, fn := range Functions() {
				if !fn.Timer {
					continue
				}
				f.template.HasResourceProperties(jsii.String("AWS::Events::Rule"), map[string]interface{}{
					"Name":               "s3q-" + env + "-" + fn.Name + "-tick",
					"ScheduleExpression": "rate(1 minute)",
					"State":              "ENABLED",
					"Targets": []interface{}{assertions.Match_ObjectLike(&map[string]interface{}{
						"Arn": map[string]interface{}{"Fn::GetAtt": []interface{}{f.functionID(t, fn.Name), "Arn"}},
					})},
				})
			}
			f.template.ResourceCountIs(jsii.String("AWS::Events::Rule"), jsii.Number(3)) // sweep-expired, schedule-tick, dispatch
		}
	})

	t.Run("alarms_watch_function_errors_and_dead_lettered_tasks", func(t *testing.T) {
		for _, fn := range Functions() {
			dev.template.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]interface{}{
				"AlarmName": "s3q-dev-" + fn.Name + "-errors", "MetricName": "Errors", "Namespace": "AWS/Lambda",
				"Dimensions": []interface{}{map[string]interface{}{"Name": "FunctionName", "Value": map[string]interface{}{"Ref": dev.functionID(t, fn.Name)}}},
				"Threshold":  1, "ComparisonOperator": "GreaterThanOrEqualToThreshold",
			})
			dev.template.HasResourceProperties(jsii.String("AWS::Logs::MetricFilter"), map[string]interface{}{
				"FilterPattern": "{ $." + DeadLetteredMetric + " > 0 }",
				"MetricTransformations": []interface{}{map[string]interface{}{
					"MetricNamespace": "s3q/dev", "MetricName": DeadLetteredMetric, "MetricValue": "$." + DeadLetteredMetric,
				}},
			})
		}
		dev.template.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]interface{}{
			"AlarmName": "s3q-dev-tasks-dead-lettered", "Namespace": "s3q/dev", "MetricName": DeadLetteredMetric,
			"Statistic": "Sum", "Threshold": 1, "TreatMissingData": "notBreaching",
		})
	})

	t.Run("an_alarm_fires_when_a_sweep_is_incomplete", func(t *testing.T) {
		// The sweep's EMF line: namespace s3q/<env>, dimension service=s3q.
		dev.template.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]interface{}{
			"AlarmName": "s3q-dev-sweep-incomplete", "Namespace": "s3q/dev", "MetricName": "SweepIncomplete",
			"Dimensions": []interface{}{map[string]interface{}{"Name": "service", "Value": "s3q"}},
			"Statistic":  "Maximum", "Period": 300, "Threshold": 1, "EvaluationPeriods": 1,
			"ComparisonOperator": "GreaterThanOrEqualToThreshold", "TreatMissingData": "notBreaching",
		})
	})

	t.Run("two_environments_share_no_resource_name", func(t *testing.T) {
		nameKeys := []string{"FunctionName", "LogGroupName", "Name", "AlarmName", "RuleName", "BucketName"}
		seen := map[string]string{}
		for env, f := range all {
			for id, r := range f.json["Resources"].(map[string]interface{}) {
				p := props(r.(map[string]interface{}))
				for _, k := range nameKeys {
					v, ok := p[k].(string)
					if !ok {
						continue
					}
					if !strings.Contains(v, "s3q-"+env) {
						t.Errorf("%s %s: %s %q does not carry s3q-%s", env, id, k, v, env)
					}
					if other, dup := seen[v]; dup {
						t.Errorf("%s %s and %s: both named %q", env, id, other, v)
					}
					seen[v] = env + " " + id
				}
			}
		}
		if len(seen) < 10 {
			t.Fatalf("only %d named resources seen", len(seen))
		}
	})

	t.Run("cdk_nag_finds_no_unsuppressed_problem", func(t *testing.T) {
		for env, f := range all {
			a := assertions.Annotations_FromStack(f.stack.Stack)
			match := assertions.Match_StringLikeRegexp(jsii.String("AwsSolutions-.*"))
			for _, m := range *a.FindError(jsii.String("*"), match) {
				t.Errorf("%s: error %s: %v", env, *m.Id, m.Entry.Data)
			}
			for _, m := range *a.FindWarning(jsii.String("*"), match) {
				t.Errorf("%s: warning %s: %v", env, *m.Id, m.Entry.Data)
			}
		}
	})

	t.Run("every_suppression_gives_a_reason", func(t *testing.T) {
		for env, f := range all {
			n := 0
			for id, r := range f.json["Resources"].(map[string]interface{}) {
				md, _ := r.(map[string]interface{})["Metadata"].(map[string]interface{})
				nag, _ := md["cdk_nag"].(map[string]interface{})
				for _, s := range list(nag["rules_to_suppress"]) {
					if s == nil {
						continue
					}
					n++
					if reason, _ := s.(map[string]interface{})["reason"].(string); len(reason) < 40 {
						t.Errorf("%s %s: suppression %v has no real reason", env, id, s)
					}
				}
			}
			if n == 0 {
				t.Errorf("%s: no suppressions found in metadata", env)
			}
		}
	})
}

func TestEveryFunctionFolderHasAnEntryInTheStack(t *testing.T) {
	mains, err := filepath.Glob(filepath.Join("..", "..", "functions", "*", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, fn := range Functions() {
		known[fn.Name] = true
	}
	for _, m := range mains {
		if name := filepath.Base(filepath.Dir(m)); !known[name] {
			t.Errorf("functions/%s has a main.go but no entry in Functions() (routes, access, trigger)", name)
		}
	}
	t.Logf("%d function folders with a main.go", len(mains))
}

func TestAMissingZipSaysToRunMakeBuild(t *testing.T) {
	dir := t.TempDir()
	app := awscdk.NewApp(nil)
	_, err := NewS3qStack(app, "s3q-x", &S3qStackProps{EnvName: "x", AssetDir: dir})
	if err == nil || !strings.Contains(err.Error(), "make build") || !strings.Contains(err.Error(), "submit.zip") {
		t.Fatalf("error %v, want one naming submit.zip and make build", err)
	}
}

func TestSettingsComeFromContextWithCommandLineOverrides(t *testing.T) {
	app := awscdk.NewApp(&awscdk.AppProps{Context: &map[string]interface{}{
		ContextSettings: map[string]interface{}{
			"staging": map[string]interface{}{"memoryMb": 512, "logRetentionDays": 60, "defaultTtl": "1h"},
		},
		"s3q:tickRateMinutes": "5",    // -c gives strings
		"s3q:retainData":      "true", // and bools as strings
		"s3q:prefix":          "q/",
	}})
	s, err := SettingsFromContext(app.Node(), "staging")
	if err != nil {
		t.Fatal(err)
	}
	if s.MemoryMB != 512 || s.LogRetentionDays != 60 || s.DefaultTTL != "1h" || s.TickRateMinutes != 5 || !s.Retain() || s.Prefix != "q/" {
		t.Fatalf("settings %+v", s)
	}
	if s.NoncurrentVersionDays != DefaultSettings("staging").NoncurrentVersionDays {
		t.Fatalf("unset field lost its default: %+v", s)
	}

	bad := awscdk.NewApp(&awscdk.AppProps{Context: &map[string]interface{}{
		ContextSettings: map[string]interface{}{"dev": map[string]interface{}{"memory": 512}},
	}})
	if _, err := SettingsFromContext(bad.Node(), "dev"); err == nil {
		t.Fatal("a misspelt setting was accepted")
	}
	if _, err := SettingsFromContext(awscdk.NewApp(&awscdk.AppProps{Context: &map[string]interface{}{"s3q:logRetentionDays": "13"}}).Node(), "dev"); err == nil {
		t.Fatal("a retention CloudWatch does not offer was accepted")
	}
}

func TestTheCdkJsonDocumentsEverySettingOfDevAndProd(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "cdk.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cdk struct {
		Context map[string]json.RawMessage `json:"context"`
	}
	if err := json.Unmarshal(raw, &cdk); err != nil {
		t.Fatal(err)
	}
	var perEnv map[string]map[string]interface{}
	if err := json.Unmarshal(cdk.Context[ContextSettings], &perEnv); err != nil {
		t.Fatal(err)
	}
	for _, env := range []string{"dev", "prod"} {
		var got, want map[string]interface{}
		b, _ := json.Marshal(DefaultSettings(env))
		_ = json.Unmarshal(b, &want)
		b, _ = json.Marshal(perEnv[env])
		_ = json.Unmarshal(b, &got)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("cdk.json %s settings\n got %v\nwant %v (the built-in defaults)", env, got, want)
		}
	}
}

func TestSettingsFieldsAreAllOverridable(t *testing.T) {
	var tags []string
	st := reflect.TypeOf(Settings{})
	for i := 0; i < st.NumField(); i++ {
		tags = append(tags, strings.Split(st.Field(i).Tag.Get("json"), ",")[0])
	}
	var names []string
	for _, f := range jsonFields() {
		names = append(names, f.name)
	}
	sort.Strings(tags)
	sort.Strings(names)
	if !reflect.DeepEqual(tags, names) {
		t.Fatalf("jsonFields %v, Settings tags %v", names, tags)
	}
}

func bucketID(f *fixture) string {
	return f.stack.Resolve(f.stack.Bucket.Node().DefaultChild().(awscdk.CfnResource).LogicalId()).(string)
}

func busID(f *fixture) string {
	return f.stack.Resolve(f.stack.EventBus.Node().DefaultChild().(awscdk.CfnResource).LogicalId()).(string)
}

func contains(l []interface{}, v string) bool {
	for _, x := range l {
		if x == v {
			return true
		}
	}
	return false
}

func TestAKeyPrefixAndATickRateReachIAMLifecycleAndRules(t *testing.T) {
	dir := t.TempDir()
	if err := writeDummyZips(dir); err != nil {
		t.Fatal(err)
	}
	s := DefaultSettings("staging")
	s.Prefix, s.TickRateMinutes, s.Endpoint, s.Architecture = "q/", 5, "http://localhost.localstack.cloud:4566", "x86_64"
	s.AutoDeclare = true
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
	st, err := NewS3qStack(app, "s3q-staging", &S3qStackProps{EnvName: "staging", AssetDir: dir, Settings: &s})
	if err != nil {
		t.Fatal(err)
	}
	tpl := assertions.Template_FromStack(st.Stack, nil)
	tpl.HasResourceProperties(jsii.String("AWS::Events::Rule"), map[string]interface{}{"ScheduleExpression": "rate(5 minutes)"})
	tpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]interface{}{
		"Architectures": []interface{}{"x86_64"},
		"Environment": map[string]interface{}{"Variables": assertions.Match_ObjectLike(&map[string]interface{}{
			"S3Q_PREFIX": "q/", "S3Q_ENDPOINT": "http://localhost.localstack.cloud:4566",
		})},
	})
	tpl.HasResourceProperties(jsii.String("AWS::S3::Bucket"), map[string]interface{}{
		"LifecycleConfiguration": map[string]interface{}{"Rules": assertions.Match_ArrayWith(&[]interface{}{
			assertions.Match_ObjectLike(&map[string]interface{}{"Id": "noncurrent-versions", "Prefix": "q/"}),
			assertions.Match_ObjectLike(&map[string]interface{}{"Id": "terminal-tasks", "Prefix": "q/q/"}),
		})},
	})
	f := &fixture{stack: st, template: tpl, json: *tpl.ToJSON()}
	// autoDeclare: every function is told, and submit and waits may write
	// (and count) declarations, which they may not by default.
	dev := envs(t)["dev"]
	for _, fn := range []string{"submit", "waits"} {
		on := func(f *fixture, prefix string) bool {
			for _, g := range f.grantsOf(t, fn) {
				if g == (grant{PutObject, prefix + "q/*/queue.json"}) {
					return true
				}
			}
			return false
		}
		if !on(f, "q/") || on(dev, "") {
			t.Errorf("%s: PutObject on q/*/queue.json with autoDeclare %v, without %v; want only with", fn, on(f, "q/"), on(dev, ""))
		}
	}
	tpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]interface{}{
		"FunctionName": "s3q-staging-submit",
		"Environment": map[string]interface{}{"Variables": assertions.Match_ObjectLike(&map[string]interface{}{
			"S3Q_AUTO_DECLARE": "true",
		})},
	})
	for _, fn := range Functions() {
		for _, stmt := range f.statementsOf(t, fn.Name) {
			for _, res := range list(stmt["Resource"]) {
				r := render(res)
				if strings.HasPrefix(r, "<"+bucketID(f)+".Arn>/") && !strings.HasPrefix(r, "<"+bucketID(f)+".Arn>/q/") {
					t.Errorf("%s: %v on %s, outside the prefix q/", fn.Name, stmt["Action"], r)
				}
			}
			cond, _ := stmt["Condition"].(map[string]interface{})
			for op, kv := range cond {
				if op == "Null" {
					continue
				}
				for _, p := range list(kv.(map[string]interface{})["s3:prefix"]) {
					if !strings.HasPrefix(p.(string), "q/") {
						t.Errorf("%s: %v prefix %v outside q/", fn.Name, stmt["Action"], p)
					}
				}
			}
		}
	}
	// The conditional-write rule follows the prefix too.
	tpl.HasResourceProperties(jsii.String("AWS::S3::BucketPolicy"), map[string]interface{}{
		"PolicyDocument": map[string]interface{}{"Statement": assertions.Match_ArrayWith(&[]interface{}{
			assertions.Match_ObjectLike(&map[string]interface{}{
				"Sid": "RecordsOnlyByConditionalWrites",
				"Resource": assertions.Match_ArrayWith(&[]interface{}{
					map[string]interface{}{"Fn::Join": []interface{}{"", []interface{}{
						map[string]interface{}{"Fn::GetAtt": []interface{}{bucketID(f), "Arn"}}, "/q/q/*/tasks/*"}}},
				}),
			}),
		})},
	})
}

// globMatch reports whether key matches an IAM resource pattern, where
// "*" matches any run of characters, "/" included.
func globMatch(pat, key string) bool {
	parts := strings.Split(pat, "*")
	if len(parts) == 1 {
		return pat == key
	}
	if !strings.HasPrefix(key, parts[0]) {
		return false
	}
	rest := key[len(parts[0]):]
	for i, p := range parts[1:] {
		last := i == len(parts)-2
		if last {
			return strings.HasSuffix(rest, p) && len(rest) >= len(p)
		}
		j := strings.Index(rest, p)
		if j < 0 {
			return false
		}
		rest = rest[j+len(p):]
	}
	return true
}
