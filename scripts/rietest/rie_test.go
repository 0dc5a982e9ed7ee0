//go:build rie

// Package rietest runs what a deploy ships: each function's zip, built by
// scripts/build-functions exactly as `make build` builds it, unpacked and
// run under the AWS Lambda Runtime Interface Emulator (aws-lambda-rie), the
// Lambda runtime API of provided.al2023, with the environment the
// synthesized stack gives that function (the dev template that `make
// infra-test` writes), and S3 at a local versitygw. Every sample event of
// events/ is invoked on amd64 builds of the same code and its answer
// checked (status and key fields, and against the OpenAPI document); the
// arm64 zips, the ones deployed, run under qemu-aarch64-static for one
// event per function; a malformed event, a missing setting and a time-out
// are checked too. It prints each function's cold start and warm duration
// from the emulator's REPORT lines.
//
// It is behind the build tag "rie" so that `go test ./...` never runs it:
// `make rie-test` builds the zips, installs the emulator, qemu and
// versitygw, and runs
//
//	go test -tags rie -count=1 ./scripts/rietest
//
// with S3Q_RIE (the emulator), S3Q_QEMU (qemu-aarch64-static; empty on an
// arm64 host), S3Q_RIE_TEMPLATE (the template), S3Q_RIE_ZIPS_AMD64 and
// S3Q_RIE_ZIPS_ARM64 (folders of <function>.zip) and S3Q_RIE_REPORT (where
// the timings go).
//
// Where the emulator is not Lambda: the template's references to the
// bucket, the event bus and the dispatch function become the local
// bucket's name and the names in the template; S3Q_ENDPOINT (which the
// template sets only for LocalStack) points at versitygw; AWS_ENDPOINT_URL
// points every other AWS client (EventBridge, Lambda, SSM) at a fake on
// loopback that records the calls; the credentials are versitygw's, where
// Lambda would put the role's.
package rietest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/s3q/s3q/shared/lambdafn"
	"github.com/s3q/s3q/shared/lambdafn/eventtest"
	"github.com/s3q/s3q/shared/s3local"
)

// setup is what TestMain prepared for every test.
var setup struct {
	rie, qemu string
	template  string
	zips      map[string]string // arch → folder of <function>.zip
	vgw       *s3local.Server
	aws       *fakeAWS

	mu  sync.Mutex
	fns []*function // every function started, for the timings
}

// eventsDir is the repository's events/ folder.
const eventsDir = "../../events"

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	need := func(name string) string {
		v := os.Getenv(name)
		if v == "" {
			fmt.Fprintf(os.Stderr, "rietest: $%s is not set; run `make rie-test`\n", name)
			os.Exit(2)
		}
		return v
	}
	setup.rie = need("S3Q_RIE")
	setup.template = need("S3Q_RIE_TEMPLATE")
	setup.zips = map[string]string{"amd64": need("S3Q_RIE_ZIPS_AMD64"), "arm64": need("S3Q_RIE_ZIPS_ARM64")}
	if runtime.GOARCH != "arm64" {
		setup.qemu = need("S3Q_QEMU")
	}
	vgw, err := s3local.StartVersityGW(context.Background(), "")
	if err != nil {
		fmt.Fprintln(os.Stderr, "rietest:", err)
		return 1
	}
	defer vgw.Close()
	setup.vgw = vgw
	setup.aws = startFakeAWS()
	defer setup.aws.srv.Close()
	start := time.Now()
	code := m.Run()
	if err := writeTimings(os.Getenv("S3Q_RIE_REPORT"), time.Since(start)); err != nil {
		fmt.Fprintln(os.Stderr, "rietest:", err)
		return 1
	}
	return code
}

// world is one architecture's run: a bucket of its own and every function
// running under the emulator on it.
type world struct {
	arch   string
	bucket string
	specs  map[string]fnSpec
	fns    map[string]*function
	seq    int

	// State the cases leave for later ones.
	artifactTask   string
	ordersDeclared bool
}

// newWorld makes a fresh versioned bucket on versitygw, reads the dev
// template's functions with that bucket, and starts each function's zip of
// arch under the emulator (each cold until its first invocation).
func newWorld(t *testing.T, arch string) *world {
	t.Helper()
	w := &world{arch: arch, bucket: "s3q-rie-" + arch, fns: map[string]*function{}}
	makeBucket(t, w.bucket)
	specs, err := readTemplate(setup.template, "s3q-dev-", refs{bucket: w.bucket})
	if err != nil {
		t.Fatal(err)
	}
	w.specs = specs
	for _, name := range lambdafn.Names() {
		var change map[string]string
		if _, ok := specs[name].Env["S3Q_PUSH_BINDINGS"]; ok {
			// The dev template binds no push target (pushBindings {});
			// the push cases bind queue orders to the fake's function, as
			// the setting would.
			change = map[string]string{"S3Q_PUSH_BINDINGS": pushBindings}
		}
		w.fns[name] = w.start(t, name, change)
	}
	for _, name := range []string{lambdafn.Tasks, lambdafn.Dispatch} {
		if _, ok := specs[name].Env["S3Q_PUSH_BINDINGS"]; !ok {
			t.Fatalf("the template gives %s no S3Q_PUSH_BINDINGS", name)
		}
	}
	return w
}

