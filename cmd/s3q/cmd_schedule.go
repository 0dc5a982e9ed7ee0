package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/s3q/s3q/shared/client"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/schedule"
)

// scheduleFlags are the flags of schedule create and update.
type scheduleFlags struct {
	fs                                         *flag.FlagSet
	taskType, input, cron, tz, ttlFrom, missed string
	overlap                                    string
	maxAttempts, priority                      int
	ttl, window                                durationFlag
	paused                                     bool
}

func (f *scheduleFlags) define(fs *flag.FlagSet) {
	f.fs = fs
	fs.StringVar(&f.cron, "cron", "", "cron `expression`: 5 fields or @hourly, @daily, @every 15m, ...")
	fs.StringVar(&f.taskType, "type", "", "task `type` of each fired task")
	fs.StringVar(&f.taskType, "t", "", "")
	fs.StringVar(&f.input, "input", "", "input `json` of each fired task, or @file")
	fs.StringVar(&f.input, "i", "", "")
	fs.StringVar(&f.tz, "timezone", "", "IANA time `zone` the cron is read in (default UTC)")
	fs.Var(&f.ttl, "ttl", "each fired task's time to live, a `duration` from its fire time")
	fs.StringVar(&f.ttlFrom, "ttl-from", "", "when the ttl starts: submission (default) or first_attempt")
	fs.IntVar(&f.maxAttempts, "max-attempts", 0, "claims each fired task gets (default 3)")
	fs.IntVar(&f.priority, "priority", 0, "priority of each fired task, 1 (highest) to 5 (lowest) (default: the queue's, else 3)")
	fs.StringVar(&f.missed, "missed-runs", "", "after an outage: skip (default: fire only the latest time) or catch_up")
	fs.Var(&f.window, "catch-up-window", "how far back catch_up goes, a `duration` (default 24h)")
	fs.StringVar(&f.overlap, "overlap", "", "allow (default) or skip: do not fire while the last fired task is pending or running")
	fs.BoolVar(&f.paused, "paused", false, "create the schedule paused")
}

// overlay applies the flags that were set to req.
func (f *scheduleFlags) overlay(req *schedule.Request) error {
	var err error
	f.fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "cron":
			req.Cron = f.cron
		case "type", "t":
			req.TaskType = f.taskType
		case "input", "i":
			var raw []byte
			if raw, err = readInput(f.input); err == nil {
				req.Input = raw
			}
		case "timezone":
			req.Timezone = f.tz
		case "ttl":
			req.TTL = ptr(queue.Duration(f.ttl.d))
		case "ttl-from":
			req.TTLFrom = queue.TTLFrom(f.ttlFrom)
		case "max-attempts":
			req.MaxAttempts = f.maxAttempts
		case "priority":
			req.Priority = f.priority
		case "missed-runs":
			req.MissedRuns = schedule.MissedRuns(f.missed)
		case "catch-up-window":
			req.CatchUpWindow = ptr(queue.Duration(f.window.d))
		case "overlap":
			req.Overlap = schedule.Overlap(f.overlap)
		case "paused":
			req.Enabled = ptr(!f.paused)
		}
	})
	return err
}

