package main

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/s3q/s3q/shared/client"
	"github.com/s3q/s3q/shared/queue"
)

// The queue operations (docs/operations.md): s3q stats, s3q purge, s3q
// bulk retry|cancel|expire; s3q queue pause|resume are in cmd_queue.go.

// statsCommand is s3q stats.
func statsCommand() *command {
	return &command{
		name: "stats", args: "[QUEUE...]", summary: "counts by status, oldest pending task and the last hour of a queue",
		details: `Shows, for each QUEUE (default --queue): whether it is paused, its live
tasks (pending or running) and how many are delayed, its failed, cancelled and
expired tasks, how long its oldest due pending task has waited, and how many
tasks failed, were cancelled or expired in the last hour.

Cost: the same LISTs as 's3q queue show' (one per 1,000 live tasks per shard,
one per 1,000 tasks of each of failed, cancelled and expired, at most 10 each)
and a GET per due task from the oldest until a pending one (at most 10).
Completions per hour are not counted: there is no index of them, and one would
cost a write per task.

Examples:
  s3q stats -q emails
  s3q stats emails thumbs -o json`,
		run: func(ctx context.Context, e *env, args []string) error {
			c, err := newClient(ctx, e)
			if err != nil {
				return err
			}
			names := args
			if len(names) == 0 {
				names = []string{e.queue}
			}
			var all []queue.QueueStats
			for _, name := range names {
				st, err := c.QueueStats(ctx, name)
				if err != nil {
					return err
				}
				all = append(all, st)
			}
			if e.output == "json" {
				if len(all) == 1 {
					return printJSON(e.stdout, map[string]any{"stats": all[0]})
				}
				return printJSON(e.stdout, map[string]any{"stats": all})
			}
			for i, st := range all {
				if i > 0 {
					fmt.Fprintln(e.stdout)
				}
				printStats(e.stdout, st)
			}
			return nil
		},
	}
}

// printStats shows a queue's stats as name: value lines.
func printStats(w io.Writer, st queue.QueueStats) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "%s:\t%s\n", k, v) }
	c := st.Counts
	state := "active"
	if st.Paused {
		state = "paused"
		if st.PausedAt != nil {
			state += " since " + st.PausedAt.UTC().Format(time.RFC3339)
		}
	}
	row("queue", st.Queue+" ("+state+")")
	live := fmt.Sprintf("%s (%s delayed)", count(&c, "live", c.Live), count(&c, "live", c.Delayed))
	if c.Running != nil {
		live += fmt.Sprintf(", %d running", *c.Running)
	}
	row("pending or running", live)
	if st.MaxPerSecond != nil {
		row("rate limit", rateString(st.MaxPerSecond, st.Burst))
	}
	row("failed", count(&c, "failed", c.Failed))
	row("cancelled", count(&c, "cancelled", c.Cancelled))
	row("expired", count(&c, "expired", c.Expired))
	switch {
	case c.Completed != nil:
		row("completed", count(&c, "completed", *c.Completed))
	case c.IsCapped("live"):
		row("completed", fmt.Sprintf("not counted while over %d tasks are live", queue.MaxCountPages*1000))
	}
	oldest := "none due"
	if st.OldestPendingAt != nil {
		oldest = fmt.Sprintf("waiting %s (available since %s)", queue.FormatDuration(time.Duration(*st.OldestPendingAgeSeconds)*time.Second),
			st.OldestPendingAt.UTC().Format(time.RFC3339))
	}
	row("oldest pending", oldest)
	r := st.Recent
	row("last hour", fmt.Sprintf("%d failed, %d cancelled, %d expired", r.Failed, r.Cancelled, r.Expired))
	_ = tw.Flush()
}

// bulkFlags are the filter of s3q purge and s3q bulk.
type bulkFlags struct {
	statuses  string
	taskType  string
	olderThan durationFlag
	limit     int
	dryRun    bool
	yes       bool
	// most, when above 0, is the most tasks a run changes: the count
	// the operator confirmed, so that tasks that arrive while the
	// question is read are not purged with the rest.
	most int
}

func (f *bulkFlags) define(fs *flag.FlagSet, statusUsage string, confirm bool) {
	fs.StringVar(&f.statuses, "status", "", statusUsage)
	fs.StringVar(&f.taskType, "type", "", "only tasks of this `type`")
	fs.StringVar(&f.taskType, "t", "", "")
	fs.Var(&f.olderThan, "older-than", "only tasks last changed at least this `duration` ago (7d, 12h)")
	fs.IntVar(&f.limit, "limit", 0, "tasks per API call, 1-100 (default 100)")
	fs.BoolVar(&f.dryRun, "dry-run", false, "count and list what would change; change nothing")
	if confirm {
		fs.BoolVar(&f.yes, "yes", false, "do not ask for confirmation")
		fs.BoolVar(&f.yes, "y", false, "")
	}
}

// request returns the API request of one status.
func (f *bulkFlags) request(status queue.Status) queue.BulkRequest {
	req := queue.BulkRequest{Status: status, TaskType: f.taskType, Limit: f.limit, DryRun: f.dryRun}
	if f.olderThan.set {
		req.OlderThan = ptr(queue.Duration(f.olderThan.d))
	}
	return req
}

