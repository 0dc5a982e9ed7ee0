package schedule

import (
	"fmt"
	"strings"
	"sync"
	"time"
	_ "time/tzdata" // time zones work where the system has no tz database (Lambda's provided.al2023)

	"github.com/robfig/cron/v3"

	"github.com/s3q/s3q/shared/internal/clip"
	"github.com/s3q/s3q/shared/queue"
)

// Limits on a cron expression.
const (
	// MinEvery is the shortest "@every" period: the tick runs once a minute.
	MinEvery = time.Minute
	// MaxEvery is the longest "@every" period.
	MaxEvery = 366 * 24 * time.Hour
	// MaxCronBytes bounds the length of a cron expression.
	MaxCronBytes = 256
)

// parser reads the standard five fields (minute hour day-of-month month
// day-of-week) and the descriptors (@yearly @annually @monthly @weekly
// @daily @midnight @hourly @every <duration>). There is no seconds field.
var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// starBit is robfig/cron's mark of a field written as "*".
const starBit = 1 << 63

// Spec is a parsed cron expression in a time zone. Its fire times are
// computed by Next; see the package documentation for how daylight-saving
// changes and "@every" are handled.
type Spec struct {
	expr string
	loc  *time.Location

	sched *cron.SpecSchedule // nil for "@every"
	every time.Duration      // "@every" period
	// hourAny is true when the hour field is "*": the schedule is about
	// elapsed time and fires in both occurrences of a repeated hour.
	hourAny bool
}

// ParseSpec parses a cron expression (five fields or a descriptor) in the
// IANA time zone tz ("" means UTC). Errors are *queue.ValidationError on
// the field "cron" or "timezone".
func ParseSpec(expr, tz string) (*Spec, error) {
	loc, err := loadLocation(tz)
	if err != nil {
		return nil, err
	}
	expr = strings.TrimSpace(expr)
	switch {
	case expr == "":
		return nil, invalid("cron", "is required")
	case len(expr) > MaxCronBytes:
		return nil, invalid("cron", "is %d bytes, over the limit of %d", len(expr), MaxCronBytes)
	case strings.HasPrefix(expr, "TZ=") || strings.HasPrefix(expr, "CRON_TZ="):
		return nil, invalid("cron", "give the time zone in the timezone field, not in the expression")
	case hasControl(expr):
		return nil, invalid("cron", "contains a control character")
	}
	sp := &Spec{expr: expr, loc: loc}
	if rest, ok := strings.CutPrefix(expr, "@every "); ok {
		d, err := queue.ParseDuration(rest)
		switch {
		case err != nil:
			return nil, invalid("cron", "%q: bad @every duration, want e.g. @every 15m, @every 90s, @every 1d", clip.Input(expr))
		case d < MinEvery || d > MaxEvery:
			return nil, invalid("cron", "%q: @every must be between %s and %s", clip.Input(expr), queue.FormatDuration(MinEvery), queue.FormatDuration(MaxEvery))
		case d%time.Second != 0:
			return nil, invalid("cron", "%q: @every must be a whole number of seconds", clip.Input(expr))
		}
		sp.every = d
		return sp, nil
	}
	s, err := parse(expr)
	if err != nil {
		// robfig/cron's words end with the fields it read (": [a b]"): the
		// expression is named once, first.
		why, _, _ := strings.Cut(err.Error(), ": [")
		return nil, invalid("cron", "%q is not a cron expression (%s); use 5 fields, minute hour day-of-month month day-of-week, or @hourly, @daily, @weekly, @monthly, @yearly, @every 15m", clip.Input(expr), why)
	}
	ss, ok := s.(*cron.SpecSchedule)
	if !ok {
		return nil, invalid("cron", "%q is not a supported expression", clip.Input(expr))
	}
	c := *ss
	c.Location = loc
	sp.sched = &c
	sp.hourAny = c.Hour&starBit != 0
	return sp, nil
}