// scheduleCommand is s3q schedule.
func scheduleCommand() *command {
	r := &scheduleCall{}
	return &command{
		name: "schedule", args: "SUBCOMMAND [ID]", summary: "manage recurring cron schedules",
		subFlags: map[string][]string{
			"create": {"cron", "type", "input", "timezone", "ttl", "ttl-from", "max-attempts", "priority", "missed-runs", "catch-up-window", "overlap", "paused"},
			"update": {"cron", "type", "input", "timezone", "ttl", "ttl-from", "max-attempts", "priority", "missed-runs", "catch-up-window", "overlap"},
			"list":   {"limit", "cursor"}, "history": {"since", "limit", "cursor"},
			"show": nil, "pause": nil, "resume": nil, "trigger": nil, "delete": nil,
		},
		details: `A schedule lives in the queue its tasks fire into: --queue (default
"default"). A schedule of another queue is not found.

Subcommands:
  create ID --cron EXPR --type T [flags]   create a schedule
  update ID [flags]                        change the flags given, keep the rest
  list                                     list schedules
  show ID                                  a schedule with its next 5 fire times
  pause ID | resume ID                     stop firing / fire again from now on
  trigger ID                               fire once, now
  delete ID                                delete it (the tasks it fired stay)
  history ID [--since T]                   its fires, oldest first

Each cron time fires exactly once, however many ticks run and wherever one
crashes. Cron expressions are read in --timezone: a time skipped by a DST
change does not fire that day; a repeated one fires once. Missed runs (an
outage) are skipped, firing only the latest time, unless --missed-runs catch_up.

Examples:
  s3q schedule create nightly --cron '0 2 * * *' --timezone Europe/Berlin -t report.build --ttl 1h
  s3q schedule create poll --cron '@every 15m' -t feed.poll --overlap skip --queue feeds
  s3q schedule update nightly --cron '30 2 * * 1-5'
  s3q schedule history nightly --since 2026-01-01T00:00:00Z`,
		flags: func(fs *flag.FlagSet) {
			r.sf.define(fs)
			fs.IntVar(&r.limit, "limit", 0, "items per page (list, history)")
			fs.StringVar(&r.cursor, "cursor", "", "continue a previous page (list, history)")
			fs.Var(&r.since, "since", "history from this RFC 3339 `time` on")
		},
		run: func(ctx context.Context, e *env, args []string) error {
			if err := r.start(ctx, e, args, "schedule", "create, update, list, show, pause, resume, trigger, delete, history"); err != nil {
				return err
			}
			sub, ok := scheduleSubcommands[r.sub]
			if !ok {
				return usageErr("unknown schedule subcommand %q%s", r.sub, didYouMean(r.sub, scheduleSubcommands))
			}
			return sub(r)
		},
	}
}

// scheduleCall is one run of s3q schedule SUBCOMMAND: its flags, the
// arguments after the subcommand, and the client.
type scheduleCall struct {
	sf     scheduleFlags
	limit  int
	cursor string
	since  timeFlag

	subcall
}

// scheduleSubcommands are the subcommands of s3q schedule.
var scheduleSubcommands = map[string]func(r *scheduleCall) error{
	"create": (*scheduleCall).create, "update": (*scheduleCall).update,
	"show": (*scheduleCall).showOne, "pause": (*scheduleCall).pauseOrResume, "resume": (*scheduleCall).pauseOrResume,
	"trigger": (*scheduleCall).trigger, "delete": (*scheduleCall).delete,
	"list": (*scheduleCall).list, "history": (*scheduleCall).history,
}

// id returns the one schedule ID the subcommand takes.
func (r *scheduleCall) id() (string, error) { return r.arg("schedule", "schedule ID") }

// show prints a schedule an API call answered, or returns its error.
func (r *scheduleCall) show(s schedule.Schedule, err error) error {
	if err != nil {
		return err
	}
	if r.e.output == "json" {
		return printJSON(r.e.stdout, map[string]any{"schedule": s})
	}
	printSchedule(r.e.stdout, s, time.Now())
	return nil
}

func (r *scheduleCall) create() error {
	id, err := r.id()
	if err != nil {
		return err
	}
	req := schedule.Request{ID: id}
	if err := r.sf.overlay(&req); err != nil {
		return err
	}
	if req.Cron == "" || req.TaskType == "" {
		return usageErr("schedule create needs --cron and --type")
	}
	return r.show(r.c.CreateSchedule(r.ctx, req))
}

func (r *scheduleCall) update() error {
	id, err := r.id()
	if err != nil {
		return err
	}
	cur, err := r.c.GetSchedule(r.ctx, id)
	if err != nil {
		return err
	}
	req := cur.Request()
	req.Enabled = nil // unchanged unless --paused says otherwise
	if err := r.sf.overlay(&req); err != nil {
		return err
	}
	return r.show(r.c.UpdateSchedule(r.ctx, id, req))
}

func (r *scheduleCall) showOne() error {
	id, err := r.id()
	if err != nil {
		return err
	}
	return r.show(r.c.GetSchedule(r.ctx, id))
}

func (r *scheduleCall) pauseOrResume() error {
	id, err := r.id()
	if err != nil {
		return err
	}
	if r.sub == "pause" {
		return r.show(r.c.PauseSchedule(r.ctx, id))
	}
	return r.show(r.c.ResumeSchedule(r.ctx, id))
}

