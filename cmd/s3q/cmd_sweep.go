package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/s3q/s3q/shared/config"
	"github.com/s3q/s3q/shared/lambdafn"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/schedule"
)

// sweepCommand is s3q sweep.
func sweepCommand() *command {
	return &command{
		name: "sweep", summary: "run one sweep now: expire overdue tasks, reclaim leases, publish events",
		details: `Runs the work of the sweep-expired function once, at the current time: every
pending task past its deadline is expired, lapsed leases are reclaimed, the
pending children of expired parents are expired, the Task Expired and Task
Dead-Lettered events owed are published and the artifacts that are due are
deleted. Prints what it did.

Without S3Q_BUCKET it asks the s3q dev at --url (S3Q_URL, default where
'make dev' listens) to run it, as 's3q invoke' does: no other setting is
needed, and its events show on the dev console's Events page. With
S3Q_BUCKET it runs in this process on that bucket, with the environment of
the deployed function: S3Q_ENDPOINT, S3Q_PREFIX, AWS_REGION, S3Q_SHARDS,
S3Q_EVENT_BUS (without it, events go to the log on stderr), ... Running it
beside the deployed sweep is safe: each task moves by one conditional write.
A sweep run by hand makes one pass (the scheduled one stays its minute while
work is near due).

Examples:
  s3q sweep                                 # in the running s3q dev (make dev)
  S3Q_BUCKET=my-s3q-bucket S3Q_EVENT_BUS=s3q-prod-events s3q sweep -o json`,
		run: func(ctx context.Context, e *env, args []string) error {
			if len(args) != 0 {
				return usageErr("sweep takes no arguments")
			}
			var rep queue.SweepReport
			err := runTimerFunction(ctx, e, lambdafn.SweepExpired, &rep, func(deps lambdafn.Deps) (any, error) {
				return deps.Sweep(ctx, time.Now())
			})
			if rep.Now.IsZero() {
				return err
			}
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

// tickCommand is s3q tick.
func tickCommand() *command {
	return &command{
		name: "tick", summary: "run one schedule tick now: fire the schedules that are due",
		details: `Runs the work of the schedule-tick function once, at the current time: each
schedule whose next run is due fires its task (once per cron time, however
many ticks run). Prints what it did.

Without S3Q_BUCKET it asks the s3q dev at --url (S3Q_URL, default where
'make dev' listens) to run it, as 's3q invoke' does; with S3Q_BUCKET it runs
in this process on that bucket, with the environment of the deployed
function (S3Q_ENDPOINT, S3Q_PREFIX, AWS_REGION, ...).

Examples:
  s3q tick                                  # in the running s3q dev (make dev)
  S3Q_BUCKET=my-s3q-bucket s3q tick -o json`,
		run: func(ctx context.Context, e *env, args []string) error {
			if len(args) != 0 {
				return usageErr("tick takes no arguments")
			}
			var rep schedule.TickReport
			var ran bool
			err := runTimerFunction(ctx, e, lambdafn.ScheduleTick, &rep, func(deps lambdafn.Deps) (any, error) {
				ran = true
				return deps.Tick(ctx, time.Now())
			})
			if err != nil && !ran && rep == (schedule.TickReport{}) {
				return err
			}
			if e.output == "json" {
				if perr := printJSON(e.stdout, rep); perr != nil {
					return perr
				}
			} else {
				fmt.Fprintf(e.stdout, "tick: %d due, %d fired, %d skipped, %d missed, %d stale markers, %d raced, %d errors\n",
					rep.Due, rep.Fired, rep.Skipped, rep.Missed, rep.Stale, rep.Raced, rep.Errors)
				if rep.More {
					fmt.Fprintln(e.stdout, "more: the tick stopped with fires left; the next tick carries on")
				}
			}
			return err
		},
	}
}

// runTimerFunction runs a timer function's work once and decodes its
// report into result: in the s3q dev at --url (POST /dev/invoke/{name}
// with an event whose source is s3q.cli, so a sweep makes one pass)
// when S3Q_BUCKET is not set, else in this process through here, on the
// environment's bucket, as the deployed function is wired.
func runTimerFunction(ctx context.Context, e *env, name string, result any, here func(lambdafn.Deps) (any, error)) error {
	if os.Getenv(config.EnvBucket) == "" {
		ev, _ := json.Marshal(events.EventBridgeEvent{
			Version: "0", ID: queue.NewID(time.Now()), DetailType: "s3q " + name, Source: "s3q.cli",
			Time: time.Now().UTC(), Region: "us-east-1", Detail: json.RawMessage(`{}`),
		})
		out, err := invokeInDev(ctx, e, name, ev)
		if err != nil {
			return err
		}
		var rep struct {
			Result  json.RawMessage `json:"result"`
			Message string          `json:"message"`
		}
		if err := json.Unmarshal(out, &rep); err != nil || len(rep.Result) == 0 {
			return fmt.Errorf("%s in the s3q dev at %s answered no report: %s", name, e.url, out)
		}
		return json.Unmarshal(rep.Result, result)
	}
	cfg, err := config.FromEnv(os.Getenv)
	if err != nil {
		return err
	}
	// The function's wiring; EMF metrics are for CloudWatch Logs, which a
	// CLI run has not.
	deps, err := lambdafn.Build(ctx, cfg, lambdafn.Parts{Out: e.stderr, NoMetrics: true}, name)
	if err != nil {
		return err
	}
	if err := probeBucket(ctx, e, cfg.Bucket, deps.Queue.Store()); err != nil {
		return err
	}
	if err := deps.CheckLayout(ctx); err != nil {
		return err
	}
	rep, err := here(deps)
	b, merr := json.Marshal(rep)
	if merr == nil {
		merr = json.Unmarshal(b, result)
	}
	if err == nil {
		err = merr
	}
	return err
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
