package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/s3q/s3q/shared/client"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
)

// queueFlags are the settings of s3q queue create and update.
type queueFlags struct {
	fs                                   *flag.FlagSet
	ttlFrom, lambda, url, secret         string
	maxAttempts, shards, maxConcurrency  int
	priority, burst, maxSchedules        int
	maxPerSecond                         float64
	noRateLimit                          bool
	ttl, timeout                         durationFlag
	noTarget, noTTL, noTimeout, noCounts bool
	noMaxAttempts                        bool
	limit                                int
	cursor                               string
}

func (f *queueFlags) define(fs *flag.FlagSet) {
	f.fs = fs
	fs.Var(&f.ttl, "ttl", "default time to live of the queue's tasks, a `duration`")
	fs.StringVar(&f.ttlFrom, "ttl-from", "", "default ttl start: submission or first_attempt")
	fs.IntVar(&f.maxAttempts, "max-attempts", 0, "default claims a task gets before it fails")
	fs.Var(&f.timeout, "timeout", "default lease length of each attempt, a `duration`")
	fs.IntVar(&f.shards, "shards", 0, "index prefixes of the queue, 1-16, fixed at creation (default the deployment's)")
	fs.IntVar(&f.maxConcurrency, "max-concurrency", 0, "most tasks of the queue running at once, 1-1000 (0: no limit)")
	fs.IntVar(&f.priority, "priority", 0, "default priority of the queue's tasks, 1 (highest) to 5 (lowest) (default 3)")
	fs.IntVar(&f.maxSchedules, "max-schedules", 0, "most schedules that fire into the queue, 1-10000; one more is refused, too_many_schedules (default 100)")
	fs.Float64Var(&f.maxPerSecond, "max-per-second", 0, "most tasks of the queue started a `rate` per second, by every worker and push delivery together, 0.001-1000, fractions allowed (0.5: one every 2s)")
	fs.IntVar(&f.burst, "burst", 0, "with --max-per-second: tasks that may start at once after a quiet spell, 1-1000 (default max-per-second rounded up)")
	fs.BoolVar(&f.noRateLimit, "no-rate-limit", false, "update: remove the rate limit (--max-per-second and --burst)")
	fs.StringVar(&f.lambda, "target-lambda", "", "push target: a Lambda `function` name or ARN")
	fs.StringVar(&f.url, "target-url", "", "push target: an https `URL` (needs --target-secret)")
	fs.StringVar(&f.secret, "target-secret", "", "SSM `parameter` name of the HMAC secret signing deliveries to --target-url")
	fs.BoolVar(&f.noTarget, "no-target", false, "update: remove the push target (a pull queue again)")
	fs.BoolVar(&f.noTTL, "no-ttl", false, "update: remove the default ttl")
	fs.BoolVar(&f.noTimeout, "no-timeout", false, "update: remove the default timeout")
	fs.BoolVar(&f.noMaxAttempts, "no-max-attempts", false, "update: remove the default max attempts (tasks get the deployment's)")
	fs.BoolVar(&f.noCounts, "no-counts", false, "list: leave out the counts (each costs the server LISTs)")
	fs.IntVar(&f.limit, "limit", 0, "list: queues per page (default 100)")
	fs.StringVar(&f.cursor, "cursor", "", "list: continue a previous page")
}

