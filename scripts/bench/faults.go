package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/s3q/s3q/shared/faultrun"
	"github.com/s3q/s3q/shared/s3local"
)

// benchFaults prints one line per fault mix: the randomized run of
// package faultrun (the dev server stack on a fault proxy in front of
// srv, the Go client submitting with ids, workers that crash mid-lease)
// and its audit. It prints what the audit found; it never fails on it.
func benchFaults(ctx context.Context, srv *s3local.Server, mixes string, rate float64, submits, workers int) error {
	for _, mix := range strings.Split(mixes, ",") {
		mix = strings.TrimSpace(mix)
		if mix == "" {
			continue
		}
		rep, err := faultrun.Run(ctx, faultrun.Config{
			Server: srv, Mix: mix, Rate: rate, Submits: submits, Workers: workers, Budget: 5 * time.Minute,
		})
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "bench: faults mix=%s %s\n", mix, rep.Detail())
		for _, p := range rep.Problems {
			fmt.Fprintf(os.Stderr, "bench: faults mix=%s %s\n", mix, p)
		}
		fmt.Println(rep.Line())
	}
	return nil
}