// start runs function name's zip under the emulator with its environment
// from the template, the local stand-ins, and change (a value of "" drops
// the variable).
func (w *world) start(t *testing.T, name string, change map[string]string) *function {
	t.Helper()
	spec, ok := w.specs[name]
	if !ok {
		t.Fatalf("the template has no function s3q-dev-%s", name)
	}
	env := envList(spec, w.lambdaEnv(spec, change))
	f := startFunction(t, name, w.arch, unzip(t, filepath.Join(setup.zips[w.arch], name+".zip")), env)
	setup.mu.Lock()
	setup.fns = append(setup.fns, f)
	setup.mu.Unlock()
	return f
}

// lambdaEnv is what Lambda adds to a function's environment, and the
// local stand-ins; change overrides (a value of "" drops the variable from
// the template's too).
func (w *world) lambdaEnv(spec fnSpec, change map[string]string) map[string]string {
	v := setup.vgw
	env := map[string]string{
		"PATH":                            "/usr/local/bin:/usr/bin:/bin",
		"TZ":                              ":UTC",
		"LANG":                            "en_US.UTF-8",
		"_HANDLER":                        spec.Handler,
		"AWS_LAMBDA_FUNCTION_NAME":        spec.FunctionName,
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": fmt.Sprint(spec.MemoryMB),
		"AWS_LAMBDA_FUNCTION_TIMEOUT":     fmt.Sprint(spec.TimeoutS),
		"AWS_LAMBDA_FUNCTION_VERSION":     "$LATEST",
		"AWS_LAMBDA_LOG_GROUP_NAME":       "/aws/lambda/" + spec.FunctionName,
		"AWS_REGION":                      v.Region,
		"AWS_DEFAULT_REGION":              v.Region,
		"AWS_ACCESS_KEY_ID":               v.AccessKey,
		"AWS_SECRET_ACCESS_KEY":           v.SecretKey,
		"AWS_EC2_METADATA_DISABLED":       "true",
		// S3 goes to versitygw, every other AWS service to the fake.
		"S3Q_ENDPOINT":     v.Endpoint,
		"AWS_ENDPOINT_URL": setup.aws.srv.URL,
	}
	for k, val := range change {
		env[k] = val
	}
	return env
}

// makeBucket creates a versioned bucket on versitygw.
func makeBucket(t *testing.T, bucket string) {
	t.Helper()
	c := setup.vgw.Client()
	if _, err := c.CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: &bucket}); err != nil {
		t.Fatalf("create bucket %s: %v", bucket, err)
	}
	if _, err := c.PutBucketVersioning(t.Context(), &s3.PutBucketVersioningInput{
		Bucket:                  &bucket,
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled},
	}); err != nil {
		t.Fatalf("versioning on %s: %v", bucket, err)
	}
}

// writeTimings writes the cold start and warm duration of every function
// started (from the emulator's REPORT lines) to path (stdout when empty).
func writeTimings(path string, total time.Duration) error {
	setup.mu.Lock()
	defer setup.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "# from aws-lambda-rie's log: init = bootstrap start to ready (INIT REPORT); cold = the first invocation's\n")
	fmt.Fprintf(&b, "# Duration (REPORT), its init included; warm = median Duration of the others\n# (long-polls left out; the waits function's sample events wait 1s by design)\n")
	fmt.Fprintf(&b, "%-14s %-6s %9s %9s %9s %8s  %s\n", "function", "arch", "init ms", "cold ms", "warm ms", "invokes", "first event")
	fns := append([]*function(nil), setup.fns...)
	sort.SliceStable(fns, func(i, j int) bool {
		if fns[i].arch != fns[j].arch {
			return fns[i].arch < fns[j].arch
		}
		return false
	})
	for _, f := range fns {
		f.mu.Lock()
		invs := append([]invocation(nil), f.invocations...)
		f.mu.Unlock()
		if len(invs) == 0 || !invs[0].report.found || f.label != "" {
			continue
		}
		var warm []time.Duration
		for _, inv := range invs[1:] {
			if inv.report.found && !inv.report.first && !strings.HasSuffix(inv.event, "(long-poll)") {
				warm = append(warm, inv.report.duration)
			}
		}
		w := "-"
		if len(warm) > 0 {
			sort.Slice(warm, func(i, j int) bool { return warm[i] < warm[j] })
			w = fmt.Sprintf("%.1f", msf(warm[len(warm)/2]))
		}
		fmt.Fprintf(&b, "%-14s %-6s %9.1f %9.1f %9s %8d  %s\n", f.name, f.arch,
			msf(f.initDuration()), msf(invs[0].report.duration), w, len(invs), invs[0].event)
	}
	fmt.Fprintf(&b, "# %s in all (amd64 native; arm64 under qemu-aarch64-static: its times are qemu's, not Lambda's)\n", total.Round(time.Second))
	if path == "" {
		_, err := os.Stdout.WriteString(b.String())
		return err
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

func msf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// readEvent reads a sample event, fills in its placeholders, and dates a
// scheduled event now, as EventBridge sends it at the run.
func readEvent(t *testing.T, file, id, token string) []byte {
	t.Helper()
	b := eventtest.Read(t, eventsDir, file, id, token)
	var ev map[string]any
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatalf("events/%s: %v", file, err)
	}
	if ev["detail-type"] == "Scheduled Event" {
		ev["time"] = time.Now().UTC().Format(time.RFC3339)
		b, _ = json.Marshal(ev)
	}
	return b
}