// overlay applies the flags that were set to d.
func (f *queueFlags) overlay(d *queues.Declaration) {
	f.fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "ttl":
			d.TTL = ptr(queue.Duration(f.ttl.d))
		case "no-ttl":
			d.TTL = nil
		case "ttl-from":
			d.TTLFrom = queue.TTLFrom(f.ttlFrom)
		case "max-attempts":
			d.MaxAttempts = f.maxAttempts
		case "no-max-attempts":
			d.MaxAttempts = 0
		case "timeout":
			d.Timeout = ptr(queue.Duration(f.timeout.d))
		case "no-timeout":
			d.Timeout = nil
		case "shards":
			d.Shards = f.shards
		case "max-concurrency":
			d.MaxConcurrency = f.maxConcurrency
		case "priority":
			d.Priority = f.priority
		case "max-schedules":
			d.MaxSchedules = f.maxSchedules
		case "max-per-second":
			d.MaxPerSecond = ptr(f.maxPerSecond)
		case "burst":
			d.Burst = ptr(f.burst)
		case "no-rate-limit":
			d.MaxPerSecond, d.Burst = nil, nil
		case "target-lambda", "target-url", "target-secret":
			t := queues.Target{}
			if d.Target != nil {
				t = *d.Target
			}
			switch fl.Name {
			case "target-lambda":
				t = queues.Target{Lambda: f.lambda} // a Lambda target has no secret
			case "target-url":
				t.Lambda, t.URL = "", f.url
			default:
				t.Secret = f.secret
			}
			d.Target = &t
		case "no-target":
			d.Target = nil
		}
	})
}

// queueCommand is s3q queue.
func queueCommand() *command {
	r := &queueCall{}
	return &command{
		name: "queue", args: "SUBCOMMAND [NAME]", summary: "declare, list, show, update and delete queues",
		subFlags: map[string][]string{
			"create": {"ttl", "ttl-from", "max-attempts", "timeout", "shards", "max-concurrency", "priority", "max-schedules", "max-per-second", "burst", "target-lambda", "target-url", "target-secret"},
			"update": {"ttl", "ttl-from", "max-attempts", "timeout", "max-concurrency", "priority", "max-schedules", "max-per-second", "burst", "no-rate-limit", "target-lambda", "target-url", "target-secret", "no-target", "no-ttl", "no-timeout", "no-max-attempts"},
			"list":   {"limit", "cursor", "no-counts"}, "show": nil, "delete": nil, "pause": nil, "resume": nil,
		},
		details: `A queue is declared before tasks are submitted to it (unless the deployment
auto-declares, as s3q dev does): submitting to an undeclared queue is 404
queue_not_found. Its defaults apply where a submit and its task type give
none (request > task type > queue > global).

Subcommands:
  create NAME [flags]    declare a queue; of one that exists with the same settings
                         it changes nothing and shows it (exit 0, "exists"); with
                         other settings it fails (exit 4) naming the differences
                         and the 's3q queue update' that would make them
  update NAME [flags]    change the flags given, keep the rest (not --shards)
  list                   declared queues, with counts of live tasks
  show NAME              one queue, with its counts
  pause NAME             claims and push deliveries take nothing from it; submits go on
  resume NAME            undo pause
  delete NAME            delete it; refused while it holds pending or running tasks
                         (empty it first with 's3q purge -q NAME --status pending')

--max-schedules bounds the schedules that fire into the queue (s3q schedule
create past it is refused, too_many_schedules), so that one queue's schedules
cannot crowd out another's fires.

Counts come from the queue's indexes: live (pending or running), delayed (not
yet available), with --max-concurrency running (slots held), and failed,
cancelled and expired. A pause is seen by every process within 30s (the time a
declaration is cached); the sweep still expires the tasks of a paused queue.
See also 's3q stats'.

--max-per-second bounds the tasks of the queue started a second, by every
worker, container and push delivery together (one conditional write per claim
that starts tasks); --burst is how many may start at once after a quiet spell.
A claim held back answers 204 with Retry-After and the worker waits that long.
A change applies from the next start (within 30s everywhere); nothing already
running is touched. 'update --no-rate-limit' removes it.

Examples:
  s3q queue create emails --ttl 1h --max-attempts 5 --timeout 2m --max-concurrency 10
  s3q queue create thumbs --target-lambda arn:aws:lambda:eu-west-1:123456789012:function:thumbs
  s3q queue create hooks --target-url https://example.com/s3q --target-secret /s3q/hooks
  s3q queue update emails --max-concurrency 20 --no-ttl --no-max-attempts
  s3q queue create hooks-api --max-per-second 10 --burst 5
  s3q queue update hooks-api --no-rate-limit
  s3q queue update reports --max-schedules 500
  s3q queue pause emails
  s3q queue list --no-counts -o json`,
		flags: r.qf.define,
		run: func(ctx context.Context, e *env, args []string) error {
			if err := r.start(ctx, e, args, "queue", "create, update, list, show, pause, resume, delete"); err != nil {
				return err
			}
			sub, ok := queueSubcommands[r.sub]
			if !ok {
				return usageErr("unknown queue subcommand %q%s", r.sub, didYouMean(r.sub, queueSubcommands))
			}
			return sub(r)
		},
	}
}

