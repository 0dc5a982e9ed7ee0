// Command tasks is the Lambda function behind every other task route of the HTTP API:
// get, list, history, cancel, retry, expire, heartbeat, complete, fail, reschedule,
// and the presigned artifact URLs.
// It is thin: configuration from the environment (see package config), then
// the handler of package lambdafn.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/s3q/s3q/shared/config"
	"github.com/s3q/s3q/shared/lambdafn"
)

func main() {
	cfg, err := config.FromEnv(os.Getenv)
	if err != nil {
		fmt.Fprintf(os.Stderr, "tasks: %v\n", err)
		os.Exit(1)
	}
	deps, err := lambdafn.DepsFromConfig(context.Background(), cfg, os.Stdout)
	if err != nil {
		fmt.Fprintf(os.Stderr, "tasks: %v\n", err)
		os.Exit(1)
	}
	h, err := lambdafn.New("tasks", deps)
	if err != nil {
		fmt.Fprintf(os.Stderr, "tasks: %v\n", err)
		os.Exit(1)
	}
	lambda.Start(h)
}
