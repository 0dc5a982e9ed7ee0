package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/s3q/s3q/shared/client"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/wire"
)

// durationFlag is a flag holding a duration with s m h d units.
type durationFlag struct {
	d   time.Duration
	set bool
}

func (f *durationFlag) String() string {
	if !f.set {
		return ""
	}
	return queue.FormatDuration(f.d)
}

func (f *durationFlag) Set(s string) error {
	d, err := queue.ParseDuration(s)
	if err != nil {
		// The flag error quotes the value and gives an example already.
		return errors.New("not a duration (units s, m, h, d: 90s, 30m, 1d12h)")
	}
	f.d, f.set = d, true
	return nil
}

// timeFlag is a flag holding an RFC 3339 time. A time in the past is
// refused when past says what it would mean ("the task would be due at
// once"), with how long ago it is.
type timeFlag struct {
	t    time.Time
	set  bool
	past string // what a past time would mean, and what to use instead; "" accepts it
}

func (f *timeFlag) String() string {
	if !f.set {
		return ""
	}
	return f.t.Format(time.RFC3339)
}

func (f *timeFlag) Set(s string) error {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return fmt.Errorf("not an RFC 3339 time")
	}
	if now := time.Now(); f.past != "" && t.Before(now) {
		return fmt.Errorf("%s, in the past: %s", relative(t, now), f.past)
	}
	f.t, f.set = t, true
	return nil
}

// newClient returns a client of the API at --url addressing --queue.
func newClient(ctx context.Context, e *env) (*client.Client, error) {
	return client.New(ctx, e.url, client.Options{UserAgent: "s3q-cli/" + version, Queue: e.queue})
}

// taskArg resolves a task argument: a reference QUEUE/ID, as submit and
// status print it, or a bare ID in --queue. A reference into another
// queue than a --queue given on the command line is a usage error.
func taskArg(e *env, arg string) (queueName, id string, err error) {
	queueName, id, err = queue.ParseRef(arg, e.queue)
	if err != nil {
		return "", "", usageErr("%q is not a task: give QUEUE/ID (as submit prints it) or an ID with --queue", arg)
	}
	if e.queueSet && queueName != e.queue {
		return "", "", usageErr("task %s is in queue %s, but --queue says %s", arg, queueName, e.queue)
	}
	return queueName, id, nil
}

// taskClient returns a client of the API at --url addressing the queue
// of task argument arg, and the task's id.
func taskClient(ctx context.Context, e *env, arg string) (*client.Client, string, error) {
	queueName, id, err := taskArg(e, arg)
	if err != nil {
		return nil, "", err
	}
	c, err := newClient(ctx, e)
	if err != nil {
		return nil, "", err
	}
	return c.In(queueName), id, nil
}