// queueCall is one run of s3q queue SUBCOMMAND: its flags, the arguments
// after the subcommand, and the client.
type queueCall struct {
	qf queueFlags

	subcall
}

// queueSubcommands are the subcommands of s3q queue.
var queueSubcommands = map[string]func(r *queueCall) error{
	"create": (*queueCall).declare, "update": (*queueCall).declare,
	"show": (*queueCall).showOne, "delete": (*queueCall).delete, "list": (*queueCall).list,
	"pause": (*queueCall).pause, "resume": (*queueCall).pause,
}

// pause is pause and resume.
func (r *queueCall) pause() error {
	name, err := r.name()
	if err != nil {
		return err
	}
	op := r.c.ResumeQueue
	if r.sub == "pause" {
		op = r.c.PauseQueue
	}
	q, err := op(r.ctx, name)
	if err != nil {
		return err
	}
	if r.e.output == "json" {
		return printJSON(r.e.stdout, map[string]any{"queue": q})
	}
	if q.Paused {
		fmt.Fprintf(r.e.stdout, "queue %s is paused since %s: claims and push deliveries take nothing from it; submits go on ('s3q queue resume %s' undoes it)\n",
			name, q.PausedAt.UTC().Format(time.RFC3339), name)
	} else {
		fmt.Fprintf(r.e.stdout, "queue %s is active: claims and push deliveries take its tasks\n", name)
	}
	return nil
}

// name returns the one queue NAME the subcommand takes.
func (r *queueCall) name() (string, error) { return r.arg("queue", "queue NAME") }

// show prints a queue an API call answered, or returns its error.
func (r *queueCall) show(q client.QueueInfo, err error) error {
	if err != nil {
		return err
	}
	if r.e.output == "json" {
		return printJSON(r.e.stdout, map[string]any{"queue": q})
	}
	printQueue(r.e.stdout, q)
	return nil
}

// declare is create and update (the queue must exist). create is
// idempotent, as SQS's CreateQueue is: of a queue that exists with the
// very settings it would declare, it changes nothing and shows the queue
// (exit 0, "exists"); with other settings it is a conflict (exit 4) that
// names each difference and the update that would make it.
func (r *queueCall) declare() error {
	name, err := r.name()
	if err != nil {
		return err
	}
	d := queues.Declaration{Name: name}
	cur, err := r.c.GetQueue(r.ctx, name)
	switch {
	case err == nil && r.sub == "create":
		want := queues.Declaration{Name: name}
		r.qf.overlay(&want)
		return r.exists(cur, want)
	case err == nil:
		d = declarationOf(cur)
	case !errors.Is(err, queue.ErrQueueNotFound) || r.sub == "update":
		return err
	}
	r.qf.overlay(&d)
	q, _, err := r.c.DeclareQueue(r.ctx, d.Name, client.QueueRequest{TTL: d.TTL, TTLFrom: d.TTLFrom, MaxAttempts: d.MaxAttempts,
		Timeout: d.Timeout, Shards: d.Shards, MaxConcurrency: d.MaxConcurrency, MaxSchedules: d.MaxSchedules, Priority: d.Priority,
		MaxPerSecond: d.MaxPerSecond, Burst: d.Burst, Target: d.Target})
	if err != nil || r.sub != "create" || r.e.output != "json" {
		return r.show(q, err)
	}
	return printJSON(r.e.stdout, map[string]any{"queue": q, "exists": false})
}

