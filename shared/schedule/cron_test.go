package schedule

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/queue"
)

// fires lists the fire times of expr in tz in (from, to], as UTC RFC 3339.
func fires(t *testing.T, expr, tz string, from, to time.Time) []string {
	t.Helper()
	sp, err := ParseSpec(expr, tz)
	if err != nil {
		t.Fatalf("parse %q %s: %v", expr, tz, err)
	}
	var out []string
	for n := sp.Next(from); !n.IsZero() && !n.After(to); n = sp.Next(n) {
		out = append(out, n.Format(time.RFC3339))
	}
	return out
}

func wantFires(t *testing.T, got []string, want ...string) {
	t.Helper()
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("fires:\n got %v\nwant %v", got, want)
	}
}

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestCronStandardFieldsAndDescriptors(t *testing.T) {
	// 2026-05-01 is a Friday.
	wantFires(t, fires(t, "0 9 * * 1-5", "UTC", utc("2026-04-30T10:00:00Z"), utc("2026-05-05T10:00:00Z")),
		"2026-05-01T09:00:00Z", "2026-05-04T09:00:00Z", "2026-05-05T09:00:00Z")
	wantFires(t, fires(t, "*/15 * * * *", "UTC", utc("2026-05-01T09:00:00Z"), utc("2026-05-01T10:00:00Z")),
		"2026-05-01T09:15:00Z", "2026-05-01T09:30:00Z", "2026-05-01T09:45:00Z", "2026-05-01T10:00:00Z")
	wantFires(t, fires(t, "0 0 1 * *", "UTC", utc("2026-01-15T00:00:00Z"), utc("2026-04-01T00:00:00Z")),
		"2026-02-01T00:00:00Z", "2026-03-01T00:00:00Z", "2026-04-01T00:00:00Z")
	wantFires(t, fires(t, "@hourly", "UTC", utc("2026-05-01T09:30:00Z"), utc("2026-05-01T11:00:00Z")),
		"2026-05-01T10:00:00Z", "2026-05-01T11:00:00Z")
	wantFires(t, fires(t, "@daily", "Europe/Berlin", utc("2026-05-01T00:00:00Z"), utc("2026-05-03T00:00:00Z")),
		"2026-05-01T22:00:00Z", "2026-05-02T22:00:00Z")
	wantFires(t, fires(t, "0 9 * * MON", "America/New_York", utc("2026-05-01T00:00:00Z"), utc("2026-05-05T00:00:00Z")),
		"2026-05-04T13:00:00Z")
}

func TestCronEveryIsAnchoredAtTheUnixEpoch(t *testing.T) {
	wantFires(t, fires(t, "@every 90s", "UTC", utc("2026-05-01T09:00:10Z"), utc("2026-05-01T09:06:00Z")),
		"2026-05-01T09:01:30Z", "2026-05-01T09:03:00Z", "2026-05-01T09:04:30Z", "2026-05-01T09:06:00Z")
	// The time zone does not move it.
	wantFires(t, fires(t, "@every 15m", "Asia/Kolkata", utc("2026-05-01T09:00:00Z"), utc("2026-05-01T09:30:00Z")),
		"2026-05-01T09:15:00Z", "2026-05-01T09:30:00Z")
	wantFires(t, fires(t, "@every 1d", "UTC", utc("2026-05-01T09:00:00Z"), utc("2026-05-03T09:00:00Z")),
		"2026-05-02T00:00:00Z", "2026-05-03T00:00:00Z")
}

// Europe/Berlin: 2026-03-29 02:00 CET -> 03:00 CEST; 2026-10-25 03:00 CEST -> 02:00 CET.
func TestCronDSTBerlin(t *testing.T) {
	// Spring forward: 02:30 does not exist that day and is skipped.
	wantFires(t, fires(t, "30 2 * * *", "Europe/Berlin", utc("2026-03-27T12:00:00Z"), utc("2026-03-30T12:00:00Z")),
		"2026-03-28T01:30:00Z", "2026-03-30T00:30:00Z")
	// Every hour keeps real spacing across the gap.
	wantFires(t, fires(t, "*/30 * * * *", "Europe/Berlin", utc("2026-03-29T00:15:00Z"), utc("2026-03-29T01:45:00Z")),
		"2026-03-29T00:30:00Z", "2026-03-29T01:00:00Z", "2026-03-29T01:30:00Z")
	// Fall back: 02:30 happens twice and fires once, at its first (CEST) occurrence.
	wantFires(t, fires(t, "30 2 * * *", "Europe/Berlin", utc("2026-10-24T12:00:00Z"), utc("2026-10-26T12:00:00Z")),
		"2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z")
	// ... but an every-hour schedule fires in both.
	wantFires(t, fires(t, "30 * * * *", "Europe/Berlin", utc("2026-10-24T23:00:00Z"), utc("2026-10-25T02:00:00Z")),
		"2026-10-24T23:30:00Z", "2026-10-25T00:30:00Z", "2026-10-25T01:30:00Z")
}