// submitCommand is s3q submit.
func submitCommand() *command {
	sf := &submitFlags{
		at:        timeFlag{past: "the task would be due at once; use --in for a time from now"},
		expiresAt: timeFlag{past: "the task would expire at birth; use --ttl for a deadline from now"},
	}
	return &command{
		name: "submit", summary: "submit a task (or many from a JSONL file)",
		details: `Submits one task to --queue (default "default") and prints it. Input
is JSON, inline or @file.
With --file, submits every line of a JSON Lines file (one submit request per
line, as in the HTTP API) in batches of 500, with progress on stderr, and
prints "landed N, replayed M, refused K". A line without an "id" gets one
derived from the file's content, the queue and the line number, so running
the same file again (after Ctrl-C, which stops between batches with exit
130, or a crash) submits only what had not landed. Refused lines exit 1.

With --wait, the exit code says how the task ended: 0 completed (or still
pending or running when the wait ran out: the task is printed with where it
stands), 6 failed, expired or cancelled (the task is printed, with its
last error), so a script can 's3q submit ... --wait 20s || handle_failure'.

Every submit carries a task id (--id, an "id" in a line, or a fresh UUIDv7),
and a 503, 5xx or network error is retried with the same id: a retry whose
first attempt landed returns that task ("replayed") instead of making a
second. Give --id to make re-running the command itself a no-op.

Examples:
  s3q submit -t email.send -i '{"to":"a@example.com"}' --ttl 1h
  s3q submit -t report.build -i @input.json --at 2030-01-28T09:00:00Z --expires-at 2030-01-28T17:00:00Z
  s3q submit -t ping --in 10m --dedup-key ping-42 --wait 20s --queue pings
  s3q submit --file tasks.jsonl`,
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&sf.taskType, "type", "", "task `type` (required)")
			fs.StringVar(&sf.taskType, "t", "", "")
			fs.StringVar(&sf.input, "input", "", "input `json`, or @file")
			fs.StringVar(&sf.input, "i", "", "")
			fs.Var(&sf.ttl, "ttl", "time to live: the task expires if not started within `duration`")
			fs.Var(&sf.expiresAt, "expires-at", "absolute deadline for starting (RFC 3339 `time`)")
			fs.StringVar(&sf.ttlFrom, "ttl-from", "", "when the ttl starts: submission (default) or first_attempt")
			fs.Var(&sf.at, "at", "run no earlier than this RFC 3339 `time`")
			fs.Var(&sf.in, "in", "run no earlier than `duration` from now")
			fs.StringVar(&sf.dedup, "dedup-key", "", "idempotency `key`: returns the live task holding it")
			fs.IntVar(&sf.maxAttempts, "max-attempts", 0, "claims allowed before the task fails (default 3)")
			fs.StringVar(&sf.traceparent, "traceparent", "", "W3C trace context the task continues (00-{trace id}-{span id}-{flags}); its handler gets it")
			fs.StringVar(&sf.tracestate, "tracestate", "", "W3C tracestate, with --traceparent")
			fs.IntVar(&sf.priority, "priority", 0, "1 (highest) to 5 (lowest): claims take the highest due first (default: the queue's, else 3)")
			fs.Var(&sf.timeout, "timeout", "lease length of each attempt, a `duration` (default 5m)")
			fs.StringVar(&sf.parent, "parent", "", "parent task `id`: the task inherits its deadline")
			fs.Var(&sf.wait, "wait", "wait up to `duration` (max 25s) for the outcome; exit 6 if the task ends failed, expired or cancelled")
			fs.StringVar(&sf.file, "file", "", "submit every line of a JSON Lines `file` (- for stdin)")
			fs.StringVar(&sf.id, "id", "", "task `id`, a lowercase UUIDv7 (default: a fresh one); the same id never makes a second task")
		},
		run: func(ctx context.Context, e *env, args []string) error {
			if len(args) > 0 {
				return usageErr("submit takes no arguments, got %q", args[0])
			}
			c, err := newClient(ctx, e)
			if err != nil {
				return err
			}
			if sf.file != "" {
				if sf.taskType != "" || sf.input != "" || sf.id != "" {
					return usageErr("--file cannot be combined with --type, --input or --id")
				}
				return submitFile(ctx, e, c, sf.file)
			}
			req, err := sf.request()
			if err != nil {
				return err
			}
			if req.ID == "" {
				req.ID = queue.NewID(time.Now()) // as the client would, but known here
			}
			res, err := c.Submit(ctx, client.SubmitRequest{SubmitRequest: req, Wait: sf.wait.d})
			if err != nil && ctx.Err() != nil {
				// Ctrl-C during --wait (or a slow submit): the task may
				// well exist; say which one to look at.
				ref := queue.Ref(e.queue, req.ID)
				return interrupted(fmt.Sprintf("interrupted: task %s may have been submitted (s3q status %s)", ref, ref))
			}
			if err != nil {
				return err
			}
			if err := printSubmitted(e, res); err != nil || !sf.wait.set {
				return err
			}
			return endedBadly(e, res)
		},
	}
}

// submitFlags are the flags of s3q submit.
type submitFlags struct {
	taskType, input, dedup, parent, ttlFrom, file, id string
	traceparent, tracestate                           string
	ttl, in, wait, timeout                            durationFlag
	expiresAt, at                                     timeFlag
	maxAttempts, priority                             int
}

