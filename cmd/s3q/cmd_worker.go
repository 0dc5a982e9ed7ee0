package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/s3q/s3q/shared/client"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/worker"
)

// workerCommand is s3q worker.
func workerCommand() *command {
	var types, execCmd, workerID string
	var concurrency int
	var lease, wait durationFlag
	return &command{
		name: "worker", summary: "run a worker that executes a command per task",
		details: `Claims tasks of the given types and runs --exec for each (through sh -c):
the task's input is on its stdin, its stdout is the task's output (JSON as is,
anything else as a JSON string), and a non-zero exit fails the attempt (it is
retried with backoff while attempts remain; exit code 3 fails it for good).
The command sees S3Q_TASK_ID, S3Q_TASK_TYPE, S3Q_ATTEMPT and S3Q_EXPIRES_AT
(and TRACEPARENT and TRACESTATE, the W3C trace context of the submit, when
it had one), and is killed, with every process it started, if the lease is lost or the
task is cancelled. SIGTERM or Ctrl-C stops claiming and lets running commands
finish (up to 30s; then they are killed and their tasks handed back).

Claims long-poll (--wait, 20s): a task submitted while the worker waits starts
within about a second. After a minute without work the worker claims every
1s doubling to 30s instead (two S3 LISTs per 30s while idle) until work comes
again; --wait 0s always claims that way.

Example:
  s3q worker --type email.send --exec 'jq -r .to | xargs ./send-mail'`,
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&types, "type", "", "task `types` to run, comma-separated (required)")
			fs.StringVar(&types, "t", "", "")
			fs.StringVar(&execCmd, "exec", "", "`command` to run per task (required)")
			fs.IntVar(&concurrency, "concurrency", 1, "tasks to run at once")
			fs.Var(&lease, "lease", "lease length per claim and heartbeat, a `duration` (default: each task's timeout)")
			fs.Var(&wait, "wait", "how long each claim long-polls for a task, a `duration`; 0s backs off instead (default 20s)")
			fs.StringVar(&workerID, "id", "", "worker `id` recorded on tasks (default host-pid)")
		},
		run: func(ctx context.Context, e *env, args []string) error {
			if len(args) != 0 {
				return usageErr("worker takes no arguments")
			}
			if types == "" || execCmd == "" {
				return usageErr("--type and --exec are required")
			}
			c, err := newClient(ctx, e)
			if err != nil {
				return err
			}
			if err := checkWorkerQueue(ctx, e, c); err != nil {
				return err
			}
			log := slog.New(slog.NewJSONHandler(e.stderr, nil))
			opts := worker.Options{Queue: e.queue, Concurrency: concurrency, LeaseFor: lease.d, WorkerID: workerID, Logger: log}
			if wait.set {
				opts.Wait = wait.d
				if wait.d <= 0 {
					opts.Wait = -1 // no long-poll
				}
			}
			w := worker.New(c, opts)
			h := execHandler(execCmd)
			for _, t := range strings.Split(types, ",") {
				w.Handle(strings.TrimSpace(t), h)
			}
			log.Info("worker started", "queue", e.queue, "types", types, "url", e.url, "concurrency", concurrency)
			return w.Run(ctx)
		},
	}
}

// execHandler runs a shell command per task.
func execHandler(command string) worker.Handler {
	return func(ctx context.Context, t *worker.Task) (json.RawMessage, error) {
		cmd := exec.CommandContext(ctx, "sh", "-c", command)
		ownProcessGroup(cmd)
		// A child that escaped the group and holds stdout open does not
		// keep the handler once the command is gone.
		cmd.WaitDelay = 5 * time.Second
		cmd.Stdin = bytes.NewReader(t.Input)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		cmd.Env = append(os.Environ(),
			"S3Q_TASK_ID="+t.ID, "S3Q_TASK_TYPE="+t.TaskType, "S3Q_ATTEMPT="+strconv.Itoa(t.Attempt))
		// The W3C trace context the command continues: the task's as
		// submitted (or its run's span's, had the worker a tracer
		// provider), handed on only when valid.
		if tp, ts := worker.TraceContext(ctx); tp != "" && queue.ValidateTraceparent("traceparent", tp) == nil &&
			queue.ValidateTracestate("tracestate", ts, tp) == nil {
			cmd.Env = append(cmd.Env, "TRACEPARENT="+tp, "TRACESTATE="+ts)
		}
		if t.ExpiresAt != nil {
			cmd.Env = append(cmd.Env, "S3Q_EXPIRES_AT="+t.ExpiresAt.UTC().Format(time.RFC3339Nano))
		}
		err := cmd.Run()
		if err != nil {
			msg := strings.TrimSpace(errOut.String())
			if len(msg) > 2000 {
				msg = msg[len(msg)-2000:]
			}
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				err = fmt.Errorf("exit %d: %s", exit.ExitCode(), msg)
				if exit.ExitCode() == 3 {
					return nil, worker.Permanent(err)
				}
			}
			return nil, err
		}
		raw := bytes.TrimSpace(out.Bytes())
		if len(raw) == 0 {
			return nil, nil
		}
		if json.Valid(raw) {
			return raw, nil
		}
		return json.Marshal(string(raw))
	}
}

// checkWorkerQueue makes a worker on an undeclared queue speak up instead
// of idling forever: where the deployment requires declared queues (as the
// stack does) it fails, exit 3, naming the queue; where it declares them
// on first submit (s3q dev) it warns and lets the worker wait. A claim of
// a task type no task has tells the two apart without taking a task.
func checkWorkerQueue(ctx context.Context, e *env, c *client.Client) error {
	_, err := c.GetQueue(ctx, e.queue)
	if err == nil || !errors.Is(err, queue.ErrQueueNotFound) {
		return nil // declared, or not known now: the claims will tell
	}
	_, err = c.Claim(ctx, client.ClaimRequest{Queue: e.queue, TaskTypes: []string{"s3q.worker.probe"}, MaxTasks: 1})
	if errors.Is(err, queue.ErrQueueNotFound) {
		return &cliError{exit: exitNotFound, code: "queue_not_found", field: "queue",
			message: fmt.Sprintf("queue %q is not declared: check the name (s3q queue list) or declare it (s3q queue create %s)", e.queue, e.queue)}
	}
	fmt.Fprintf(e.stderr, "s3q worker: warning: queue %q is not declared; this deployment declares a queue on its first submit, so the worker waits for one (is the name right? s3q queue list)\n", e.queue)
	return nil
}
