package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/s3q/s3q/shared/client"
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
environment as the deployed function: S3Q_BUCKET, S3Q_ENDPOINT,
S3Q_PREFIX, AWS_REGION, S3Q_DEFAULT_TTL, ... Without S3Q_BUCKET it runs
the handler in the s3q dev at --url (S3Q_URL, default where 'make dev'
listens), on that server's bucket. An HTTP function's response of 4xx or
5xx exits non-zero, with the exit code of that status. Placeholders such as
{{task_id}} in the event are replaced with --set task_id=ID. As in the
stack, a submit to an undeclared queue is 404 queue_not_found unless
S3Q_AUTO_DECLARE=true (or 's3q queue create default' first).

Functions: ` + strings.Join(lambdafn.Names(), ", ") + `

Examples:
  s3q invoke submit events/submit.json      # in the running s3q dev (make dev)
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
			var out []byte
			if os.Getenv(config.EnvBucket) == "" {
				out, err = invokeInDev(ctx, e, args[0], payload)
			} else {
				out, err = invokeHere(ctx, e, args[0], payload)
			}
			if err != nil {
				return err
			}
			var pretty bytes.Buffer
			if json.Indent(&pretty, out, "", "  ") == nil {
				out = pretty.Bytes()
			}
			fmt.Fprintln(e.stdout, string(out))
			return responseError(e, out)
		},
	}
}

// invokeHere runs the handler in this process, on the bucket of the
// environment, as Lambda would.
func invokeHere(ctx context.Context, e *env, name string, payload []byte) ([]byte, error) {
	cfg, err := config.FromEnv(os.Getenv)
	if err != nil {
		return nil, err
	}
	// The function's own wiring, as in Lambda; the log and the metrics on
	// stderr.
	deps, err := lambdafn.Build(ctx, cfg, lambdafn.Parts{Out: e.stderr}, name)
	if err != nil {
		return nil, err
	}
	if err := probeBucket(ctx, e, cfg.Bucket, deps.Queue.Store()); err != nil {
		return nil, err
	}
	if err := deps.CheckLayout(ctx); err != nil {
		return nil, err // a bucket of another layout: refused, as by the function
	}
	h, err := lambdafn.New(name, deps)
	if err != nil {
		return nil, usageErr("%v", err)
	}
	return h.Invoke(ctx, payload)
}

// invokeInDev runs the handler in the s3q dev at --url (its POST
// /dev/invoke/{function}), on that server's bucket.
func invokeInDev(ctx context.Context, e *env, name string, payload []byte) ([]byte, error) {
	how := fmt.Sprintf("start one with 'make dev' (or 's3q dev'), point --url / S3Q_URL at it, or set %s (with S3Q_ENDPOINT, AWS_REGION and credentials) to invoke against a bucket", config.EnvBucket)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(e.url, "/")+"/dev/invoke/"+url.PathEscape(name), bytes.NewReader(payload))
	if err != nil {
		return nil, usageErr("--url %q: %v", e.url, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		return nil, &cliError{exit: exitUnavailable, code: "unavailable",
			message: fmt.Sprintf("%s is not set, and no s3q dev answers at %s: %s", config.EnvBucket, e.url, how)}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusOK {
		return body, nil
	}
	var ae struct {
		Error errorBody `json:"error"`
	}
	_ = json.Unmarshal(body, &ae)
	switch {
	case resp.StatusCode == http.StatusNotFound && ae.Error.Field == "function":
		return nil, usageErr("no function %q: want one of %s", name, strings.Join(lambdafn.Names(), ", "))
	case ae.Error.Code == "function_error":
		return nil, fmt.Errorf("function %s failed: %s", name, ae.Error.Message)
	}
	return nil, &cliError{exit: exitUnavailable, code: "unavailable",
		message: fmt.Sprintf("%s is not set, and %s is not an s3q dev server (it answered %s to POST /dev/invoke/%s): %s", config.EnvBucket, e.url, resp.Status, name, how)}
}

// responseError is the error of an HTTP function's response of 4xx or
// 5xx (an API Gateway response object), nil for any other output.
func responseError(e *env, out []byte) error {
	var resp struct {
		StatusCode *int   `json:"statusCode"`
		Body       string `json:"body"`
	}
	if json.Unmarshal(out, &resp) != nil || resp.StatusCode == nil || *resp.StatusCode < 400 {
		return nil
	}
	var body struct {
		Error errorBody `json:"error"`
	}
	_ = json.Unmarshal([]byte(resp.Body), &body)
	ce := apiErr(e, &client.Error{Status: *resp.StatusCode, Code: body.Error.Code, Message: body.Error.Message, Field: body.Error.Field})
	ce.message = fmt.Sprintf("the function answered %d %s: %s", *resp.StatusCode, ce.code, ce.message)
	ce.reported = true // the response printed says it
	return ce
}
