// Command schedules is the Lambda function behind the schedule routes of the HTTP
// API: create, list, get, update, delete, pause, resume, trigger and history of
// the cron schedules.
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
		fmt.Fprintf(os.Stderr, "schedules: %v\n", err)
		os.Exit(1)
	}
	deps, err := lambdafn.DepsFromConfig(context.Background(), cfg, os.Stdout)
	if err != nil {
		fmt.Fprintf(os.Stderr, "schedules: %v\n", err)
		os.Exit(1)
	}
	h, err := lambdafn.New("schedules", deps)
	if err != nil {
		fmt.Fprintf(os.Stderr, "schedules: %v\n", err)
		os.Exit(1)
	}
	lambda.Start(h)
}