// statusList returns the statuses of --status (comma-separated), or the
// one "" (the operation's default) when none is given.
func (f *bulkFlags) statusList() []queue.Status {
	if f.statuses == "" {
		return []queue.Status{""}
	}
	var out []queue.Status
	for _, s := range strings.Split(f.statuses, ",") {
		out = append(out, queue.Status(strings.TrimSpace(s)))
	}
	return out
}

// describe says in words which tasks the flags choose, for a prompt.
func (f *bulkFlags) describe(status queue.Status) string {
	s := string(status) + " tasks"
	if f.taskType != "" {
		s += " of type " + f.taskType
	}
	if f.olderThan.set {
		s += " last changed over " + queue.FormatDuration(f.olderThan.d) + " ago"
	}
	return s
}

// bulkTotal sums the calls of one operation over its pages and statuses.
type bulkTotal struct {
	Op      queue.BulkOp     `json:"op"`
	Queue   string           `json:"queue"`
	DryRun  bool             `json:"dry_run"`
	Calls   int              `json:"calls"`
	Matched int              `json:"matched"`
	Changed int              `json:"changed"`
	TaskIDs []string         `json:"task_ids"`
	Skipped []queue.BulkSkip `json:"skipped,omitempty"`
	// Partial is true when a --dry-run count stopped at maxCountCalls.
	Partial bool `json:"partial,omitempty"`
}

// maxCountCalls bounds the dry-run calls a purge makes to count what it
// will delete before it asks: at most 1,000 tasks examined for the prompt.
const maxCountCalls = 10

// runBulk calls op for each status of f, page after page, until every
// page is done (or maxCalls calls, when above 0), reporting progress on
// stderr.
func runBulk(ctx context.Context, e *env, c *client.Client, op queue.BulkOp, f *bulkFlags, statuses []queue.Status, dry bool, maxCalls int) (bulkTotal, error) {
	tot := bulkTotal{Op: op, Queue: c.Queue(), DryRun: dry, TaskIDs: []string{}}
	for _, st := range statuses {
		req := f.request(st)
		req.DryRun = dry
		for {
			if maxCalls > 0 && tot.Calls >= maxCalls {
				tot.Partial = true
				return tot, nil
			}
			if !dry && f.most > 0 {
				left := f.most - tot.Changed
				if left <= 0 {
					return tot, nil
				}
				req.Limit = min(left, cmp.Or(f.limit, queue.MaxBulk))
			}
			res, err := c.Bulk(ctx, op, req)
			if err != nil {
				return tot, err
			}
			tot.Calls++
			tot.Matched += res.Matched
			tot.Changed += res.Changed
			tot.TaskIDs = append(tot.TaskIDs, res.TaskIDs...)
			tot.Skipped = append(tot.Skipped, res.Skipped...)
			if !dry && res.Changed > 0 && e.output != "json" {
				fmt.Fprintf(e.stderr, "%s: %d %s so far\n", op, tot.Changed, pastTense(op))
			}
			if req.Cursor = res.NextCursor; req.Cursor == "" || ctx.Err() != nil {
				break
			}
		}
		if err := ctx.Err(); err != nil {
			return tot, err
		}
	}
	return tot, nil
}

func pastTense(op queue.BulkOp) string {
	switch op {
	case queue.OpRetry:
		return "retried"
	case queue.OpCancel:
		return "cancelled"
	case queue.OpExpire:
		return "expired"
	}
	return "purged"
}

// printBulk shows the outcome of a bulk operation.
func printBulk(e *env, tot bulkTotal) error {
	if e.output == "json" {
		return printJSON(e.stdout, tot)
	}
	verb := pastTense(tot.Op)
	if tot.DryRun {
		more := ""
		if tot.Partial {
			more = " at least"
		}
		fmt.Fprintf(e.stdout, "would have%s %d tasks %s in queue %s (dry run: nothing changed)\n", more, tot.Changed, verb, tot.Queue)
		for _, id := range tot.TaskIDs {
			fmt.Fprintln(e.stdout, "  "+id)
		}
	} else {
		fmt.Fprintf(e.stdout, "%s %d tasks in queue %s\n", verb, tot.Changed, tot.Queue)
	}
	if len(tot.Skipped) > 0 {
		reasons := map[string]int{}
		for _, s := range tot.Skipped {
			reasons[s.Reason]++
		}
		keys := make([]string, 0, len(reasons))
		for r := range reasons {
			keys = append(keys, r)
		}
		sort.Strings(keys)
		for _, r := range keys {
			fmt.Fprintf(e.stdout, "skipped %d: %s\n", reasons[r], r)
		}
	}
	return nil
}

