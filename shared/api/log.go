package api

import (
	"context"
	"log/slog"
	"time"

	"github.com/s3q/s3q/shared/reqcount"
)

// requestLog collects what the log line of one request says.
type requestLog struct {
	route  string   // the route key, or "unmatched"
	method string   // the HTTP method
	path   string   // the URL path
	ids    []string // the task ids the request named or touched
	code   string   // the error code answered, if any
	err    error    // the cause of a 5xx
}

// addIDs records task ids the request touched, once each.
func (rl *requestLog) addIDs(ids ...string) {
	for _, id := range ids {
		if len(rl.ids) > 0 && rl.ids[0] == id {
			continue
		}
		rl.ids = append(rl.ids, id)
	}
}

// maxLoggedIDs bounds the ids one log line carries (a batch has up to 500).
const maxLoggedIDs = 20

// logRequest writes the one structured line of a request: info for a
// success or a 4xx, error for a 5xx.
func (a *API) logRequest(ctx context.Context, rl *requestLog, status int, took time.Duration, counts *reqcount.Counter) {
	attrs := []slog.Attr{
		slog.String("route", rl.route),
		slog.String("method", rl.method),
		slog.Int("status", status),
		slog.Float64("duration_ms", float64(took.Microseconds())/1000),
	}
	if rl.route == "unmatched" {
		attrs = append(attrs, slog.String("path", clip(rl.path)))
	}
	switch ids := rl.ids; {
	case len(ids) == 1:
		attrs = append(attrs, slog.String("task_id", clip(ids[0])))
	case len(ids) > maxLoggedIDs:
		attrs = append(attrs, slog.Any("task_ids", ids[:maxLoggedIDs]), slog.Int("task_count", len(ids)))
	case len(ids) > 1:
		attrs = append(attrs, slog.Any("task_ids", ids))
	}
	if rl.code != "" {
		attrs = append(attrs, slog.String("code", rl.code))
	}
	if counts != nil {
		c := counts.Counts()
		attrs = append(attrs, slog.Group("s3",
			slog.Int64("requests", c.Total()), slog.Int64("put", c.Put), slog.Int64("get", c.Get),
			slog.Int64("list", c.List), slog.Int64("delete", c.Delete), slog.Int64("head", c.Head),
			// The requests made one after another: what the caller waited for.
			slog.Int("round_trips", counts.RoundTrips())))
	}
	level := slog.LevelInfo
	if status >= 500 {
		level = slog.LevelError
		if rl.err != nil {
			attrs = append(attrs, slog.String("error", rl.err.Error()))
		}
	}
	a.log.LogAttrs(ctx, level, "request", attrs...)
}