// request makes the submit request the flags describe.
func (sf *submitFlags) request() (wire.SubmitRequest, error) {
	if sf.taskType == "" {
		return wire.SubmitRequest{}, usageErr("--type is required")
	}
	req := wire.SubmitRequest{ID: sf.id, TaskType: sf.taskType, DedupKey: sf.dedup, MaxAttempts: sf.maxAttempts, Priority: sf.priority, Traceparent: sf.traceparent, Tracestate: sf.tracestate, ParentID: sf.parent, TTLFrom: queue.TTLFrom(sf.ttlFrom)}
	if sf.input != "" {
		raw, err := readInput(sf.input)
		if err != nil {
			return wire.SubmitRequest{}, err
		}
		req.Input = raw
	}
	if sf.ttl.set {
		req.TTL = ptr(queue.Duration(sf.ttl.d))
	}
	if sf.expiresAt.set {
		req.ExpiresAt = &sf.expiresAt.t
	}
	if sf.at.set {
		req.ScheduleAt = &sf.at.t
	}
	if sf.in.set {
		req.Delay = ptr(queue.Duration(sf.in.d))
	}
	if sf.timeout.set {
		req.Timeout = ptr(queue.Duration(sf.timeout.d))
	}
	return req, nil
}

// printSubmitted prints the answer to a submit.
// waitRanOut says where a task stands when a submit's --wait ran out.
func waitRanOut(t client.Task, q string) string {
	switch {
	case t.Status == queue.StatusRunning:
		return fmt.Sprintf("the wait ran out: the task is running (attempt %d of %d)", t.Attempt, t.MaxAttempts)
	case t.Status == queue.StatusPending && t.Attempt > 0:
		return fmt.Sprintf("the wait ran out: the task is pending a retry after attempt %d failed (%s)", t.Attempt, clip(t.LastError, 80))
	case t.Status == queue.StatusPending && t.AvailableAt.After(time.Now()):
		return "the wait ran out: the task is pending, not due until " + stamp(&t.AvailableAt, time.Now())
	case t.Status == queue.StatusPending:
		return fmt.Sprintf("the wait ran out: the task is pending and no worker has claimed it yet (is one running? s3q worker -q %s --type %s ...)", q, t.TaskType)
	}
	return "the wait ran out: the task is " + string(t.Status)
}

func printSubmitted(e *env, res client.SubmitResult) error {
	if e.output == "json" {
		return printJSON(e.stdout, res)
	}
	switch {
	case res.Deduplicated:
		fmt.Fprintln(e.stdout, "deduplicated: a live task already holds this key")
	case res.Replayed:
		fmt.Fprintln(e.stdout, "replayed: a task with this id was already submitted")
	case res.Status == 202:
		fmt.Fprintln(e.stdout, waitRanOut(res.Task, e.queue))
	}
	printTask(e.stdout, res.Task, time.Now())
	return nil
}

// endedBadly is the error (exit 6) of a submit --wait whose answer shows
// the task ended failed, expired or cancelled; nil for any other answer.
func endedBadly(e *env, res client.SubmitResult) error {
	switch t := res.Task; t.Status {
	case queue.StatusFailed, queue.StatusExpired, queue.StatusCancelled:
		msg := fmt.Sprintf("task %s ended %s", queue.Ref(t.Queue, t.ID), t.Status)
		if t.LastError != "" {
			msg += ": " + clip(t.LastError, 200)
		}
		return &cliError{exit: exitTaskFailed, code: "task_" + string(t.Status), message: msg, reported: e.output == "json"}
	}
	return nil
}

