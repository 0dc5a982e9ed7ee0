package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/s3q/s3q/shared/client"
	"github.com/s3q/s3q/shared/queue"
)

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// relative says how far t is from now: "in 2h 30m" or "5m ago".
func relative(t, now time.Time) string {
	d := t.Sub(now)
	switch {
	case d > 0:
		return "in " + human(d)
	case d < 0:
		return human(-d) + " ago"
	}
	return "now"
}

// human writes a duration for people: "2h 30m", "3d 4h", "45s".
func human(d time.Duration) string {
	d = d.Round(time.Second)
	if d < time.Minute {
		return fmt.Sprintf("%ds", int(d.Seconds()))
	}
	days := d / (24 * time.Hour)
	d -= days * 24 * time.Hour
	h := d / time.Hour
	d -= h * time.Hour
	m := d / time.Minute
	var parts []string
	if days > 0 {
		parts = append(parts, fmt.Sprintf("%dd", days))
	}
	if h > 0 {
		parts = append(parts, fmt.Sprintf("%dh", h))
	}
	if m > 0 && days == 0 {
		parts = append(parts, fmt.Sprintf("%dm", m))
	}
	if len(parts) == 0 {
		return "0m"
	}
	return strings.Join(parts, " ")
}

func stamp(t *time.Time, now time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(time.RFC3339) + " (" + relative(*t, now) + ")"
}

// printTask writes one task for people.
func printTask(w io.Writer, t client.Task, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "%s:\t%s\n", k, v) }
	row("task", t.Queue+"/"+t.ID) // what status, cancel, retry, expire and history take
	row("id", t.ID)
	row("type", t.TaskType)
	row("queue", t.Queue)
	status := string(t.Status)
	if t.CancelRequested {
		status += " (cancel requested)"
	}
	row("status", status)
	row("attempt", fmt.Sprintf("%d of %d", t.Attempt, t.MaxAttempts))
	if t.Priority > 0 {
		row("priority", fmt.Sprint(t.Priority))
	}
	row("created_at", stamp(&t.CreatedAt, now))
	row("available_at", stamp(&t.AvailableAt, now))
	exp := "never"
	if t.ExpiresAt != nil {
		exp = stamp(t.ExpiresAt, now)
	} else if t.TTLFrom == queue.TTLFromFirstAttempt && t.TTL != nil {
		exp = "ttl " + t.TTL.String() + " from the first attempt"
	}
	row("expires_at", exp)
	if t.ExpiredAt != nil {
		row("expired_at", stamp(t.ExpiredAt, now)+" reason "+t.ExpiryReason)
	}
	switch {
	case t.Status == queue.StatusExpired && t.ExpiryEventSentAt != nil:
		row("event", "Task Expired sent "+stamp(t.ExpiryEventSentAt, now))
	case t.Status == queue.StatusExpired:
		row("event", "Task Expired owed: the next sweep publishes it")
	case t.Status == queue.StatusFailed && t.DeadLetterEventSentAt != nil:
		row("event", "Task Dead-Lettered sent "+stamp(t.DeadLetterEventSentAt, now))
	case t.Status == queue.StatusFailed:
		row("event", "Task Dead-Lettered owed: the next sweep publishes it")
	}
	if t.ArtifactsExpireAt != nil {
		row("artifacts", "deleted by the first sweep after "+stamp(t.ArtifactsExpireAt, now)+" or once the task has finished")
	}
	if t.LeaseExpiresAt != nil {
		row("lease", "until "+stamp(t.LeaseExpiresAt, now)+" worker "+t.WorkerID)
	}
	if t.DedupKey != "" {
		row("dedup_key", t.DedupKey)
	}
	if t.ParentID != "" {
		row("parent_id", t.ParentID)
	}
	if t.LastError != "" {
		row("last_error", t.LastError)
	}
	if t.CompletedAt != nil {
		row("completed_at", stamp(t.CompletedAt, now))
	}
	if t.FailedAt != nil && t.Status == queue.StatusFailed {
		row("failed_at", stamp(t.FailedAt, now))
	}
	if len(t.Input) > 0 {
		row("input", clip(string(t.Input), 200))
	}
	if len(t.Output) > 0 {
		row("output", clip(string(t.Output), 200))
	}
	tw.Flush()
}

// printTable writes tasks one a line.
func printTable(w io.Writer, tasks []client.Task, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tTYPE\tQUEUE\tSTATUS\tATTEMPT\tCREATED\tDUE\tEXPIRES")
	for _, t := range tasks {
		due := "-" // when a pending task becomes available to a claim
		if t.Status == queue.StatusPending {
			due = "now"
			if t.AvailableAt.After(now) {
				due = relative(t.AvailableAt, now)
			}
		}
		exp := "-"
		switch {
		case t.Status == queue.StatusExpired && t.ExpiredAt != nil:
			exp = "expired " + relative(*t.ExpiredAt, now) + " (" + t.ExpiryReason + ")"
		case t.ExpiresAt != nil && !t.Status.Terminal():
			exp = relative(*t.ExpiresAt, now)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d/%d\t%s\t%s\t%s\n", t.ID, t.TaskType, t.Queue, t.Status, t.Attempt, t.MaxAttempts, relative(t.CreatedAt, now), due, exp)
	}
	tw.Flush()
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