// exists answers a create of queue cur, which exists, that would declare
// want: cur itself when its settings are want's, else a conflict.
func (r *queueCall) exists(cur client.QueueInfo, want queues.Declaration) error {
	diffs, update := settingDiffs(declarationOf(cur), want, r.qf.given("shards"))
	if len(diffs) > 0 {
		msg := fmt.Sprintf("queue %s exists with other settings (%s)", cur.Name, strings.Join(diffs, "; "))
		if len(update) > 0 {
			msg += "; to change them run 's3q queue update " + cur.Name + " " + strings.Join(update, " ") + "'"
		} else {
			msg += "; shards are fixed when a queue is first declared"
		}
		return &cliError{exit: exitConflict, code: "already_exists", field: "queue", message: msg}
	}
	if r.e.output == "json" {
		return printJSON(r.e.stdout, map[string]any{"queue": cur, "exists": true})
	}
	fmt.Fprintf(r.e.stdout, "queue %s exists with these settings; nothing changed\n", cur.Name)
	printQueue(r.e.stdout, cur)
	return nil
}

// given reports whether the flag name was set on the command line.
func (f *queueFlags) given(name string) bool {
	set := false
	f.fs.Visit(func(fl *flag.Flag) { set = set || fl.Name == name })
	return set
}

// settingDiffs compares the settings a create would declare (want) with
// those of the queue that exists (have): one "ttl 1h, not 2h" per
// difference, and the flags of 's3q queue update' that would make have
// want. Shards are compared only when the create gave them (the server
// picks them otherwise), and no update changes them.
func settingDiffs(have, want queues.Declaration, shardsGiven bool) (diffs, update []string) {
	differ := func(setting, h, w string, flags ...string) {
		if h != w {
			diffs = append(diffs, setting+" "+h+", not "+w)
			update = append(update, flags...)
		}
	}
	dur := func(d *queue.Duration) string {
		if d == nil {
			return "none"
		}
		return d.String()
	}
	num := func(n int) string {
		if n == 0 {
			return "none"
		}
		return strconv.Itoa(n)
	}
	or := func(s string) string {
		if s == "" {
			return "none"
		}
		return s
	}
	durFlag := func(flag string, d *queue.Duration) string {
		if d == nil {
			return "--no-" + flag
		}
		return "--" + flag + " " + d.String()
	}
	differ("ttl", dur(have.TTL), dur(want.TTL), durFlag("ttl", want.TTL))
	differ("ttl_from", or(string(have.TTLFrom)), or(string(want.TTLFrom)), "--ttl-from "+shellWord(string(want.TTLFrom)))
	maxAttemptsFlag := "--no-max-attempts" // 0 is no queue default; --max-attempts takes 1 up
	if want.MaxAttempts > 0 {
		maxAttemptsFlag = "--max-attempts " + strconv.Itoa(want.MaxAttempts)
	}
	differ("max_attempts", num(have.MaxAttempts), num(want.MaxAttempts), maxAttemptsFlag)
	differ("timeout", dur(have.Timeout), dur(want.Timeout), durFlag("timeout", want.Timeout))
	differ("max_concurrency", num(have.MaxConcurrency), num(want.MaxConcurrency), "--max-concurrency "+strconv.Itoa(want.MaxConcurrency))
	wantPriority := want.Priority // none is the default, 3
	if wantPriority == 0 {
		wantPriority = queue.DefaultPriority
	}
	differ("priority", num(have.Priority), num(want.Priority), "--priority "+strconv.Itoa(wantPriority))
	rateFlags := []string{"--no-rate-limit"}
	if want.MaxPerSecond != nil {
		rateFlags = []string{"--max-per-second " + strconv.FormatFloat(*want.MaxPerSecond, 'g', -1, 64)}
		if want.Burst != nil {
			rateFlags = append(rateFlags, "--burst "+strconv.Itoa(*want.Burst))
		}
	}
	differ("rate limit", rateString(have.MaxPerSecond, have.Burst), rateString(want.MaxPerSecond, want.Burst), rateFlags...)
	maxSchedules := func(n int) string { // 0 is the default, which the server fills in
		if n == 0 {
			n = queues.DefaultMaxSchedules
		}
		return strconv.Itoa(n)
	}
	differ("max_schedules", maxSchedules(have.MaxSchedules), maxSchedules(want.MaxSchedules), "--max-schedules "+maxSchedules(want.MaxSchedules))
	var targetFlags []string
	switch t := want.Target; {
	case t == nil:
		targetFlags = []string{"--no-target"}
	case t.Lambda != "":
		targetFlags = []string{"--target-lambda " + shellWord(t.Lambda)}
	default:
		targetFlags = []string{"--target-url " + shellWord(t.URL), "--target-secret " + shellWord(t.Secret)}
	}
	differ("target", targetString(have.Target), targetString(want.Target), targetFlags...)
	if shardsGiven && have.Shards != want.Shards {
		diffs = append(diffs, fmt.Sprintf("shards %d, not %d", have.Shards, want.Shards))
	}
	return diffs, update
}

