package main

import (
	"github.com/s3q/s3q/shared/config"
	"github.com/s3q/s3q/shared/devserver"
	"github.com/s3q/s3q/shared/lambdafn"
)

// wireTimers gives the dev server the sweep and tick work of the core.
func wireTimers(o *devserver.Options) {}

// wireDeps gives an invoked timer function the sweep and tick work.
func wireDeps(d *lambdafn.Deps, c config.Config) {}
