package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/s3q/s3q/shared/config"
	"github.com/s3q/s3q/shared/lambdafn"
	"github.com/s3q/s3q/shared/queue"
)

// sweepCommand is s3q sweep.
func sweepCommand() *command {
	return &command{
		name: "sweep", summary: "run one sweep now: expire overdue tasks, reclaim leases, publish events",
		details: `Runs the work of the sweep-expired function once, in this process, at the
current time, on the bucket itself (not through the API): every pending task
past its deadline is expired, lapsed leases are reclaimed, the pending children
of expired parents are expired, the Task Expired and Task Dead-Lettered events
owed are published and the artifacts that are due are deleted. Prints what it
did.

It uses the same environment as 's3q invoke' and the deployed function:
S3Q_BUCKET (required), S3Q_ENDPOINT, S3Q_PREFIX, AWS_REGION, S3Q_SHARDS,
S3Q_EVENT_BUS (without it, events go to the log on stderr), ... Running it
beside the deployed sweep is safe: each task moves by one conditional write.

Examples:
  S3Q_BUCKET=s3q S3Q_ENDPOINT=http://127.0.0.1:7070 s3q sweep
  S3Q_BUCKET=my-s3q-bucket S3Q_EVENT_BUS=s3q-prod-events s3q sweep -o json`,
		run: func(ctx context.Context, e *env, args []string) error {
			if len(args) != 0 {
				return usageErr("sweep takes no arguments")
			}
			cfg, err := config.FromEnv(os.Getenv)
			if err != nil {
				return err
			}
			// The sweep-expired function's wiring; EMF metrics are for
			// CloudWatch Logs, which a CLI run has not.
			deps, err := lambdafn.Build(ctx, cfg, lambdafn.Parts{Out: e.stderr, NoMetrics: true}, lambdafn.SweepExpired)
			if err != nil {
				return err
			}
			if err := deps.CheckLayout(ctx); err != nil {
				return err
			}
			rep, err := deps.Sweep(ctx, time.Now())
			if e.output == "json" {
				if perr := printJSON(e.stdout, rep); perr != nil {
					return perr
				}
			} else {
				printSweep(e.stdout, rep)
			}
			return err
		},
	}
}

// printSweep writes a sweep's report for people.
func printSweep(w io.Writer, rep queue.SweepReport) {
	r := rep.Requests
	fmt.Fprintf(w, "swept %d of %d queue(s) due at %s in %s: %d S3 requests (%d LIST, %d GET, %d HEAD, %d PUT, %d DELETE)\n",
		rep.Queues, rep.QueuesDue, rep.Now.UTC().Format(time.RFC3339), rep.Duration.Round(time.Millisecond), r.Total(), r.List, r.Get, r.Head, r.Put, r.Delete)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, row := range []struct {
		name string
		n    int
	}{
		{"expired", rep.Expired},
		{"expired with their parent", rep.ExpiredByParent},
		{"children asked to cancel", rep.CancelRequested},
		{"leases reclaimed", rep.Reclaimed},
		{"dead-lettered", rep.DeadLettered},
		{"cancelled", rep.Cancelled},
		{"parked until their lease ends", rep.Parked},
		{"records repaired", rep.Repaired},
		{"stale markers deleted", rep.StaleMarkers},
		{"lost to another writer", rep.Conflicts},
		{"events sent", rep.EventsSent},
		{"events left for the next sweep", rep.EventsFailed},
		{"artifacts deleted", rep.ArtifactsDeleted},
		{"due within 5m", rep.NearExpiration},
		{"queue wake-ups deleted", rep.WakeupsDeleted},
	} {
		fmt.Fprintf(tw, "  %s:\t%d\n", row.name, row.n)
	}
	tw.Flush()
	if len(rep.ExpiredByType) > 0 {
		types := make([]string, 0, len(rep.ExpiredByType))
		for tt := range rep.ExpiredByType {
			types = append(types, tt)
		}
		sort.Strings(types)
		parts := make([]string, len(types))
		for i, tt := range types {
			parts[i] = fmt.Sprintf("%s %d", tt, rep.ExpiredByType[tt])
		}
		fmt.Fprintf(w, "Task Expired events by type: %s\n", strings.Join(parts, ", "))
	}
	if rep.Incomplete {
		fmt.Fprintln(w, "incomplete: the sweep stopped with work left; the next sweep (or another 's3q sweep') carries on")
	}
	if rep.Errors > 0 {
		fmt.Fprintf(w, "errors: %d, left for the next sweep (see the error below)\n", rep.Errors)
	}
}
