package wire

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// maxDurationSeconds is the largest duration a JSON number may give: about
// 290 years, what a time.Duration holds.
const maxDurationSeconds = float64(1<<63-1) / float64(time.Second)

// Duration is a time.Duration that reads and writes as a string such as
// "90s", "30m", "1h30m" or "7d". JSON numbers are read as seconds.
type Duration time.Duration

// ParseDuration parses "90s", "30m", "1h", "7d", "1d12h" or any
// time.ParseDuration string. A "d" unit is 24 hours. Negative durations
// parse; callers reject them where they make no sense.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("empty duration")
	}
	neg := strings.HasPrefix(s, "-")
	rest := strings.TrimPrefix(s, "-")
	var days int64
	if i := strings.IndexByte(rest, 'd'); i >= 0 {
		n, err := strconv.ParseInt(rest[:i], 10, 64)
		if err != nil || n < 0 || n > 365*100 {
			return 0, fmt.Errorf("bad duration %q: want e.g. 90s, 30m, 1h, 7d", s)
		}
		days, rest = n, rest[i+1:]
	}
	var d time.Duration
	if rest != "" {
		var err error
		if d, err = time.ParseDuration(rest); err != nil || d < 0 {
			return 0, fmt.Errorf("bad duration %q: want e.g. 90s, 30m, 1h, 7d", s)
		}
	}
	d += time.Duration(days) * 24 * time.Hour
	if neg {
		d = -d
	}
	return d, nil
}

// FormatDuration writes d compactly: "7d", "1d2h", "1h30m", "90s" is "1m30s", "250ms".
func FormatDuration(d time.Duration) string {
	if d == 0 {
		return "0s"
	}
	var b strings.Builder
	if d < 0 {
		b.WriteByte('-')
		d = -d
	}
	if days := d / (24 * time.Hour); days > 0 {
		fmt.Fprintf(&b, "%dd", days)
		d -= days * 24 * time.Hour
		if d == 0 {
			return b.String()
		}
	}
	s := d.String()
	// time.Duration.String writes "1h0m0s"; drop the zero units.
	s = strings.Replace(s, "h0m0s", "h", 1)
	s = strings.Replace(s, "m0s", "m", 1)
	b.WriteString(s)
	return b.String()
}

// Std returns d as a time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }

// String implements fmt.Stringer.
func (d Duration) String() string { return FormatDuration(time.Duration(d)) }

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON reads a duration string, or a number of seconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		var secs float64
		if err := json.Unmarshal(b, &secs); err != nil {
			return fmt.Errorf("want a duration like \"1h\" or a number of seconds")
		}
		if secs > maxDurationSeconds || secs < -maxDurationSeconds {
			return fmt.Errorf("%v seconds is out of range (at most %.0f)", secs, maxDurationSeconds)
		}
		*d = Duration(time.Duration(secs * float64(time.Second)))
		return nil
	}
	v, err := ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}
