package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/s3q/s3q/shared/config"
	"github.com/s3q/s3q/shared/lambdafn"
)

// setFlags collects repeated --set key=value flags.
type setFlags struct{ m map[string]string }

func (s *setFlags) String() string { return "" }

func (s *setFlags) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("want key=value")
	}
	s.m[k] = val
	return nil
}

// invokeCommand is s3q invoke.
func invokeCommand() *command {
	sets := &setFlags{m: map[string]string{}}
	return &command{
		name: "invoke", args: "FUNCTION EVENT.json", summary: "run a Lambda function's handler once with a sample event",
		details: `Invokes a function's handler in this process, exactly as Lambda would, with
an event file (see events/), and prints the response. It uses the same
environment as the deployed function: S3Q_BUCKET (required), S3Q_ENDPOINT,
S3Q_PREFIX, AWS_REGION, S3Q_DEFAULT_TTL, ... Placeholders such as
{{task_id}} in the event are replaced with --set task_id=ID. As in the
stack, a submit to an undeclared queue is 404 queue_not_found unless
S3Q_AUTO_DECLARE=true (or 's3q queue create default' first).

Functions: ` + strings.Join(lambdafn.Names(), ", ") + `

Example (against the S3 server of 's3q dev --endpoint ...', or a real bucket):
  S3Q_BUCKET=s3q S3Q_ENDPOINT=http://127.0.0.1:7070 s3q invoke submit events/submit.json`,
		flags: func(fs *flag.FlagSet) {
			fs.Var(sets, "set", "replace {{`key`}} in the event with a value (key=value, repeatable)")
		},
		run: func(ctx context.Context, e *env, args []string) error {
			if len(args) != 2 {
				return usageErr("invoke takes a function name and an event file")
			}
			payload, err := os.ReadFile(args[1])
			if err != nil {
				return err
			}
			for k, v := range sets.m {
				payload = bytes.ReplaceAll(payload, []byte("{{"+k+"}}"), []byte(v))
			}
			cfg, err := config.FromEnv(os.Getenv)
			if err != nil {
				return err
			}
			// The function's own wiring, as in Lambda; the log and the
			// metrics on stderr.
			deps, err := lambdafn.Build(ctx, cfg, lambdafn.Parts{Out: e.stderr}, args[0])
			if err != nil {
				return err
			}
			if err := deps.CheckLayout(ctx); err != nil {
				return err
			}
			h, err := lambdafn.New(args[0], deps)
			if err != nil {
				return usageErr("%v", err)
			}
			out, err := h.Invoke(ctx, payload)
			if err != nil {
				return err
			}
			var pretty bytes.Buffer
			if json.Indent(&pretty, out, "", "  ") == nil {
				out = pretty.Bytes()
			}
			fmt.Fprintln(e.stdout, string(out))
			return nil
		},
	}
}
