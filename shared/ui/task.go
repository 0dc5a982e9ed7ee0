package ui

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/s3q/s3q/shared/client"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/wire"
)

// historyShown is the most versions the task page reads: one page of
// GET /queues/{queue}/tasks/{id}/history.
const historyShown = 50

// taskView is the task page.
type taskView struct {
	Task     client.Task
	Input    *jsonBlock
	Output   *jsonBlock
	Deadline deadline
	Ended    string // why the task stopped, in words; "" while live
	Timeline []step
	// HistoryCursor is where the shown versions start, going back ("" for
	// the latest), HistoryNext where the earlier ones do ("" when none).
	HistoryCursor, HistoryNext string
	HistoryErr                 *pageErr
	Actions                    []string // the actions that apply to its status
	Back                       string
}

// deadline is what the page says about a task's deadline.
type deadline struct {
	At        *time.Time
	None      bool
	Passed    bool
	ExpiredAt *time.Time
	Reason    string
}

// taskPage is /queues/{queue}/tasks/{id}: GET of the task and one page
// of its history.
func (c *Console) taskPage(r *http.Request) (*view, error) {
	api := c.api.In(r.PathValue("queue"))
	id := r.PathValue("id")
	t, err := api.Get(r.Context(), id)
	if err != nil {
		return nil, err
	}
	t.ExpiresInSeconds = nil // the page counts down from expires_at
	now := c.opts.Now()
	v := taskView{Task: t, Input: prettyJSON(t.Input), Output: prettyJSON(t.Output), Back: r.URL.RequestURI()}
	v.Deadline = deadline{At: t.ExpiresAt, None: t.ExpiresAt == nil, ExpiredAt: t.ExpiredAt, Reason: expiryWords(t.ExpiryReason)}
	if t.ExpiresAt != nil && !now.Before(*t.ExpiresAt) {
		v.Deadline.Passed = true
	}
	v.Ended = endedWords(t.Task)
	v.Actions = actionsFor(t.Status)
	v.HistoryCursor = r.URL.Query().Get("history")
	h, err := api.History(r.Context(), id, client.HistoryRequest{Limit: historyShown, Cursor: v.HistoryCursor})
	if err != nil {
		v.HistoryErr = toPageErr(err)
	} else {
		// A page comes newest first and its cursor leads to older
		// versions: the timeline reads oldest first, and starts at the
		// task's first version when no older page follows.
		slices.Reverse(h.Versions)
		v.Timeline = timeline(h.Versions, h.NextCursor == "")
		v.HistoryNext = h.NextCursor
	}
	return &view{template: "task", title: "Task " + t.TaskType + " " + shortID(t.ID), nav: "queues", data: v, refresh: true}, nil
}

// actionsFor lists the actions the console offers on a task in status s.
func actionsFor(s queue.Status) []string {
	switch s {
	case queue.StatusPending:
		return []string{"cancel", "expire"}
	case queue.StatusRunning:
		return []string{"cancel"}
	case queue.StatusFailed, queue.StatusCancelled:
		return []string{"retry"}
	}
	return nil
}

func expiryWords(reason string) string {
	switch reason {
	case queue.ReasonTTL:
		return "its deadline passed before a worker started it"
	case queue.ReasonParentExpired:
		return "its parent task expired"
	case queue.ReasonManual:
		return "it was expired by hand"
	}
	return reason
}

// endedWords says why a finished task stopped.
func endedWords(t wire.Task) string {
	switch t.Status {
	case queue.StatusCompleted:
		return "Completed" + by(t.WorkerID) + "."
	case queue.StatusFailed:
		s := fmt.Sprintf("Dead-lettered after %d of %d attempts", t.Attempt, t.MaxAttempts)
		if t.LastError != "" {
			s += ": " + t.LastError
		}
		return s + "."
	case queue.StatusExpired:
		return "Expired: " + expiryWords(t.ExpiryReason) + "."
	case queue.StatusCancelled:
		if t.EndedBy == "cancel" {
			return "Cancelled: its worker" + by(t.WorkerID) + " acknowledged a cancel request."
		}
		return "Cancelled before it ran."
	case queue.StatusArchived:
		return "Archived."
	}
	return ""
}

func by(worker string) string {
	if worker == "" {
		return ""
	}
	return " by " + worker
}

// step is one version of a task in its timeline: when, who, what.
type step struct {
	At      time.Time
	Status  queue.Status
	Who     string
	What    string
	Changes []change
	Version string
}

// change is one field a version changed.
type change struct {
	Field, From, To string
}

// timeline turns the versions of a task, oldest first, into steps; first
// says whether they start at the task's first version.
func timeline(versions []client.Version, first bool) []step {
	out := make([]step, 0, len(versions))
	var prev *wire.Task
	for i := range versions {
		t := versions[i].Task.Task
		s := step{At: t.UpdatedAt, Status: t.Status, Version: versions[i].VersionID}
		if s.At.IsZero() {
			s.At = versions[i].ModifiedAt
		}
		s.What, s.Who = describeStep(prev, &t)
		if prev == nil && !first {
			s.What, s.Who = "Continued from earlier versions", ""
		}
		if prev != nil {
			s.Changes = diff(prev, &t)
		}
		out = append(out, s)
		prev = &t
	}
	return out
}

