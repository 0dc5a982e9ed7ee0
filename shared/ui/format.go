package ui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"net/url"
	"strings"
	"time"

	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
)

// funcs are the template functions.
var funcs = template.FuncMap{
	"clock":    func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 MST") },
	"dur":      func(d queue.Duration) string { return queue.FormatDuration(d.Std()) },
	"durp":     durp,
	"inZone":   inZone,
	"bytes":    humanBytes,
	"path":     url.PathEscape,
	"deref":    func(p *int) int { return *p },
	"deref_t":  func(p *time.Time) time.Time { return *p },
	"short":    shortID,
	"statusOf": func(s queue.Status) string { return string(s) },
	"plural":   plural,
	"when":     when,
	"dict":     func(p page, item any, back string) itemCtx { return itemCtx{Page: p, Item: item, Back: back} },
}

// iso is a time in RFC 3339, UTC, for datetime attributes and the script.
func iso(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// durp formats an optional duration, "—" for none.
func durp(d *queue.Duration) string {
	if d == nil {
		return "—"
	}
	return queue.FormatDuration(d.Std())
}

// rel says how far t is from now: "in 4m 10s", "3h 2m ago", "now".
func rel(t, now time.Time) string {
	d := t.Sub(now)
	switch {
	case d >= -time.Second && d <= time.Second:
		return "now"
	case d > 0:
		return "in " + span(d)
	}
	return span(-d) + " ago"
}

// span is a duration in its two largest units: "4m 10s", "2d 3h".
func span(d time.Duration) string {
	d = d.Round(time.Second)
	days := d / (24 * time.Hour)
	d -= days * 24 * time.Hour
	h := d / time.Hour
	d -= h * time.Hour
	m := d / time.Minute
	s := (d - m*time.Minute) / time.Second
	switch {
	case days > 0:
		return fmt.Sprintf("%dd %dh", days, h)
	case h > 0:
		return fmt.Sprintf("%dh %dm", h, m)
	case m > 0:
		return fmt.Sprintf("%dm %ds", m, s)
	}
	return fmt.Sprintf("%ds", s)
}

// inZone formats t in the zone tz (an IANA name), with the weekday.
func inZone(t time.Time, tz string) string {
	loc, err := time.LoadLocation(tz)
	if err != nil {
		loc = time.UTC
	}
	return t.In(loc).Format("Mon 2006-01-02 15:04 MST")
}

func humanBytes(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// shortID is the tail of a task id, which is what tells ids made the
// same millisecond apart: the whole id is in the link's title.
func shortID(id string) string {
	if len(id) <= 13 {
		return id
	}
	return "…" + id[len(id)-12:]
}

// jsonBlock is a JSON value as the task page shows it: indented, and
// collapsed when large.
type jsonBlock struct {
	Text  string
	Size  int
	Lines int
	Large bool
}

// collapseOver is the size over which a JSON value starts collapsed.
const (
	collapseBytes = 2048
	collapseLines = 40
)

func prettyJSON(raw json.RawMessage) *jsonBlock {
	if len(raw) == 0 {
		return nil
	}
	var buf bytes.Buffer
	text := string(raw)
	if json.Indent(&buf, raw, "", "  ") == nil {
		text = buf.String()
	}
	b := &jsonBlock{Text: text, Size: len(raw), Lines: strings.Count(text, "\n") + 1}
	b.Large = b.Size > collapseBytes || b.Lines > collapseLines
	return b
}

// describeDefaults says a queue's defaults in one line.
func describeDefaults(d queues.Declaration) string {
	var parts []string
	if d.TTL != nil {
		s := "ttl " + queue.FormatDuration(d.TTL.Std())
		if d.TTLFrom == queue.TTLFromFirstAttempt {
			s += " from first attempt"
		}
		parts = append(parts, s)
	}
	if d.MaxAttempts > 0 {
		parts = append(parts, fmt.Sprintf("max %d attempts", d.MaxAttempts))
	}
	if d.Timeout != nil {
		parts = append(parts, "lease "+queue.FormatDuration(d.Timeout.Std()))
	}
	if len(parts) == 0 {
		return "deployment defaults"
	}
	return strings.Join(parts, ", ")
}

// describeTarget says where a push queue delivers, "" for a pull queue.
func describeTarget(t *queues.Target) string {
	switch {
	case t == nil:
		return ""
	case t.Lambda != "":
		return "Lambda " + t.Lambda
	}
	return "POST " + t.URL
}

// when is a time as the pages show it: relative to now, with the exact
// time in its title, in a <time> element the script keeps counting.
// A nil or zero time is "—".
func when(v any, now time.Time) template.HTML {
	var t time.Time
	switch x := v.(type) {
	case time.Time:
		t = x
	case *time.Time:
		if x != nil {
			t = *x
		}
	}
	if t.IsZero() {
		return "—"
	}
	return template.HTML(`<time datetime="` + iso(t) + `" data-rel title="` + t.UTC().Format("2006-01-02 15:04:05.000 MST") + `">` +
		template.HTMLEscapeString(rel(t, now)) + `</time>`)
}

// plural picks one or many by n, an int or an int64.
func plural(n any, one, many string) string {
	switch x := n.(type) {
	case int:
		if x == 1 {
			return one
		}
	case int64:
		if x == 1 {
			return one
		}
	}
	return many
}

// itemCtx is what a part gets that needs the page and one item.
type itemCtx struct {
	Page page
	Item any
	Back string
}