// America/New_York: 2026-03-08 02:00 EST -> 03:00 EDT; 2026-11-01 02:00 EDT -> 01:00 EST.
func TestCronDSTNewYork(t *testing.T) {
	// Spring forward: 02:30 on 03-08 does not exist; 03-07 02:30 EST, then 03-09 02:30 EDT.
	wantFires(t, fires(t, "30 2 * * *", "America/New_York", utc("2026-03-07T00:00:00Z"), utc("2026-03-09T12:00:00Z")),
		"2026-03-07T07:30:00Z", "2026-03-09T06:30:00Z")
	wantFires(t, fires(t, "30 1 * * *", "America/New_York", utc("2026-10-31T12:00:00Z"), utc("2026-11-02T12:00:00Z")),
		"2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z")
	wantFires(t, fires(t, "*/30 * * * *", "America/New_York", utc("2026-11-01T04:45:00Z"), utc("2026-11-01T07:00:00Z")),
		"2026-11-01T05:00:00Z", "2026-11-01T05:30:00Z", "2026-11-01T06:00:00Z", "2026-11-01T06:30:00Z", "2026-11-01T07:00:00Z")
	wantFires(t, fires(t, "@hourly", "America/New_York", utc("2026-11-01T04:30:00Z"), utc("2026-11-01T07:00:00Z")),
		"2026-11-01T05:00:00Z", "2026-11-01T06:00:00Z", "2026-11-01T07:00:00Z")
}

func TestCronLatestAndCount(t *testing.T) {
	sp, _ := ParseSpec("*/15 * * * *", "UTC")
	from := utc("2026-05-01T00:00:00Z")
	now := utc("2026-05-03T09:07:00Z")
	if l := sp.latest(from, now); !l.Equal(utc("2026-05-03T09:00:00Z")) {
		t.Fatalf("latest = %s", l)
	}
	if n := sp.count(from, utc("2026-05-01T01:00:00Z"), 1000); n != 4 {
		t.Fatalf("count = %d, want 4", n)
	}
	daily, _ := ParseSpec("0 9 * * *", "UTC")
	if l := daily.latest(utc("2026-04-01T09:00:00Z"), now); !l.Equal(utc("2026-05-03T09:00:00Z")) {
		t.Fatalf("latest daily = %s", l)
	}
	if l := daily.latest(utc("2026-05-03T09:00:00Z"), now); !l.Equal(utc("2026-05-03T09:00:00Z")) {
		t.Fatalf("latest daily from itself = %s", l)
	}
}

func TestCronBadInput(t *testing.T) {
	for _, c := range []struct{ expr, tz, field string }{
		{"", "", "cron"},
		{"* * * *", "", "cron"},
		{"* * * * * *", "", "cron"},
		{"61 * * * *", "", "cron"},
		{"0 25 * * *", "", "cron"},
		{"@fortnightly", "", "cron"},
		{"@every 30s", "", "cron"},
		{"@every 90.5s", "", "cron"},
		{"@every -1m", "", "cron"},
		{"@every soon", "", "cron"},
		{"TZ=UTC", "", "cron"},
		{"CRON_TZ=Europe/Berlin 0 9 * * *", "", "cron"},
		{"0 9 * * *\n", "", ""}, // trailing newline is trimmed: valid
		{"0 9\x00 * * *", "", "cron"},
		{"0 9 * * *", "Mars/Olympus", "timezone"},
		{"0 9 * * *", "Local", "timezone"},
		{"0 9 * * *", "../../etc/passwd", "timezone"},
	} {
		_, err := ParseSpec(c.expr, c.tz)
		if c.field == "" {
			if err != nil {
				t.Errorf("%q %q: %v", c.expr, c.tz, err)
			}
			continue
		}
		var ve *queue.ValidationError
		if !errors.As(err, &ve) || ve.Field != c.field || !errors.Is(err, queue.ErrInvalidInput) {
			t.Errorf("%q %q: err = %v, want a validation error on %s", c.expr, c.tz, err, c.field)
		}
	}
}

func TestDueKeyRoundTrip(t *testing.T) {
	at := utc("2026-05-01T09:00:00Z")
	for _, id := range []string{"q/a", "team_1/daily_report_2", "x-y/x-y-z"} {
		k := dueKey(at, id, 42)
		m, ok := parseDueKey(k)
		if !ok || m.id != id || m.rev != 42 || !m.at.Equal(at) || m.key != k {
			t.Fatalf("parse %q = %+v, %v", k, m, ok)
		}
	}
	for _, k := range []string{"due/", "due/x_y_1", "due/20260501T090000.000000Z_a", "due/20260501T090000.000000Z_q.a/b_1", "due/20260501T090000.000000Z__1", "due/20260501T090000.000000Z_a_1"} {
		if _, ok := parseDueKey(k); ok {
			t.Fatalf("parse %q: ok", k)
		}
	}
	if a, b := dueKey(at, "q/z", 1), dueKey(at.Add(time.Second), "q/a", 1); a >= b {
		t.Fatalf("keys do not sort by time: %s >= %s", a, b)
	}
}

func TestListSkipsSubtrees(t *testing.T) {
	p := "q/team/schedules/"
	if id := idFromDefinitionKey(p, p+"abc.json"); id != "abc" {
		t.Fatal(id)
	}
	if id := idFromDefinitionKey(p, p+"abc/state.json"); id != "" {
		t.Fatal(id)
	}
	if id := subtreeOf(p, p+"abc/history/20260501T090000.000000Z"); id != "abc" {
		t.Fatal(id)
	}
	for _, k := range []string{StateKey("team/abc"), historyKey("team/abc", utc("2026-05-01T09:00:00Z"), true)} {
		if k >= afterSubtree("team/abc") || k <= DefinitionKey("team/abc") || !strings.HasPrefix(k, p) {
			t.Fatalf("%s is not inside (%s, %s)", k, DefinitionKey("team/abc"), afterSubtree("team/abc"))
		}
	}
}
