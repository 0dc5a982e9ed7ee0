package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/s3q/s3q/shared/config"
	"github.com/s3q/s3q/shared/devserver"
	"github.com/s3q/s3q/shared/dispatch"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
)

// devSecretName is the name of the --push-secret, which URL targets given
// with --push are signed with.
const devSecretName = "dev"

// devPushQueues turns --push queue=target flags into declarations made
// at start: a URL target is signed with the --push-secret (its name is
// devSecretName), anything else names a Lambda function. S3Q_PUSH_QUEUES
// is no longer read: declare such queues with PUT /queues/{queue}.
func devPushQueues(env string, flags map[string]string) ([]queues.Declaration, error) {
	if env != "" {
		return nil, fmt.Errorf("%s is no longer read: use --push queue=target, or declare the queue with its target (PUT /queues/{queue}, s3q queue create)", config.EnvPushQueues)
	}
	names := make([]string, 0, len(flags))
	for name := range flags {
		names = append(names, name)
	}
	sort.Strings(names)
	var out []queues.Declaration
	for _, name := range names {
		target := flags[name]
		t := queues.Target{Lambda: target}
		if strings.HasPrefix(target, "http://") || strings.HasPrefix(target, "https://") {
			t = queues.Target{URL: target, Secret: devSecretName}
		}
		if err := queue.ValidateQueueName(name); err != nil {
			return nil, fmt.Errorf("--push %s=%s: %w", name, target, err)
		}
		if err := queues.ValidateTarget(t, true); err != nil {
			return nil, fmt.Errorf("--push %s=%s: %w", name, target, err)
		}
		out = append(out, queues.Declaration{Name: name, Target: &t})
	}
	return out, nil
}

// devCommand is s3q dev.
func devCommand() *command {
	var o devserver.Options
	var tick, ttl, maxWait durationFlag
	push := &setFlags{m: map[string]string{}}
	var pushSecret string
	return &command{
		name: "dev", summary: "run the whole queue locally: S3, the HTTP API, sweep and tick",
		details: `Starts an in-process S3 server (gofakes3), serves the full HTTP API on
--addr through the same handlers as the Lambda functions, and fires
sweep-expired and schedule-tick every --tick. Prints the URL and a curl example.
Everything lives in memory unless --data-dir is given; --endpoint uses any
real S3 instead (the bucket must exist and should be versioned).

Task Expired and Task Dead-Lettered events go to the log (stderr) and to
GET /events (the latest 1000, newest first; ?limit=N), in place of an
EventBridge bus. Presigned artifact URLs point at the S3 server.

The web console is at /ui/ (a browser opening / is sent there): queues,
tasks with their timelines and deadlines, dead letters, schedules, events.

Push queues: --push QUEUE=TARGET (repeatable) makes QUEUE's tasks be
delivered in this process to TARGET, an http(s):// URL (a POST signed with
--push-secret) or a Lambda function name (invoked at --lambda-endpoint, or
S3Q_LAMBDA_ENDPOINT): the queue is declared with that target at start, as
PUT /queues/{queue} would. Declare a push queue with max_concurrency or a
timeout over HTTP instead. S3Q_PUSH_BINDINGS (JSON, see docs/push.md), when
set, limits which targets each queue may declare, as in the stack.

Examples:
  s3q dev
  s3q dev --tick 5s --data-dir .s3q
  s3q dev --endpoint http://127.0.0.1:7070 --bucket s3q
  s3q dev --push orders=http://127.0.0.1:9000/ --push-secret dev-secret`,
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&o.Addr, "addr", devserver.DefaultAddr, "`address` to serve the API on")
			fs.StringVar(&o.DataDir, "data-dir", "", "persist the in-process S3 bucket in `dir` (history then keeps only the latest version)")
			fs.StringVar(&o.Endpoint, "endpoint", "", "use this S3 `url` instead of the in-process server")
			fs.StringVar(&o.Bucket, "bucket", "", "bucket `name` (default s3q)")
			fs.StringVar(&o.Prefix, "prefix", "", "key `prefix` for everything s3q stores")
			fs.StringVar(&o.Region, "region", "", "signing `region` of --endpoint (default us-east-1)")
			fs.Var(&tick, "tick", "fire sweep and tick every `duration` (default 60s)")
			fs.Var(&ttl, "default-ttl", "TTL of tasks submitted without one, a `duration` (default: none)")
			fs.IntVar(&o.Shards, "shards", 1, "index shards per queue")
			fs.Var(&maxWait, "max-wait", "longest submit or claim wait, a `duration` (S3Q_MAX_WAIT on Lambda; default 25s)")
			fs.Var(push, "push", "deliver `queue=target` (a URL or a Lambda function name) in this process; repeatable")
			fs.StringVar(&pushSecret, "push-secret", "dev-secret", "signing `secret` of URL targets")
			fs.StringVar(&o.LambdaEndpoint, "lambda-endpoint", os.Getenv(config.EnvLambdaEndpoint), "Lambda Invoke `url` for Lambda targets")
		},
		run: func(ctx context.Context, e *env, args []string) error {
			if len(args) != 0 {
				return usageErr("dev takes no arguments")
			}
			o.TickInterval, o.DefaultTTL, o.MaxWait = tick.d, ttl.d, maxWait.d
			pqs, err := devPushQueues(os.Getenv(config.EnvPushQueues), push.m)
			if err != nil {
				return usageErr("%v", err)
			}
			o.PushQueues, o.PushSecrets = pqs, map[string]string{devSecretName: pushSecret}
			if b := os.Getenv(config.EnvPushBindings); b != "" {
				if o.PushBindings, err = dispatch.ParseBindings([]byte(b)); err != nil {
					return usageErr("%s: %v", config.EnvPushBindings, err)
				}
			}
			o.Out = e.stdout
			o.Logger = slog.New(slog.NewJSONHandler(e.stderr, nil))
			return devListenErr(devserver.Run(ctx, o), o.Addr)
		},
	}
}

// devListenErr words a failure to listen on --addr as what to do about it;
// without it, the address in use read as an API that does not answer.
func devListenErr(err error, addr string) error {
	var op *net.OpError
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		port := "8181"
		if _, p, e := net.SplitHostPort(addr); e == nil && p != "" {
			if n, e := strconv.Atoi(p); e == nil && n > 0 && n < 65535 {
				port = strconv.Itoa(n + 1)
			}
		}
		return &cliError{exit: exitError, code: "error", field: "--addr", message: fmt.Sprintf("%s is in use (another s3q dev?)", addr),
			hint: fmt.Sprintf("Pick another port: s3q dev --addr 127.0.0.1:%s (make dev DEV_FLAGS=\"--addr 127.0.0.1:%s\"),\nand export S3Q_URL=http://127.0.0.1:%s where you run the CLI.", port, port, port)}
	case errors.As(err, &op) && op.Op == "listen":
		return flagErr("addr", "127.0.0.1:8181", "%q: %v", addr, op.Err)
	}
	return err
}
