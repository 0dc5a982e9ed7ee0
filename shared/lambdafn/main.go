package lambdafn

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/s3q/s3q/shared/config"
	"github.com/s3q/s3q/shared/dispatch"
)

// Main is the whole main of a function binary (functions/<name>): the
// configuration from the environment (package config, checked at start
// with every bad variable named), the Deps it describes, the work of the
// timer functions (NewSweep, NewTick), and lambda.Start. A bad
// configuration ends the process with a clear message on stderr.
func Main(name string) {
	fail := func(err error) {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
	cfg, err := config.FromEnv(os.Getenv)
	if err != nil {
		fail(err)
	}
	deps, err := DepsFromConfig(context.Background(), cfg, os.Stdout)
	if err != nil {
		fail(err)
	}
	switch name {
	case SweepExpired:
		// Events to the bus in S3Q_EVENT_BUS (else the log), EMF metrics
		// to stdout after each run.
		deps.Sweep = NewSweep(deps)
	case ScheduleTick:
		deps.Tick = NewTick(deps)
	case Dispatch:
		if deps.Dispatcher, err = DispatcherFromConfig(context.Background(), cfg, deps); err != nil {
			fail(err)
		}
	case Submit:
		// Tasks due now in a push queue wake the dispatch function.
		deps.Targets = dispatch.NewDeclared(deps.Queue, cfg.PushQueues, 0)
		if deps.Waker, err = WakerFromConfig(context.Background(), cfg, deps.Logger); err != nil {
			fail(err)
		}
	}
	h, err := New(name, deps)
	if err != nil {
		fail(err)
	}
	lambda.Start(h)
}