// purgeCommand is s3q purge.
func purgeCommand() *command {
	f := &bulkFlags{}
	return &command{
		name: "purge", summary: "delete pending or finished tasks of a queue, by status, type and age",
		details: `Deletes the tasks of --queue in each --status (required; comma-separated:
pending, completed, failed, cancelled, expired, archived), optionally only of --type and
last changed more than --older-than ago. It counts them first (up to 1,000) and
asks, then deletes at most the tasks it counted; --yes does not ask, --dry-run
only counts and lists them.

Running tasks are never purged (cancel them first), nor failed or expired
tasks whose event the sweep has not published yet (within a minute). A purged
task is gone at once for every reader; its dedup key is free at once. The API
deletes at most 100 tasks per call: the command calls until it is through, and
an interrupted purge is finished by running it again.

Examples:
  s3q purge -q emails --status completed,cancelled --older-than 7d
  s3q purge -q emails --status pending --type email.send --dry-run
  s3q purge -q emails --status failed --yes`,
		flags: func(fs *flag.FlagSet) {
			f.define(fs, "the `statuses` to purge, comma-separated: pending, completed, failed, cancelled, expired, archived", true)
		},
		run: func(ctx context.Context, e *env, args []string) error {
			if len(args) != 0 {
				return usageErr("purge takes no arguments (the queue is --queue)")
			}
			if f.statuses == "" {
				return usageErr("purge needs --status: pending, completed, failed, cancelled, expired or archived (comma-separated)")
			}
			c, err := newClient(ctx, e)
			if err != nil {
				return err
			}
			statuses := f.statusList()
			if f.dryRun {
				tot, err := runBulk(ctx, e, c, queue.OpPurge, f, statuses, true, 0)
				if err != nil {
					return err
				}
				return printBulk(e, tot)
			}
			if !f.yes {
				count, err := runBulk(ctx, e, c, queue.OpPurge, f, statuses, true, maxCountCalls)
				if err != nil {
					return err
				}
				if count.Changed == 0 {
					return printBulk(e, bulkTotal{Op: queue.OpPurge, Queue: c.Queue(), TaskIDs: []string{}, Skipped: count.Skipped})
				}
				what := make([]string, len(statuses))
				for i, st := range statuses {
					what[i] = f.describe(st)
				}
				n := strconv.Itoa(count.Changed)
				if count.Partial {
					n = "at least " + n
				}
				fmt.Fprintf(e.stderr, "Purge %s %s of queue %s? They cannot be brought back. [y/N] ", n, strings.Join(what, " and "), c.Queue())
				if !confirmed(e.stdin) {
					fmt.Fprintln(e.stderr)
					return errors.New("not confirmed: nothing purged (--yes skips the question)")
				}
				if !count.Partial {
					f.most = count.Changed // what was asked, not what arrived since
				}
			}
			tot, err := runBulk(ctx, e, c, queue.OpPurge, f, statuses, false, 0)
			if err != nil {
				return fmt.Errorf("%w (purged %d before it; run again to go on)", err, tot.Changed)
			}
			return printBulk(e, tot)
		},
	}
}

// confirmed reads one answer line: y or yes.
func confirmed(r io.Reader) bool {
	line, _ := bufio.NewReader(r).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true
	}
	return false
}

// bulkCommand is s3q bulk.
func bulkCommand() *command {
	f := &bulkFlags{}
	return &command{
		name: "bulk", args: "retry|cancel|expire", summary: "retry, cancel or expire the tasks of a queue by status, type and age",
		details: `Runs one operation on every task of --queue that matches the filter, as
's3q retry|cancel|expire ID' would on each:

  retry    failed (default) or cancelled tasks go back to pending, with fresh attempts
  cancel   pending (default) tasks are cancelled; running ones are asked to cancel
  expire   pending tasks are expired by hand (they can never run again)

A task the operation refuses (a failed task whose event is not published yet,
a task whose deadline has passed) is reported as skipped, with why. The API
changes at most 100 tasks per call: the command calls until it is through, and
running it again after an interruption goes on where it stopped (a changed task
no longer matches).

Examples:
  s3q bulk retry -q emails --type email.send --dry-run
  s3q bulk retry -q emails --status cancelled --older-than 1h
  s3q bulk cancel -q emails --type newsletter
  s3q bulk expire -q emails --older-than 2d -o json`,
		flags: func(fs *flag.FlagSet) {
			f.define(fs, "the `statuses` to act on, comma-separated (default: failed for retry, pending for cancel and expire)", false)
		},
		run: func(ctx context.Context, e *env, args []string) error {
			if len(args) != 1 {
				return usageErr("bulk needs one operation: retry, cancel or expire")
			}
			op := queue.BulkOp(args[0])
			if op != queue.OpRetry && op != queue.OpCancel && op != queue.OpExpire {
				return usageErr("unknown bulk operation %q: retry, cancel or expire (s3q purge deletes)", args[0])
			}
			c, err := newClient(ctx, e)
			if err != nil {
				return err
			}
			tot, err := runBulk(ctx, e, c, op, f, f.statusList(), f.dryRun, 0)
			if err != nil {
				return fmt.Errorf("%w (%s %d before it; run again to go on)", err, pastTense(op), tot.Changed)
			}
			return printBulk(e, tot)
		},
	}
}