// rateString says what a rate limit is, as printQueue does: "10/s,
// burst 10".
func rateString(perSecond *float64, burst *int) string {
	if perSecond == nil {
		return "none"
	}
	b := queue.DefaultBurst(*perSecond)
	if burst != nil {
		b = *burst
	}
	return strconv.FormatFloat(*perSecond, 'g', -1, 64) + "/s, burst " + strconv.Itoa(b)
}

// targetString says what a push target is, as printQueue does.
func targetString(t *queues.Target) string {
	switch {
	case t == nil:
		return "none"
	case t.Lambda != "":
		return "lambda " + t.Lambda
	}
	return "url " + t.URL + " (secret " + t.Secret + ")"
}

// shellWord quotes s for a shell when it needs it.
func shellWord(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`!*?[]{}()<>|&;#~") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func (r *queueCall) showOne() error {
	name, err := r.name()
	if err != nil {
		return err
	}
	return r.show(r.c.GetQueue(r.ctx, name))
}

func (r *queueCall) delete() error {
	name, err := r.name()
	if err != nil {
		return err
	}
	if err := r.c.DeleteQueue(r.ctx, name); err != nil {
		return err
	}
	if r.e.output == "json" {
		return printJSON(r.e.stdout, map[string]any{"deleted": name})
	}
	fmt.Fprintf(r.e.stdout, "deleted queue %s\n", name)
	return nil
}

func (r *queueCall) list() error {
	if len(r.rest) != 0 {
		return usageErr("queue list takes no arguments")
	}
	res, err := r.c.ListQueues(r.ctx, client.ListQueuesRequest{Limit: r.qf.limit, Cursor: r.qf.cursor, NoCounts: r.qf.noCounts})
	if err != nil {
		return err
	}
	if r.e.output == "json" {
		return printJSON(r.e.stdout, res)
	}
	printQueues(r.e.stdout, res.Queues)
	if res.NextCursor != "" {
		fmt.Fprintf(r.e.stderr, "more: s3q queue list --cursor %s\n", res.NextCursor)
	}
	return nil
}

// printQueue shows one queue as name: value lines.
func printQueue(w io.Writer, q client.QueueInfo) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "%s:\t%s\n", k, v) }
	row("queue", q.Name)
	if q.TTL != nil {
		ttl := q.TTL.String()
		if q.TTLFrom != "" {
			ttl += " from " + string(q.TTLFrom)
		}
		row("ttl", ttl)
	}
	if q.MaxAttempts > 0 {
		row("max_attempts", strconv.Itoa(q.MaxAttempts))
	}
	if q.Timeout != nil {
		row("timeout", q.Timeout.String())
	}
	row("shards", strconv.Itoa(q.Shards))
	if q.Paused && q.PausedAt != nil {
		row("paused", "since "+q.PausedAt.UTC().Format(time.RFC3339))
	}
	if q.MaxConcurrency > 0 {
		row("max_concurrency", strconv.Itoa(q.MaxConcurrency))
	}
	if q.Priority > 0 {
		row("priority", strconv.Itoa(q.Priority))
	}
	if q.MaxSchedules > 0 {
		row("max_schedules", strconv.Itoa(q.MaxSchedules))
	}
	if q.MaxPerSecond != nil {
		row("rate_limit", rateString(q.MaxPerSecond, q.Burst))
	}
	if q.Target != nil {
		row("target", targetString(q.Target))
	}
	if q.Counts != nil {
		row("tasks", counts(q.Counts))
	}
	row("created", q.CreatedAt.UTC().Format(time.RFC3339))
	_ = tw.Flush()
}

// printQueues shows queues as a table: a column per count (a + when a
// count stopped at its page bound; - for none asked, or for COMPLETED
// where the bucket layout cannot count it).
func printQueues(w io.Writer, qs []client.QueueInfo) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "QUEUE\tSTATE\tLIVE\tDELAYED\tRUNNING\tFAILED\tCANCELLED\tEXPIRED\tCOMPLETED\tMAX_CONCURRENCY\tRATE_LIMIT\tTARGET")
	for _, q := range qs {
		mc, rate, target, state := "-", "-", "-", "active"
		if q.MaxPerSecond != nil {
			// One word (no space), as every cell of the table.
			rate = strings.Replace(rateString(q.MaxPerSecond, q.Burst), ", burst ", ",burst=", 1)
		}
		if q.MaxConcurrency > 0 {
			mc = strconv.Itoa(q.MaxConcurrency)
		}
		if q.Target != nil {
			target = q.Target.Lambda + q.Target.URL
		}
		if q.Paused {
			state = "paused"
		}
		cols := []string{"-", "-", "-", "-", "-", "-", "-"}
		if c := q.Counts; c != nil {
			cols = []string{count(c, "live", c.Live), count(c, "live", c.Delayed), "-", count(c, "failed", c.Failed),
				count(c, "cancelled", c.Cancelled), count(c, "expired", c.Expired), "-"}
			if c.Running != nil {
				cols[2] = strconv.Itoa(*c.Running)
			}
			if c.Completed != nil {
				cols[6] = count(c, "completed", *c.Completed)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", q.Name, state, strings.Join(cols, "\t"), mc, rate, target)
	}
	_ = tw.Flush()
}

func counts(c *queue.QueueCounts) string {
	s := fmt.Sprintf("%s live, %s delayed", count(c, "live", c.Live), count(c, "live", c.Delayed))
	if c.Running != nil {
		s += fmt.Sprintf(", %d running", *c.Running)
	}
	s += fmt.Sprintf("; %s failed, %s cancelled, %s expired", count(c, "failed", c.Failed), count(c, "cancelled", c.Cancelled), count(c, "expired", c.Expired))
	if c.Completed != nil {
		s += fmt.Sprintf(", %s completed", count(c, "completed", *c.Completed))
	}
	return s
}

// count writes the count named name (as in QueueCounts.Capped) of c, with
// a "+" when it stopped at its cap: a lower bound.
func count(c *queue.QueueCounts, name string, v int) string {
	if c.IsCapped(name) {
		return strconv.Itoa(v) + "+"
	}
	return strconv.Itoa(v)
}

// declarationOf is the declaration a queue's answer shows, for the flags
// to change (a read-modify-write update).
func declarationOf(q client.QueueInfo) queues.Declaration {
	return queues.Declaration{
		Name: q.Name, TTL: q.TTL, TTLFrom: q.TTLFrom, MaxAttempts: q.MaxAttempts, Timeout: q.Timeout,
		Shards: q.Shards, MaxConcurrency: q.MaxConcurrency, MaxSchedules: q.MaxSchedules, Priority: q.Priority,
		MaxPerSecond: q.MaxPerSecond, Burst: q.Burst, Target: q.Target, AutoDeclared: q.AutoDeclared,
		Paused: q.Paused, PausedAt: q.PausedAt, CreatedAt: q.CreatedAt, UpdatedAt: q.UpdatedAt,
	}
}
