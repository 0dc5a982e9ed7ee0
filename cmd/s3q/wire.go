package main

import (
	"github.com/s3q/s3q/shared/config"
	"github.com/s3q/s3q/shared/devserver"
	"github.com/s3q/s3q/shared/lambdafn"
)

// wireTimers gives the dev server the sweep and tick work of the core.
// The sweep's events go to the dev server's publisher: the log and GET
// /events.
func wireTimers(o *devserver.Options) {
	o.Wire = func(d *lambdafn.Deps) {
		d.Sweep = lambdafn.NewSweep(*d)
		d.Tick = lambdafn.NewTick(*d)
	}
}

// wireDeps gives an invoked timer function the sweep and tick work.
func wireDeps(d *lambdafn.Deps, c config.Config) {
	d.Sweep = lambdafn.NewSweep(*d)
	d.Tick = lambdafn.NewTick(*d)
}
