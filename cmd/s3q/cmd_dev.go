package main

import (
	"context"
	"flag"
	"log/slog"

	"github.com/s3q/s3q/shared/devserver"
)

func init() {
	register(func() *command {
		var o devserver.Options
		var tick, ttl, maxWait durationFlag
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

Examples:
  s3q dev
  s3q dev --tick 5s --data-dir .s3q
  s3q dev --endpoint http://127.0.0.1:7070 --bucket s3q`,
			flags: func(fs *flag.FlagSet) {
				fs.StringVar(&o.Addr, "addr", devserver.DefaultAddr, "`address` to serve the API on")
				fs.StringVar(&o.DataDir, "data-dir", "", "persist the in-process S3 bucket in `dir` (history then keeps only the latest version)")
				fs.StringVar(&o.Endpoint, "endpoint", "", "use this S3 `url` instead of the in-process server")
				fs.StringVar(&o.Bucket, "bucket", "", "bucket `name` (default s3q)")
				fs.StringVar(&o.Prefix, "prefix", "", "key `prefix` for everything s3q stores")
				fs.StringVar(&o.Region, "region", "", "signing `region` of --endpoint (default us-east-1)")
				fs.Var(&tick, "tick", "fire sweep and tick every `duration` (default 60s)")
				fs.Var(&ttl, "default-ttl", "TTL of tasks submitted without one (default: none)")
				fs.IntVar(&o.Shards, "shards", 1, "index shards per queue")
				fs.Var(&maxWait, "max-wait", "longest submit or claim `wait` (S3Q_MAX_WAIT on Lambda; default 25s)")
			},
			run: func(ctx context.Context, e *env, args []string) error {
				if len(args) != 0 {
					return usageErr("dev takes no arguments")
				}
				o.TickInterval, o.DefaultTTL, o.MaxWait = tick.d, ttl.d, maxWait.d
				o.Out = e.stdout
				o.Logger = slog.New(slog.NewJSONHandler(e.stderr, nil))
				wireTimers(&o)
				return devserver.Run(ctx, o)
			},
		}
	})
}
