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
	"slices"
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
	// subFlags lists, per subcommand (s3q schedule create), the flags it
	// takes, so that `s3q schedule create --help` shows only those; a
	// subcommand not listed shows every flag.
	subFlags map[string][]string
	run      func(ctx context.Context, env *env, args []string) error
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
	devCommand, invokeCommand, sweepCommand, tickCommand, uiCommand,
	statsCommand, purgeCommand, bulkCommand, checkCommand,
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

// run is main without the process: it returns the exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	// Global flags may come before the command too: s3q --url U status ID.
	var leading []string
	for len(args) > 0 && strings.HasPrefix(args[0], "-") && args[0] != "-h" && args[0] != "--help" && args[0] != "--version" {
		name, _, hasValue := strings.Cut(strings.TrimLeft(args[0], "-"), "=")
		if name != "url" && name != "output" && name != "o" && name != "queue" && name != "q" {
			fmt.Fprintf(stderr, "s3q: unknown global flag %s\n\nRun 's3q help' for usage.\n", args[0])
			return exitUsage
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
			f, ok := commands[args[1]]
			if !ok {
				fmt.Fprintf(stderr, "s3q help: unknown command %q%s\n\nRun 's3q help' for the commands.\n", args[1], didYouMean(args[1], commands))
				return exitUsage
			}
			printCommandHelp(stdout, f(), args[2:])
			return 0
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
		fmt.Fprintf(stderr, "s3q: unknown command %q%s\n\nRun 's3q help' for the commands.\n", args[0], didYouMean(args[0], commands))
		return exitUsage
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
	pos, err := parseFlags(fs, args[1:])
	if errors.Is(err, flag.ErrHelp) {
		printCommandHelp(stdout, c, pos)
		return exitOK
	}
	if err == nil && !slices.Contains(outputFormats, e.output) {
		err = flagErr("output", "json", "%q: want one of %s", e.output, strings.Join(outputFormats, ", "))
		e.output = "text"
	}
	fs.Visit(func(f *flag.Flag) { e.queueSet = e.queueSet || f.Name == "queue" || f.Name == "q" })
	if err != nil {
		e.output = outputOf(args[1:], e.output)
		return report(ctx, e, stdout, stderr, c.name, err)
	}
	// yaml and id are made from the JSON the command prints.
	var fw *formatWriter
	if e.output == "yaml" || e.output == "id" {
		fw = &formatWriter{format: e.output, out: stdout}
		e.stdout, e.output = fw, "json"
	}
	err = c.run(ctx, e, pos)
	if fw != nil {
		e.output = fw.format
		if ferr := fw.flush(); err == nil {
			err = ferr
		}
	}
	if err != nil {
		if e.output == "id" {
			e.output = "text"
		}
		return report(ctx, e, stdout, stderr, c.name, err)
	}
	return exitOK
}

// outputOf is the -o/--output among args, for a flag error met before
// the flag set parsed it (def when there is none, or not a valid one).
func outputOf(args []string, def string) string {
	for i, a := range args {
		name, v, hasV := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || name != "o" && name != "output" {
			continue
		}
		if !hasV && i+1 < len(args) {
			v = args[i+1]
		}
		if slices.Contains(outputFormats, v) {
			def = v
		}
	}
	return def
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
	fmt.Fprintf(w, "  %-10s %s\n  %-10s %s\n", "help", "this help; 's3q help CMD' is 's3q CMD --help'", "version", "print the version of s3q")
	fmt.Fprint(w, `
Global flags:
  --url URL        the s3q API (default $S3Q_URL or http://127.0.0.1:8080);
                   requests to *.amazonaws.com are signed with AWS SigV4
  -o, --output F   text (default; lists as a table), table, json, yaml, or
                   id (only the ids of the tasks an answer holds, one a line)
  -q, --queue Q    the queue task, worker and schedule commands address
                   (default $S3Q_QUEUE or "default"): every route names it,
                   /queues/Q/..., so IAM can scope a role to queues

Durations accept s, m, h and d: 90s, 30m, 1h, 7d, 1d12h.
Times are RFC 3339: 2026-01-28T09:00:00Z.

Run 's3q <command> --help' for a command's flags.

`+exitCodesHelp)
}

// printCommandHelp prints a command's help; args are the positional
// arguments before --help, whose first may name a subcommand.
func printCommandHelp(w io.Writer, c *command, args []string) {
	if len(args) > 0 && printSubcommandHelp(w, c, args[0]) {
		return
	}
	fmt.Fprintf(w, "s3q %s — %s\n\nUsage:\n  s3q %s %s[flags]\n", c.name, c.summary, c.name, withSpace(c.args))
	if c.details != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(c.details))
	}
	printFlags(w, c, nil)
}

// printSubcommandHelp prints the help of one subcommand, read from the
// command's "Subcommands:" lines ("  create ID --cron EXPR  create a
// schedule"), with its flags; false when sub is not one.
func printSubcommandHelp(w io.Writer, c *command, sub string) bool {
	_, list, ok := strings.Cut(c.details, "Subcommands:\n")
	if !ok {
		return false
	}
	for _, line := range strings.Split(list, "\n") {
		if !strings.HasPrefix(line, "  ") {
			break
		}
		fields := strings.Fields(line)
		if len(fields) == 0 || fields[0] != sub {
			continue
		}
		usage, summary, _ := strings.Cut(strings.TrimSpace(line), "   ")
		fmt.Fprintf(w, "s3q %s %s — %s\n\nUsage:\n  s3q %s %s\n", c.name, sub, strings.TrimSpace(summary), c.name, strings.TrimSpace(usage))
		var examples []string
		for _, l := range strings.Split(c.details, "\n") {
			if strings.HasPrefix(strings.TrimSpace(l), "s3q "+c.name+" "+sub+" ") {
				examples = append(examples, l)
			}
		}
		if len(examples) > 0 {
			fmt.Fprintf(w, "\nExamples:\n%s\n", strings.Join(examples, "\n"))
		}
		only, listed := c.subFlags[sub]
		if !listed {
			only = nil
		} else if only == nil {
			only = []string{}
		}
		printFlags(w, c, only)
		return true
	}
	return false
}

// printFlags prints the command's flags (only those named, when only is
// not nil) and the global flags.
func printFlags(w io.Writer, c *command, only []string) {
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
		if f.Usage == "" || only != nil && !slices.Contains(only, f.Name) {
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
		switch f.DefValue {
		case "", "0", "false", "0s":
		default:
			if !strings.Contains(usage, "default") {
				usage += fmt.Sprintf(" (default %s)", f.DefValue)
			}
		}
		lines = append(lines, fmt.Sprintf("  %-24s %s", name, usage))
	})
	if len(lines) > 0 {
		fmt.Fprintf(w, "\nFlags:\n%s\n", strings.Join(lines, "\n"))
	}
	fmt.Fprint(w, "\nGlobal flags: --url URL, -o/--output text|table|json|yaml|id, -q/--queue NAME (see 's3q help').\n")
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