func (r *scheduleCall) trigger() error {
	id, err := r.id()
	if err != nil {
		return err
	}
	f, err := r.c.TriggerSchedule(r.ctx, id)
	if err != nil {
		return err
	}
	if r.e.output == "json" {
		return printJSON(r.e.stdout, map[string]any{"fire": f})
	}
	fmt.Fprintf(r.e.stdout, "fired %s at %s: task %s\n", f.ScheduleID, f.FireTime.UTC().Format(time.RFC3339), f.TaskID)
	return nil
}

func (r *scheduleCall) delete() error {
	id, err := r.id()
	if err != nil {
		return err
	}
	if err := r.c.DeleteSchedule(r.ctx, id); err != nil {
		return err
	}
	if r.e.output != "json" {
		fmt.Fprintf(r.e.stdout, "deleted schedule %s\n", id)
	}
	return nil
}

func (r *scheduleCall) list() error {
	if len(r.rest) != 0 {
		return usageErr("schedule list takes no ID")
	}
	res, err := r.c.ListSchedules(r.ctx, client.ListSchedulesRequest{Limit: r.limit, Cursor: r.cursor})
	if err != nil {
		return err
	}
	if r.e.output == "json" {
		return printJSON(r.e.stdout, res)
	}
	printSchedules(r.e.stdout, res.Schedules, time.Now())
	if res.NextCursor != "" {
		fmt.Fprintf(r.e.stderr, "more: s3q schedule list --cursor %s\n", res.NextCursor)
	}
	return nil
}

func (r *scheduleCall) history() error {
	id, err := r.id()
	if err != nil {
		return err
	}
	req := client.ScheduleHistoryRequest{Limit: r.limit, Cursor: r.cursor}
	if r.since.set {
		req.Since = &r.since.t
	}
	res, err := r.c.ScheduleHistory(r.ctx, id, req)
	if err != nil {
		return err
	}
	if r.e.output == "json" {
		return printJSON(r.e.stdout, res)
	}
	printFires(r.e.stdout, res.Fires)
	if res.NextCursor != "" {
		fmt.Fprintf(r.e.stderr, "more: s3q schedule history %s --cursor %s\n", id, res.NextCursor)
	}
	return nil
}

func printSchedule(w io.Writer, s schedule.Schedule, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "%s:\t%s\n", k, v) }
	row("id", s.ID)
	state := "enabled"
	if !s.Enabled {
		state = "paused"
	}
	row("state", state)
	row("cron", s.Cron+" ("+s.Timezone+")")
	row("task", s.TaskType+" in queue "+s.Queue)
	if s.TTL != nil {
		row("ttl", s.TTL.String())
	}
	row("missed_runs", string(s.MissedRuns))
	row("overlap", string(s.Overlap))
	row("last_run_at", stamp(s.LastRunAt, now))
	if s.LastTaskID != "" {
		row("last_task_id", s.LastTaskID)
	}
	row("next_run_at", stamp(s.NextRunAt, now))
	var next []string
	for _, t := range s.NextRuns {
		next = append(next, t.UTC().Format(time.RFC3339))
	}
	if len(next) > 0 {
		row("next_runs", strings.Join(next, ", "))
	}
	tw.Flush()
}

func printSchedules(w io.Writer, ss []schedule.Schedule, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tCRON\tTIMEZONE\tTYPE\tSTATE\tNEXT RUN")
	for _, s := range ss {
		state, next := "enabled", "-"
		if !s.Enabled {
			state = "paused"
		}
		if s.NextRunAt != nil {
			next = relative(*s.NextRunAt, now)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", s.ID, s.Cron, s.Timezone, s.TaskType, state, next)
	}
	tw.Flush()
}

func printFires(w io.Writer, fs []schedule.Fire) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FIRE TIME\tTASK\tNOTE")
	for _, f := range fs {
		note := ""
		switch {
		case f.Skipped != "":
			note = "skipped: " + f.Skipped
		case f.Trigger:
			note = "triggered"
		}
		if f.Missed > 0 {
			note = strings.TrimSpace(note + fmt.Sprintf(" (%d missed before)", f.Missed))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", f.FireTime.UTC().Format(time.RFC3339), f.TaskID, note)
	}
	tw.Flush()
}
