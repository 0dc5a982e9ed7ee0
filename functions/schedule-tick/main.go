// Command schedule-tick is the Lambda function EventBridge fires every minute to
// fire the due cron schedules.
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
		fmt.Fprintf(os.Stderr, "schedule-tick: %v\n", err)
		os.Exit(1)
	}
	deps, err := lambdafn.DepsFromConfig(context.Background(), cfg, os.Stdout)
	if err != nil {
		fmt.Fprintf(os.Stderr, "schedule-tick: %v\n", err)
		os.Exit(1)
	}
	// The tick: every due cron schedule fires once per cron time.
	deps.Tick = lambdafn.NewTick(deps)
	h, err := lambdafn.New("schedule-tick", deps)
	if err != nil {
		fmt.Fprintf(os.Stderr, "schedule-tick: %v\n", err)
		os.Exit(1)
	}
	lambda.Start(h)
}
