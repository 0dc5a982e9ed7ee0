package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"

	"github.com/s3q/s3q/shared/client"
)

// Exit codes of s3q (exitCodesHelp documents them in `s3q --help`). An
// error maps to one by what the user can do about it, as aws, gh and the
// asynq CLI tell them apart.
const (
	exitOK          = 0
	exitError       = 1   // anything else: a 5xx after retries, an I/O error, refused lines of --file
	exitUsage       = 2   // a bad flag or argument, or a 400 from the API
	exitNotFound    = 3   // no such task, schedule or queue (404)
	exitConflict    = 4   // the state does not allow it (409)
	exitUnavailable = 5   // the API is unreachable, throttling (429, 503) or timed out (502, 504)
	exitTaskFailed  = 6   // submit --wait: the task ended failed, expired or cancelled
	exitInterrupted = 130 // Ctrl-C (SIGINT)
)

// exitCodesHelp is the exit code table of `s3q --help`.
const exitCodesHelp = `Exit codes:
  0    success
  1    any other error (a 5xx after retries, an I/O error, refused lines of --file)
  2    usage: a bad flag or argument, or 400 invalid input from the API
  3    not found: no such task, schedule or queue (404)
  4    conflict: the task's state does not allow it (409), or queue create
       of a queue that exists with other settings
  5    unavailable: the API cannot be reached, throttles (429, 503) or timed out
  6    submit --wait: the task ended failed, expired or cancelled
  130  interrupted (Ctrl-C)
With -o json an error is {"error":{"code","message","field"}} on stdout,
with the same exit code.
`

// cliError is an error as the CLI reports it: the API's code, message and
// field, the exit code, and in text mode a line of advice.
type cliError struct {
	exit                 int
	code, message, field string
	hint                 string
	reported             bool // the command's -o json answer already says it: print nothing more there
	api                  bool // code is the API's: text mode shows it
}

func (e *cliError) Error() string { return e.message }

// Is makes every usage error match errUsage.
func (e *cliError) Is(target error) bool { return target == errUsage && e.exit == exitUsage }

// errUsage marks an error the user fixes by reading the help.
var errUsage = errors.New("usage")

// usageErr is a usage error (exit 2).
func usageErr(format string, args ...any) error {
	return &cliError{exit: exitUsage, code: "usage", message: fmt.Sprintf(format, args...)}
}

// flagErr is a usage error about one flag, named as the help does
// (--max-attempts), with an example of a valid value when there is one:
// flagErr("max-attempts", "5", `"abc": not a whole number`).
func flagErr(name, example, format string, args ...any) error {
	msg := flagName(name) + " " + fmt.Sprintf(format, args...)
	if example != "" {
		msg += " (e.g. " + flagName(name) + " " + example + ")"
	}
	return &cliError{exit: exitUsage, code: "usage", message: msg, field: flagName(name)}
}

// flagName writes a flag the way the help does: -q for one letter, --queue
// for more.
func flagName(name string) string {
	name = strings.TrimLeft(name, "-")
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// interrupted is the error of a command stopped by Ctrl-C.
func interrupted(msg string) error {
	return &cliError{exit: exitInterrupted, code: "interrupted", message: msg}
}

// classify turns any error of a command into what the CLI reports.
func classify(ctx context.Context, e *env, err error) *cliError {
	var ce *cliError
	if errors.As(err, &ce) {
		return ce
	}
	var ae *client.Error
	if errors.As(err, &ae) {
		return apiErr(e, ae)
	}
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		return &cliError{exit: exitInterrupted, code: "interrupted", message: "interrupted"}
	}
	var ne net.Error
	if errors.Is(err, syscall.ECONNREFUSED) || errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded) {
		return &cliError{exit: exitUnavailable, code: "unavailable", message: err.Error(),
			hint: fmt.Sprintf("No s3q API answers at %s. Start one with 'make dev' (or 's3q dev'), or point --url / S3Q_URL at yours.", e.url)}
	}
	return &cliError{exit: exitError, code: "error", message: err.Error()}
}

// apiErr maps an error answer of the API to its exit code.
func apiErr(e *env, ae *client.Error) *cliError {
	ce := &cliError{exit: exitError, code: ae.Code, message: ae.Message, field: ae.Field, api: true}
	switch {
	case ae.Status == http.StatusBadRequest || ae.Status == http.StatusRequestEntityTooLarge || ae.Status == http.StatusMethodNotAllowed:
		ce.exit = exitUsage
	case ae.Status == http.StatusNotFound:
		ce.exit = exitNotFound
		if ae.Code == "not_found" && !e.queueSet {
			if strings.HasSuffix(ce.message, " in queue "+e.queue) {
				// The API named the queue it looked in; say how to look elsewhere.
				ce.message += " (pass -q/--queue NAME, or set S3Q_QUEUE, for another queue)"
			} else {
				ce.message += fmt.Sprintf(` (looked in queue %q: pass -q/--queue NAME, or set S3Q_QUEUE, for another queue)`, e.queue)
			}
		}
		if ae.Code == "queue_not_found" {
			// The API says how to declare one over HTTP; say it in CLI.
			ce.hint = "Check the name ('s3q queue list' shows the declared queues) or declare it: 's3q queue create NAME'."
		}
	case ae.Status == http.StatusConflict:
		ce.exit = exitConflict
	case ae.Code == "deadline_exceeded":
		// The task's deadline passed during a wait: it is expired (or
		// asked to stop), which retrying later does not change.
		ce.exit = exitTaskFailed
	case ae.Status == http.StatusTooManyRequests || ae.Status == http.StatusServiceUnavailable ||
		ae.Status == http.StatusBadGateway || ae.Status == http.StatusGatewayTimeout:
		ce.exit = exitUnavailable
	}
	if ce.message == "" {
		ce.message = ae.Error()
	}
	return ce
}

// errorBody is an error in the API's shape: {"code","message","field"}.
type errorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
}

// report prints err for the command and returns its exit code: in text
// mode on stderr, with -o json as the API's error shape on stdout.
func report(ctx context.Context, e *env, stdout, stderr io.Writer, cmd string, err error) int {
	ce := classify(ctx, e, err)
	switch e.output {
	case "json", "yaml":
		if ce.reported {
			break
		}
		body := map[string]*errorBody{"error": {Code: ce.code, Message: ce.message, Field: ce.field}}
		if e.output == "yaml" {
			_ = writeYAML(stdout, body)
		} else {
			_ = printJSON(stdout, body)
		}
	default:
		if ce.api {
			// The API's field, unless its message names it already:
			// "must be between 0s and 25s" alone does not say what.
			what := ce.code
			if ce.field != "" && !strings.Contains(ce.message, ce.field) {
				what += ", field " + ce.field
			}
			fmt.Fprintf(stderr, "s3q %s: %s (%s)\n", cmd, ce.message, what)
		} else {
			fmt.Fprintf(stderr, "s3q %s: %s\n", cmd, ce.message)
		}
		if ce.code == "usage" {
			fmt.Fprintf(stderr, "\nRun 's3q %s --help' for usage.\n", cmd)
		}
		if ce.hint != "" {
			fmt.Fprintf(stderr, "\n%s\n", ce.hint)
		}
	}
	return ce.exit
}