// describeStep says what moved a task from prev (nil: none) to t, and who
// did it as far as the record tells.
func describeStep(prev, t *wire.Task) (what, who string) {
	if prev == nil {
		what = "Submitted"
		if !t.AvailableAt.IsZero() && t.AvailableAt.After(t.CreatedAt) {
			what += ", to run at " + t.AvailableAt.UTC().Format("2006-01-02 15:04:05 MST")
		}
		return what, "client"
	}
	// A lease operation lands before the lease ends; a write after that
	// is the lease's rescue by the sweep or a claim.
	lapsed := prev.Status == queue.StatusRunning && prev.LeaseExpiresAt != nil && !t.UpdatedAt.Before(*prev.LeaseExpiresAt)
	switch from, to := prev.Status, t.Status; {
	case from == to && to != queue.StatusRunning:
		switch {
		case t.DeadLetterEventSentAt != nil && prev.DeadLetterEventSentAt == nil:
			return "Task Dead-Lettered event published", "sweep"
		case t.ExpiryEventSentAt != nil && prev.ExpiryEventSentAt == nil:
			return "Task Expired event published", "sweep"
		}
		return "Updated", ""
	case from == to && to == queue.StatusRunning:
		if t.CancelRequested && !prev.CancelRequested {
			return "Cancel requested", "operator"
		}
		return "Lease extended", worker(t.WorkerID)
	case from == queue.StatusPending && to == queue.StatusRunning:
		return fmt.Sprintf("Claimed (attempt %d of %d)", t.Attempt, t.MaxAttempts), worker(t.WorkerID)
	case from == queue.StatusRunning && to == queue.StatusCompleted:
		return "Completed", worker(prev.WorkerID)
	case from == queue.StatusRunning && to == queue.StatusPending:
		switch {
		case !lapsed && t.EndedBy == "fail":
			return "Failed, to be retried: " + t.LastError, worker(prev.WorkerID)
		case !lapsed && t.EndedBy == "reschedule":
			return "Rescheduled", worker(prev.WorkerID)
		}
		return "Lease lapsed; back to pending", "sweep or a claim"
	case to == queue.StatusFailed:
		if from == queue.StatusRunning && !lapsed && t.EndedBy == "fail" {
			return "Dead-lettered: " + t.LastError, worker(prev.WorkerID)
		}
		return "Dead-lettered: attempts spent", "sweep or a claim"
	case to == queue.StatusExpired:
		who := "sweep or a claim"
		if t.ExpiryReason == queue.ReasonManual {
			who = "operator"
		}
		return "Expired: " + expiryWords(t.ExpiryReason), who
	case to == queue.StatusCancelled:
		if from == queue.StatusRunning {
			return "Cancelled (acknowledged)", worker(prev.WorkerID)
		}
		return "Cancelled", "operator"
	case to == queue.StatusPending && (from == queue.StatusFailed || from == queue.StatusCancelled):
		return "Retried by hand", "operator"
	case to == queue.StatusArchived:
		return "Archived", "operator"
	}
	return fmt.Sprintf("%s → %s", prev.Status, t.Status), ""
}

func worker(id string) string {
	if id == "" {
		return "a worker"
	}
	return "worker " + id
}

// diff lists the fields a user cares about that changed from a to b.
func diff(a, b *wire.Task) []change {
	var out []change
	add := func(field, from, to string) {
		if from == "" {
			from = "—"
		}
		if to == "" {
			to = "—"
		}
		if from != to {
			out = append(out, change{field, from, to})
		}
	}
	add("status", string(a.Status), string(b.Status))
	add("attempt", fmt.Sprint(a.Attempt), fmt.Sprint(b.Attempt))
	add("available_at", tstr(&a.AvailableAt), tstr(&b.AvailableAt))
	add("expires_at", tstr(a.ExpiresAt), tstr(b.ExpiresAt))
	add("worker_id", a.WorkerID, b.WorkerID)
	add("lease_expires_at", tstr(a.LeaseExpiresAt), tstr(b.LeaseExpiresAt))
	add("last_error", a.LastError, b.LastError)
	add("cancel_requested", fmt.Sprint(a.CancelRequested), fmt.Sprint(b.CancelRequested))
	add("output", clipJSON(a.Output), clipJSON(b.Output))
	return out
}

func tstr(t *time.Time) string {
	if t == nil || t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05.000 MST")
}

// clipJSON is a JSON value cut to a line.
func clipJSON(raw json.RawMessage) string {
	s := strings.Join(strings.Fields(string(raw)), " ")
	if len(s) > 80 {
		s = s[:77] + "…"
	}
	if s == "" {
		return "—"
	}
	return s
}
