// Command sweep-expired is the Lambda function EventBridge fires every minute to
// reclaim expired leases and expire overdue tasks.
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
		fmt.Fprintf(os.Stderr, "sweep-expired: %v\n", err)
		os.Exit(1)
	}
	deps, err := lambdafn.DepsFromConfig(context.Background(), cfg, os.Stdout)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sweep-expired: %v\n", err)
		os.Exit(1)
	}
	// deps.Sweep is the sweep's work; until it is wired here, the function
	// logs that it has nothing to do and reports wired=false.
	h, err := lambdafn.New("sweep-expired", deps)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sweep-expired: %v\n", err)
		os.Exit(1)
	}
	lambda.Start(h)
}
