package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/s3q/s3q/shared/config"
	"github.com/s3q/s3q/shared/store"
)

// checkCommand is s3q check.
func checkCommand() *command {
	return &command{
		name: "check", summary: "check that an S3 bucket keeps the promises s3q relies on",
		details: `Probes the bucket of the environment (S3Q_BUCKET, with S3Q_ENDPOINT,
S3Q_PREFIX, AWS_REGION and credentials, as 's3q sweep' reads them) on a
scratch key under s3q-probe/: a create-if-absent (If-None-Match: *) of a key
that exists must be refused, and so must a compare-and-swap (If-Match) on an
ETag that is not the key's, while one on the key's own ETag is applied. A
server (or a proxy in front of it) that does not keep these would let two
workers claim one task and a retried submit replace a task's input: check
exits 1 and says which promise broke. It warns when the bucket keeps no
versions (a task's history then has only its last version).

s3q dev --endpoint and the commands that work on a bucket directly (sweep,
tick, invoke with S3Q_BUCKET) make the same probe at start and refuse such
a server.

Examples:
  S3Q_BUCKET=my-bucket S3Q_ENDPOINT=http://127.0.0.1:8333 s3q check`,
		run: func(ctx context.Context, e *env, args []string) error {
			if len(args) != 0 {
				return usageErr("check takes no arguments")
			}
			if os.Getenv(config.EnvBucket) == "" {
				return usageErr(config.EnvBucket + " is not set: name the bucket to check (with S3Q_ENDPOINT for a server other than AWS S3)")
			}
			cfg, err := config.FromEnv(os.Getenv)
			if err != nil {
				return err
			}
			s, err := cfg.Store(ctx)
			if err != nil {
				return err
			}
			res, err := store.Probe(ctx, s)
			if err != nil {
				return fmt.Errorf("bucket %s: %w", cfg.Bucket, err)
			}
			fmt.Fprintf(e.stdout, "bucket %s: create-if-absent and compare-and-swap are honoured\n", cfg.Bucket)
			if !res.Versioning {
				fmt.Fprintln(e.stdout, versioningWarning(cfg.Bucket))
			} else {
				fmt.Fprintf(e.stdout, "bucket %s: versioning is on\n", cfg.Bucket)
			}
			return nil
		},
	}
}

func versioningWarning(bucket string) string {
	return fmt.Sprintf("warning: bucket %s keeps no versions: a task's history has only its last version (turn versioning on)", bucket)
}

// probeBucket is the probe the commands that work on a bucket directly
// make at start: a server that does not honour conditional writes is
// refused; a probe that cannot run (no access to s3q-probe/, say) and a
// bucket without versions are warnings on stderr.
func probeBucket(ctx context.Context, e *env, bucket string, s store.Store) error {
	res, err := store.Probe(ctx, s)
	switch {
	case errors.Is(err, store.ErrNotHonoured):
		return fmt.Errorf("bucket %s: %w; s3q needs a server that honours If-None-Match and If-Match on PUT (s3q check)", bucket, err)
	case err != nil:
		fmt.Fprintf(e.stderr, "warning: could not check bucket %s's conditional writes: %v\n", bucket, err)
	case !res.Versioning:
		fmt.Fprintln(e.stderr, versioningWarning(bucket))
	}
	return nil
}