// parse calls the cron parser, turning a panic on odd input into an error.
func parse(expr string) (s cron.Schedule, err error) {
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, fmt.Errorf("cannot parse")
		}
	}()
	return parser.Parse(expr)
}

// String returns the expression as given (trimmed).
func (sp *Spec) String() string { return sp.expr }

// Location returns the time zone the expression is read in.
func (sp *Spec) Location() *time.Location { return sp.loc }

// Next returns the first fire time strictly after t, in UTC, or the zero
// time when there is none within five years (robfig/cron's horizon).
func (sp *Spec) Next(t time.Time) time.Time {
	if sp.every > 0 {
		// Whole multiples of the period since the Unix epoch.
		n, d := t.UnixNano(), int64(sp.every)
		k := n / d
		if n < 0 && n%d != 0 {
			k-- // floor for times before 1970
		}
		return time.Unix(0, (k+1)*d).UTC()
	}
	for {
		n := sp.sched.Next(t)
		if n.IsZero() {
			return time.Time{}
		}
		if sp.hourAny || !repeated(n, sp.loc) {
			return n.UTC()
		}
		t = n // the second occurrence of a wall-clock time: skip it
	}
}

// NextN returns the next n fire times strictly after t.
func (sp *Spec) NextN(t time.Time, n int) []time.Time {
	var out []time.Time
	for len(out) < n {
		t = sp.Next(t)
		if t.IsZero() {
			break
		}
		out = append(out, t)
	}
	return out
}

// atOrAfter returns the first fire time at or after t.
func (sp *Spec) atOrAfter(t time.Time) time.Time { return sp.Next(t.Add(-time.Nanosecond)) }

// latest returns the last fire time in [from, now], given that from is a
// fire time and from <= now. It probes back from now with doubling spans
// so that a long outage costs a few dozen Next calls, not one per missed
// time.
func (sp *Spec) latest(from, now time.Time) time.Time {
	start := from
	for d := time.Minute; d > 0; d *= 2 {
		probe := now.Add(-d)
		if !probe.After(from) {
			break
		}
		if n := sp.Next(probe); !n.IsZero() && !n.After(now) {
			start = n
			break
		}
	}
	l := start
	for {
		n := sp.Next(l)
		if n.IsZero() || n.After(now) {
			return l
		}
		l = n
	}
}

// count returns how many fire times lie in [from, to), where from is a fire
// time, counting at most limit.
func (sp *Spec) count(from, to time.Time, limit int) int {
	n := 0
	for t := from; !t.IsZero() && t.Before(to) && n < limit; t = sp.Next(t) {
		n++
	}
	return n
}

// repeated reports whether t is the second occurrence of its wall-clock
// time in loc: the same local date and time happened earlier, before the
// clocks went back. Every real zone moves its clocks back by a multiple of
// 15 minutes, at most 3 hours.
func repeated(t time.Time, loc *time.Location) bool {
	w := t.In(loc)
	for d := 15 * time.Minute; d <= 3*time.Hour; d += 15 * time.Minute {
		p := t.Add(-d).In(loc)
		if p.Year() == w.Year() && p.YearDay() == w.YearDay() && p.Hour() == w.Hour() && p.Minute() == w.Minute() && p.Second() == w.Second() {
			return true
		}
	}
	return false
}

var locations sync.Map // name -> *time.Location

// loadLocation resolves an IANA time zone name; "" is UTC.
func loadLocation(name string) (*time.Location, error) {
	if name == "" || name == "UTC" {
		return time.UTC, nil
	}
	if v, ok := locations.Load(name); ok {
		return v.(*time.Location), nil
	}
	if len(name) > 64 || name == "Local" || hasControl(name) {
		return nil, invalid("timezone", "%q is not an IANA time zone name such as Europe/Berlin", clip.Input(name))
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, invalid("timezone", "%q is not an IANA time zone name such as Europe/Berlin", clip.Input(name))
	}
	locations.Store(name, loc)
	return loc, nil
}