// listCommand is s3q list.
func listCommand() *command {
	var status, ltype, cursor string
	var limit int
	var all, allQueues bool
	return &command{
		name: "list", summary: "list tasks by status, queue and type",
		details: `Lists the tasks of --queue (default "default") newest first (by id: a
task id is its creation time), one page at a time; --status pending lists
in claim order instead (earliest deadline, then oldest due, first). --all
follows the cursor. --all-queues lists every queue's tasks (GET /tasks, the
operator's route), queue by queue in name order.

Examples:
  s3q list --status expired
  s3q list --status completed --limit 20      # the 20 most recent completed tasks
  s3q list --status failed --queue emails --all -o json
  s3q list --status failed --all-queues`,
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&status, "status", "", "only this `status`: pending running completed failed cancelled expired archived")
			fs.StringVar(&ltype, "type", "", "only this task `type`")
			fs.BoolVar(&allQueues, "all-queues", false, "list the tasks of every queue, not just --queue")
			fs.IntVar(&limit, "limit", 100, "tasks per page (max 1000)")
			fs.StringVar(&cursor, "cursor", "", "continue from a previous page's next_cursor")
			fs.BoolVar(&all, "all", false, "follow the cursor to the end")
		},
		run: func(ctx context.Context, e *env, args []string) error {
			if len(args) != 0 {
				return usageErr("list takes no arguments")
			}
			c, err := newClient(ctx, e)
			if err != nil {
				return err
			}
			var tasks []client.Task
			req := client.ListRequest{Status: queue.Status(status), TaskType: ltype, Queue: e.queue, Limit: limit, Cursor: cursor}
			if allQueues {
				if e.queueSet {
					return usageErr("--all-queues and --queue exclude each other")
				}
				req.Queue = ""
			}
			next := ""
			for {
				res, err := c.List(ctx, req)
				if err != nil {
					return err
				}
				tasks = append(tasks, res.Tasks...)
				next = res.NextCursor
				if !all || next == "" {
					break
				}
				req.Cursor = next
			}
			if e.output == "json" {
				return printJSON(e.stdout, map[string]any{"tasks": tasks, "next_cursor": next})
			}
			printTable(e.stdout, tasks, time.Now())
			if next != "" {
				fmt.Fprintf(e.stderr, "more: s3q list --cursor %s (or --all)\n", next)
			}
			if len(tasks) == 0 && req.Queue != "" {
				// An empty list of a misspelled queue reads like an
				// empty queue: say which it is (one GET, only here).
				if _, err := c.GetQueue(ctx, req.Queue); errors.Is(err, queue.ErrQueueNotFound) {
					fmt.Fprintf(e.stderr, "s3q list: queue %q is not declared (is the name right? s3q queue list)\n", req.Queue)
				}
			}
			return nil
		},
	}
}

// historyCommand is s3q history.
func historyCommand() *command {
	var hlimit int
	var hcursor string
	var hall bool
	return &command{
		name: "history", args: "TASK", summary: "show the versions of a task's record, a page at a time (newest first)",
		details: "TASK is QUEUE/ID, as submit prints it, or an ID in --queue (default \"default\").\n" +
			"A whole history (one page, or --all) prints oldest first as Version 1..N; a partial page prints newest first, by version id.",
		flags: func(fs *flag.FlagSet) {
			fs.IntVar(&hlimit, "limit", 0, "versions per page (default 100, at most 1000)")
			fs.StringVar(&hcursor, "cursor", "", "continue from a previous page's next_cursor")
			fs.BoolVar(&hall, "all", false, "follow the cursor to the end")
		},
		run: func(ctx context.Context, e *env, args []string) error {
			if len(args) != 1 {
				return usageErr("history takes one task (QUEUE/ID, or an ID with --queue)")
			}
			c, id, err := taskClient(ctx, e, args[0])
			if err != nil {
				return err
			}
			var vs []client.Version
			req := client.HistoryRequest{Limit: hlimit, Cursor: hcursor}
			next := ""
			for {
				res, err := c.History(ctx, id, req)
				if err != nil {
					return err
				}
				vs = append(vs, res.Versions...)
				if next = res.NextCursor; !hall || next == "" {
					break
				}
				req.Cursor = next
			}
			if e.output == "json" {
				return printJSON(e.stdout, map[string]any{"versions": vs, "next_cursor": next})
			}
			// Pages come newest first. A whole history is numbered from its
			// first version; the number of a version on a partial page is
			// unknown, so it is named by its id.
			whole := hcursor == "" && next == ""
			if whole {
				slices.Reverse(vs)
			}
			for i, v := range vs {
				label := fmt.Sprintf("Version %d", i+1)
				if !whole {
					label = "Version " + v.VersionID
				}
				fmt.Fprintf(e.stdout, "%s: %s%s  (%s)\n", label, v.Task.Status, historyDetail(v.Task), v.ModifiedAt.UTC().Format(time.RFC3339))
			}
			if next != "" {
				fmt.Fprintf(e.stderr, "more: s3q history %s --cursor %s (or --all)\n", args[0], next)
			}
			return nil
		},
	}
}

// taskOp is a command that takes one task ID, makes one call and shows
// the task.
type taskOp struct {
	name, summary string
	call          func(c *client.Client, ctx context.Context, id string) (client.Task, error)
}

