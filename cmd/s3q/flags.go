package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// flagExamples are examples of a valid value for flags whose type does not
// say enough; flagExample falls back on the type.
var flagExamples = map[string]string{
	"max-attempts": "5", "limit": "100", "concurrency": "4", "max-concurrency": "10", "shards": "4", "priority": "1", "max-schedules": "500",
	"cron": "'0 2 * * *'", "timezone": "Europe/Berlin", "output": "json", "o": "json", "set": "task_id=ID",
	"ttl-from": "first_attempt", "missed-runs": "catch_up", "overlap": "skip", "status": "failed",
}

// flagExample is an example value of f for an error message.
func flagExample(f *flag.Flag) string {
	if ex, ok := flagExamples[f.Name]; ok {
		return ex
	}
	v := f.Value
	if c, ok := v.(*checkedValue); ok {
		v = c.Value
	}
	switch v.(type) {
	case *durationFlag:
		return "1h"
	case *timeFlag:
		return time.Now().UTC().Add(time.Hour).Truncate(time.Second).Format(time.RFC3339)
	}
	if b, ok := v.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
		return ""
	}
	if _, err := strconv.Atoi(f.DefValue); err == nil {
		return "5"
	}
	return ""
}

// checkedValue wraps a flag's value so that a bad value is reported by
// flag name, as typed, with an example (the flag package would say
// `invalid value "abc" for flag -max-attempts: parse error`).
type checkedValue struct {
	flag.Value
	f    *flag.Flag
	fail *error // the first bad value's error, for parseFlags
}

func (v *checkedValue) Set(s string) error {
	err := v.Value.Set(s)
	if err == nil {
		return nil
	}
	var ce *cliError
	if errors.As(err, &ce) { // already worded by the value itself
		*v.fail = ce
		return err
	}
	reason := err.Error()
	if errors.Is(err, strconv.ErrSyntax) || errors.Is(err, strconv.ErrRange) || reason == "parse error" || reason == "value out of range" {
		reason = "not a whole number"
		if b, ok := v.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			reason = "not true or false"
		}
	}
	if *v.fail == nil {
		*v.fail = flagErr(v.f.Name, flagExample(v.f), "%q: %s", s, reason)
	}
	return err
}

// IsBoolFlag keeps a wrapped boolean flag a boolean one (-all, not -all=true).
func (v *checkedValue) IsBoolFlag() bool {
	b, ok := v.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// parseFlags parses args with fs, flags anywhere among the positional
// arguments, and words every flag error by the flag's name with an
// example. It returns the positional arguments read so far with
// flag.ErrHelp, so `s3q schedule create --help` knows its subcommand.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	var fail error
	fs.VisitAll(func(f *flag.Flag) { f.Value = &checkedValue{Value: f.Value, f: f, fail: &fail} })
	pos, err := parseInterleaved(fs, args)
	switch {
	case err == nil:
		return pos, checkMinimums(fs)
	case errors.Is(err, flag.ErrHelp):
		return pos, err
	case fail != nil:
		return pos, fail
	}
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: "); ok {
		return pos, &cliError{exit: exitUsage, code: "usage", field: flagName(name), message: "unknown flag " + flagName(name) + didYouMeanFlag(fs, name)}
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: "); ok {
		ex := ""
		if f := fs.Lookup(strings.TrimLeft(name, "-")); f != nil {
			ex = flagExample(f)
		}
		return pos, flagErr(name, ex, "needs a value")
	}
	return pos, usageErr("%s", msg)
}

// parseInterleaved parses flags wherever they appear among the positional
// arguments ("s3q status ID --output json").
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return pos, err
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

// flagMinimums are the least values of integer flags: --max-attempts 0
// would otherwise be taken for "the default" and silently become 3.
var flagMinimums = map[string]struct {
	min int
	why string
}{
	"max-attempts": {1, "every task gets at least one attempt; leave the flag out for the default"},
	"concurrency":  {1, "a worker runs at least one task at a time"},
	"priority":     {1, "1 is the highest priority, 5 the lowest; leave the flag out for the default"},
}

// checkMinimums refuses an integer flag given below its minimum.
func checkMinimums(fs *flag.FlagSet) error {
	var err error
	fs.Visit(func(f *flag.Flag) {
		m, ok := flagMinimums[f.Name]
		if n, perr := strconv.Atoi(f.Value.String()); ok && perr == nil && n < m.min && err == nil {
			err = flagErr(f.Name, flagExample(f), "%d: must be at least %d: %s", n, m.min, m.why)
		}
	})
	return err
}

// jsonPosition says where in raw a JSON error is: "line 2, column 7: ...".
func jsonPosition(raw []byte, err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	off := int64(-1)
	switch {
	case errors.As(err, &se):
		off = se.Offset - 1 // the offending byte, which was read
	case errors.As(err, &te):
		off = te.Offset
	}
	if off < 0 {
		if errors.Is(err, errUnexpectedEnd) {
			off = int64(len(raw))
		} else {
			return err.Error()
		}
	}
	line, col := 1, 1
	for i := int64(0); i < off && i < int64(len(raw)); i++ {
		if raw[i] == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return fmt.Sprintf("line %d, column %d: %v", line, col, err)
}

// errUnexpectedEnd is json's error for a document cut short.
var errUnexpectedEnd = errors.New("unexpected end of JSON input")

// checkJSON returns nil when raw is one JSON value, else an error with
// its line and column.
func checkJSON(raw []byte) error {
	var v any
	err := json.Unmarshal(raw, &v)
	if err == nil {
		return nil
	}
	if err.Error() == errUnexpectedEnd.Error() {
		err = fmt.Errorf("%w", errUnexpectedEnd)
	}
	return errors.New(jsonPosition(raw, err))
}

// didYouMeanFlag suggests the long flag of fs closest to a mistyped one
// (--queu: --queue).
func didYouMeanFlag(fs *flag.FlagSet, name string) string {
	var long []string
	fs.VisitAll(func(f *flag.Flag) {
		if len(f.Name) > 1 {
			long = append(long, f.Name)
		}
	})
	if n := closest(strings.TrimLeft(name, "-"), long); n != "" {
		return " (did you mean " + flagName(n) + "?)"
	}
	return ""
}
