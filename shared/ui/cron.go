package ui

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/s3q/s3q/shared/queue"
)

// cronWords says a cron expression in English: "at 09:00 on Monday
// through Friday", "every 15 minutes". It returns "" for an expression
// it cannot say, which the page then shows as it is.
func cronWords(expr string) string {
	expr = strings.TrimSpace(expr)
	switch expr {
	case "@yearly", "@annually":
		return "every year, at 00:00 on January 1"
	case "@monthly":
		return "every month, at 00:00 on day 1"
	case "@weekly":
		return "every week, at 00:00 on Sunday"
	case "@daily", "@midnight":
		return "every day at 00:00"
	case "@hourly":
		return "every hour, on the hour"
	}
	if rest, ok := strings.CutPrefix(expr, "@every "); ok {
		d, err := queue.ParseDuration(rest)
		if err != nil {
			return ""
		}
		return "every " + queue.FormatDuration(d)
	}
	f := strings.Fields(expr)
	if len(f) != 5 {
		return ""
	}
	minute, hour, dom, month, dow := f[0], f[1], f[2], f[3], f[4]
	when, ok := timeWords(minute, hour)
	if !ok {
		return ""
	}
	var days []string
	if dom != "*" && dom != "?" {
		w, ok := fieldWords(dom, nil, "day")
		if !ok {
			return ""
		}
		days = append(days, "on "+w+" of the month")
	}
	if dow != "*" && dow != "?" {
		w, ok := fieldWords(strings.ReplaceAll(dow, "7", "0"), weekdays, "")
		if !ok {
			return ""
		}
		if len(days) > 0 {
			days = append(days, "or")
		}
		days = append(days, "on "+w)
	}
	if month != "*" {
		w, ok := fieldWords(month, months, "")
		if !ok {
			return ""
		}
		days = append(days, "in "+w)
	}
	if len(days) == 0 && strings.HasPrefix(when, "at ") && !strings.Contains(when, "past") {
		return "every day " + when
	}
	return strings.Join(append([]string{when}, days...), " ")
}

// timeWords says the minute and hour fields.
func timeWords(minute, hour string) (string, bool) {
	m, mOK := strconv.Atoi(minute)
	h, hOK := strconv.Atoi(hour)
	switch {
	case mOK == nil && hOK == nil && m < 60 && h < 24:
		return fmt.Sprintf("at %02d:%02d", h, m), true
	case minute == "*" && hour == "*":
		return "every minute", true
	case strings.HasPrefix(minute, "*/") && hour == "*":
		return "every " + strings.TrimPrefix(minute, "*/") + " minutes", true
	case mOK == nil && hour == "*":
		if m == 0 {
			return "every hour, on the hour", true
		}
		return fmt.Sprintf("every hour at %d past", m), true
	case mOK == nil && strings.HasPrefix(hour, "*/"):
		return fmt.Sprintf("at minute %d past every %s hours", m, strings.TrimPrefix(hour, "*/")), true
	case mOK == nil:
		hw, ok := fieldWords(hour, nil, "hour")
		if !ok {
			return "", false
		}
		return fmt.Sprintf("at minute %d past %s", m, hw), true
	case minute == "*":
		hw, ok := fieldWords(hour, nil, "hour")
		if !ok {
			return "", false
		}
		return "every minute of " + hw, true
	case strings.HasPrefix(minute, "*/"):
		hw, ok := fieldWords(hour, nil, "hour")
		if !ok {
			return "", false
		}
		return "every " + strings.TrimPrefix(minute, "*/") + " minutes of " + hw, true
	}
	return "", false
}

var weekdays = []string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"}
var months = []string{"", "January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"}

// fieldWords says a list of values, ranges and steps ("1-5", "1,15",
// "*/2") with names when given, else with unit ("day 1 and 15").
func fieldWords(field string, names []string, unit string) (string, bool) {
	name := func(s string) (string, bool) {
		n, err := strconv.Atoi(s)
		if names != nil {
			if err != nil {
				for _, nm := range names {
					if nm != "" && strings.EqualFold(nm[:3], s) {
						return nm, true
					}
				}
				return "", false
			}
			if n < 0 || n >= len(names) || names[n] == "" {
				return "", false
			}
			return names[n], true
		}
		return s, err == nil
	}
	var parts []string
	for _, item := range strings.Split(field, ",") {
		switch {
		case strings.HasPrefix(item, "*/"):
			if _, err := strconv.Atoi(item[2:]); err != nil {
				return "", false
			}
			label := unit
			if label == "" {
				label = "one"
			}
			parts = append(parts, "every "+item[2:]+ordinalSuffix(item[2:])+" "+label)
		case strings.Contains(item, "-"):
			a, b, _ := strings.Cut(item, "-")
			na, ok1 := name(a)
			nb, ok2 := name(b)
			if !ok1 || !ok2 {
				return "", false
			}
			if unit != "" {
				parts = append(parts, unit+"s "+na+" through "+nb)
			} else {
				parts = append(parts, na+" through "+nb)
			}
		default:
			n, ok := name(item)
			if !ok {
				return "", false
			}
			parts = append(parts, n)
		}
	}
	s := parts[0]
	if len(parts) > 1 {
		s = strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
	}
	if unit != "" && !strings.Contains(s, unit) {
		s = unit + " " + s
	}
	return s, true
}

func ordinalSuffix(n string) string {
	switch {
	case strings.HasSuffix(n, "11"), strings.HasSuffix(n, "12"), strings.HasSuffix(n, "13"):
		return "th"
	case strings.HasSuffix(n, "1"):
		return "st"
	case strings.HasSuffix(n, "2"):
		return "nd"
	case strings.HasSuffix(n, "3"):
		return "rd"
	}
	return "th"
}
