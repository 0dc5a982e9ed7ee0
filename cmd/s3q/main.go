// Command s3q is the command line of s3q: submit and inspect tasks, run a
// worker, run the whole queue locally (s3q dev) and invoke the Lambda
// handlers with sample events. Run `s3q help` for the commands.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"

	"github.com/s3q/s3q/shared/client"
)

// command is one subcommand.
type command struct {
	name    string
	args    string // e.g. "ID"
	summary string
	details string
	flags   func(fs *flag.FlagSet) // defines the command's flags
	run     func(ctx context.Context, env *env, args []string) error
}

// env is what every command gets: global flags and where to print.
type env struct {
	stdout, stderr io.Writer
	stdin          io.Reader
	url            string
	output         string // text or json
	// queue is the queue every task, lease and schedule command addresses
	// (--queue, -q; default $S3Q_QUEUE or "default"); queueSet says it
	// was given on the command line.
	queue    string
	queueSet bool
}

// commands holds a factory per command by name, so that every run gets
// fresh flag variables. Each command is a value made by its factory in
// its file (cmd_tasks.go, cmd_queue.go, ...).
var commands = byName(append([]func() *command{
	submitCommand, listCommand, historyCommand,
	queueCommand, scheduleCommand, workerCommand,
	devCommand, invokeCommand, sweepCommand,
	statsCommand, purgeCommand, bulkCommand,
}, taskOpCommands()...))

// byName indexes command factories by their command's name.
func byName(fs []func() *command) map[string]func() *command {
	m := make(map[string]func() *command, len(fs))
	for _, f := range fs {
		m[f().name] = f
	}
	return m
}

// taskOpCommands returns the factories of status, cancel, retry and expire.
func taskOpCommands() []func() *command {
	fs := make([]func() *command, len(taskOps))
	for i, op := range taskOps {
		fs[i] = op.command
	}
	return fs
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// errUsage marks an error the user fixes by reading the help.
var errUsage = errors.New("usage")

func usageErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, args...))
}

// run is main without the process: it returns the exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	// Global flags may come before the command too: s3q --url U status ID.
	var leading []string
	for len(args) > 0 && strings.HasPrefix(args[0], "-") && args[0] != "-h" && args[0] != "--help" && args[0] != "--version" {
		name, _, hasValue := strings.Cut(strings.TrimLeft(args[0], "-"), "=")
		if name != "url" && name != "output" && name != "o" && name != "queue" && name != "q" {
			fmt.Fprintf(stderr, "s3q: unknown global flag %s\n\nRun 's3q help' for usage.\n", args[0])
			return 2
		}
		n := 2
		if hasValue || len(args) < 2 {
			n = 1
		}
		leading, args = append(leading, args[:n]...), args[n:]
	}
	if len(args) > 0 && len(leading) > 0 {
		args = append(append([]string{args[0]}, leading...), args[1:]...)
	}
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		if len(args) > 1 {
			if f, ok := commands[args[1]]; ok {
				printCommandHelp(stdout, f())
				return 0
			}
		}
		printHelp(stdout)
		return 0
	}
	if args[0] == "version" || args[0] == "--version" {
		fmt.Fprintln(stdout, "s3q", version)
		return 0
	}
	factory, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "s3q: unknown command %q\n\n", args[0])
		printHelp(stderr)
		return 2
	}
	c := factory()
	e := &env{stdout: stdout, stderr: stderr, stdin: stdin}
	fs := flag.NewFlagSet("s3q "+c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	defaultURL := os.Getenv("S3Q_URL")
	if defaultURL == "" {
		defaultURL = "http://127.0.0.1:8080"
	}
	fs.StringVar(&e.url, "url", defaultURL, "")
	fs.StringVar(&e.output, "output", "text", "")
	fs.StringVar(&e.output, "o", "text", "")
	defaultQueue := os.Getenv("S3Q_QUEUE")
	if defaultQueue == "" {
		defaultQueue = "default"
	}
	fs.StringVar(&e.queue, "queue", defaultQueue, "")
	fs.StringVar(&e.queue, "q", defaultQueue, "")
	if c.flags != nil {
		c.flags(fs)
	}
	pos, err := parseInterleaved(fs, args[1:])
	if errors.Is(err, flag.ErrHelp) {
		printCommandHelp(stdout, c)
		return 0
	}
	if err == nil && e.output != "text" && e.output != "json" {
		err = usageErr("--output must be text or json, not %q", e.output)
	}
	fs.Visit(func(f *flag.Flag) { e.queueSet = e.queueSet || f.Name == "queue" || f.Name == "q" })
	if err == nil {
		err = c.run(ctx, e, pos)
	}
	if err != nil {
		if errors.Is(err, errUsage) || strings.HasPrefix(err.Error(), "flag provided") || strings.Contains(err.Error(), "invalid value") {
			fmt.Fprintf(stderr, "s3q %s: %s\n\nRun 's3q %s --help' for usage.\n", c.name, strings.TrimPrefix(err.Error(), "usage: "), c.name)
			return 2
		}
		fmt.Fprintf(stderr, "s3q %s: %v\n", c.name, err)
		if errors.Is(err, syscall.ECONNREFUSED) {
			fmt.Fprintf(stderr, "\nNo s3q API answers at %s. Start one with 'make dev' (or 's3q dev'), or point --url / S3Q_URL at yours.\n", e.url)
		}
		return 1
	}
	return 0
}

