// Command sweep-expired is the Lambda function EventBridge fires every minute to
// expire overdue tasks, reclaim expired leases, publish Task Expired and Task
// Dead-Lettered events and delete the artifacts that are due.
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
	// The sweep: events to the bus in S3Q_EVENT_BUS (else the log), EMF
	// metrics to stdout after each run.
	deps.Sweep = lambdafn.NewSweep(deps)
	h, err := lambdafn.New("sweep-expired", deps)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sweep-expired: %v\n", err)
		os.Exit(1)
	}
	lambda.Start(h)
}