// taskOps are status, cancel, retry and expire.
var taskOps = []taskOp{
	{"status", "show a task, with its deadline and time left", (*client.Client).Get},
	{"cancel", "cancel a pending task, or ask a running one to stop", (*client.Client).Cancel},
	{"retry", "put a failed or cancelled task back to pending", (*client.Client).Retry},
	{"expire", "mark a pending task expired now", (*client.Client).Expire},
}

// command is s3q op.name.
func (op taskOp) command() *command {
	return &command{
		name: op.name, args: "TASK", summary: op.summary,
		details: "TASK is QUEUE/ID, as submit prints it, or an ID in --queue (default \"default\").",
		run: func(ctx context.Context, e *env, args []string) error {
			if len(args) != 1 {
				return usageErr("%s takes one task (QUEUE/ID, or an ID with --queue)", op.name)
			}
			c, id, err := taskClient(ctx, e, args[0])
			if err != nil {
				return err
			}
			t, err := op.call(c, ctx, id)
			if err != nil {
				return err
			}
			if e.output == "json" {
				return printJSON(e.stdout, map[string]any{"task": t})
			}
			printTask(e.stdout, t, time.Now())
			return nil
		},
	}
}

// historyDetail is the part of a version line after its status.
func historyDetail(t client.Task) string {
	var parts []string
	switch t.Status {
	case queue.StatusPending:
		if t.Attempt == 0 && t.ExpiresAt != nil {
			parts = append(parts, "expires_at: "+t.ExpiresAt.UTC().Format(time.RFC3339))
		}
		if t.LastError != "" {
			parts = append(parts, "retry after: "+t.LastError)
		}
	case queue.StatusRunning:
		parts = append(parts, fmt.Sprintf("attempt %d", t.Attempt))
		if t.WorkerID != "" {
			parts = append(parts, "worker "+t.WorkerID)
		}
		if t.CancelRequested {
			parts = append(parts, "cancel requested")
		}
	case queue.StatusExpired:
		if t.ExpiredAt != nil {
			parts = append(parts, "expired_at: "+t.ExpiredAt.UTC().Format(time.RFC3339)+", reason "+t.ExpiryReason)
		}
		if t.ExpiryEventSentAt != nil {
			parts = append(parts, "Task Expired event sent")
		}
	case queue.StatusFailed:
		parts = append(parts, "error: "+clip(t.LastError, 80))
		if t.DeadLetterEventSentAt != nil {
			parts = append(parts, "Task Dead-Lettered event sent")
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

func readInput(s string) (json.RawMessage, error) {
	raw := []byte(s)
	if strings.HasPrefix(s, "@") {
		var err error
		if raw, err = readInputFile(s[1:]); err != nil {
			if ce := (*cliError)(nil); errors.As(err, &ce) {
				return nil, err
			}
			return nil, flagErr("input", "@input.json", "%s: %v", s, err)
		}
	}
	raw = bytes.TrimSpace(raw)
	if err := checkJSON(raw); err != nil {
		return nil, flagErr("input", `'{"to":"a@example.com"}'`, "is not valid JSON: %v", err)
	}
	// The API refuses an input over the inline limit as it is sent
	// (compacted): say so before uploading it.
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err == nil && compact.Len() > queue.MaxInputBytes {
		return nil, tooBigInput(compact.Len())
	}
	return raw, nil
}

// readInputFile reads an --input @file, refusing one far over the inline
// limit without reading it all.
func readInputFile(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	const most = 64 << 20 // whitespace aside, far over the limit
	raw, err := io.ReadAll(io.LimitReader(f, most+1))
	if err != nil {
		return nil, err
	}
	if len(raw) > most {
		return nil, tooBigInput(len(raw))
	}
	return raw, nil
}

// tooBigInput is the error of an --input over the API's inline limit.
func tooBigInput(n int) error {
	what := fmt.Sprintf("%d bytes", n)
	if n > 64<<20 {
		what = "over 64 MiB"
	}
	return &cliError{exit: exitUsage, code: "too_large", field: "--input",
		message: fmt.Sprintf("--input is %s, over the inline limit of %d bytes (256 KiB): put large data in S3 (or a task artifact, docs/api.md) and pass its key in the input", what, queue.MaxInputBytes)}
}

func ptr[T any](v T) *T { return &v }