// parseInterleaved parses flags wherever they appear among the positional
// arguments ("s3q status ID --output json").
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if rest[0] == "--" {
			return append(pos, rest[1:]...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

const version = "0.1.0"

func printHelp(w io.Writer) {
	fmt.Fprint(w, `s3q — a serverless task queue whose only state is one S3 bucket.

Usage:
  s3q <command> [arguments] [flags]

Commands:
`)
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n]().summary)
	}
	fmt.Fprint(w, `
Global flags:
  --url URL        the s3q API (default $S3Q_URL or http://127.0.0.1:8080);
                   requests to *.amazonaws.com are signed with AWS SigV4
  -o, --output F   text (default) or json
  -q, --queue Q    the queue task, worker and schedule commands address
                   (default $S3Q_QUEUE or "default"): every route names it,
                   /queues/Q/..., so IAM can scope a role to queues

Durations accept s, m, h and d: 90s, 30m, 1h, 7d, 1d12h.
Times are RFC 3339: 2026-01-28T09:00:00Z.

Run 's3q <command> --help' for a command's flags.
`)
}

func printCommandHelp(w io.Writer, c *command) {
	fmt.Fprintf(w, "s3q %s — %s\n\nUsage:\n  s3q %s %s[flags]\n", c.name, c.summary, c.name, withSpace(c.args))
	if c.details != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(c.details))
	}
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	if c.flags != nil {
		c.flags(fs)
	}
	// An alias (-t for --type) shares its flag's Value and has no usage.
	aliases := map[flag.Value]string{}
	fs.VisitAll(func(f *flag.Flag) {
		if f.Usage == "" {
			aliases[f.Value] = "-" + f.Name
		}
	})
	var lines []string
	fs.VisitAll(func(f *flag.Flag) {
		if f.Usage == "" {
			return
		}
		arg, usage := flag.UnquoteUsage(f)
		name := "--" + f.Name
		if a, ok := aliases[f.Value]; ok {
			name = a + ", " + name
		}
		if arg != "" {
			name += " " + strings.ToUpper(arg)
		}
		lines = append(lines, fmt.Sprintf("  %-24s %s", name, usage))
	})
	if len(lines) > 0 {
		fmt.Fprintf(w, "\nFlags:\n%s\n", strings.Join(lines, "\n"))
	}
	fmt.Fprint(w, "\nGlobal flags: --url URL, -o/--output text|json, -q/--queue NAME (see 's3q help').\n")
}

func withSpace(s string) string {
	if s == "" {
		return ""
	}
	return s + " "
}

// subcall is one run of a command with subcommands (s3q queue, s3q
// schedule): the subcommand, the arguments after it and the client.
type subcall struct {
	ctx  context.Context
	e    *env
	c    *client.Client
	sub  string
	rest []string
}

// start takes the subcommand from args and makes the client; cmd and
// subs name the command and its subcommands for a usage error.
func (r *subcall) start(ctx context.Context, e *env, args []string, cmd, subs string) error {
	if len(args) == 0 {
		return usageErr("%s needs a subcommand: %s", cmd, subs)
	}
	r.ctx, r.e, r.sub, r.rest = ctx, e, args[0], args[1:]
	var err error
	r.c, err = newClient(ctx, e)
	return err
}

// arg returns the one argument the subcommand takes; what names it
// ("queue NAME") for a usage error.
func (r *subcall) arg(cmd, what string) (string, error) {
	if len(r.rest) != 1 {
		return "", usageErr("%s %s takes one %s", cmd, r.sub, what)
	}
	return r.rest[0], nil
}
