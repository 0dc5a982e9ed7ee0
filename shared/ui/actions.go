package ui

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/s3q/s3q/shared/client"
	"github.com/s3q/s3q/shared/queue"
)

// deadView is the dead letters page: failed, expired or cancelled tasks,
// across queues or of one.
type deadView struct {
	Status     string
	Queue      string
	Statuses   []string
	Tasks      []taskRow
	Cursor     string
	NextCursor string
	Back       string
	Err        *pageErr
	// Bulk lists the bulk operations that apply, for one queue of an API
	// that has them.
	Bulk []string
}

// deadStatuses are the statuses the dead letters page lists: each has a
// status index, so a page costs one LIST and a GET per task shown.
var deadStatuses = []string{string(queue.StatusFailed), string(queue.StatusExpired), string(queue.StatusCancelled)}

// deadPage is /dead: one page of GET /tasks?status= (or of one queue's).
func (c *Console) deadPage(r *http.Request) (*view, error) {
	q := r.URL.Query()
	v := deadView{Status: q.Get("status"), Queue: q.Get("queue"), Statuses: deadStatuses, Cursor: q.Get("cursor"), Back: r.URL.RequestURI()}
	if v.Status == "" {
		v.Status = string(queue.StatusFailed)
	}
	if !slices.Contains(deadStatuses, v.Status) {
		return nil, pageError(http.StatusBadRequest, "invalid_input", "status", "%q is not one of %s", v.Status, strings.Join(deadStatuses, ", "))
	}
	res, err := c.api.List(r.Context(), client.ListRequest{Queue: v.Queue, Status: queue.Status(v.Status), Limit: c.opts.PageSize, Cursor: v.Cursor})
	if err != nil {
		pe := toPageErr(err)
		if pe.Status != http.StatusBadRequest {
			return nil, err
		}
		v.Err = pe
	}
	for _, t := range res.Tasks {
		t.ExpiresInSeconds = nil // the page counts down from expires_at; this would change every second
		v.Tasks = append(v.Tasks, taskRow{Task: t})
	}
	v.NextCursor = res.NextCursor
	if v.Err == nil && v.Queue != "" {
		// An API without them says so on the confirmation page.
		v.Bulk = bulkFor(v.Status, true)
	}
	status := http.StatusOK
	if v.Err != nil {
		status = v.Err.Status
	}
	return &view{template: "dead", title: "Dead letters", nav: "dead", data: v, refresh: v.Err == nil, status: status}, nil
}

// An action is what the console can do to tasks or schedules, each
// behind a confirmation page.
type action struct {
	Name     string // retry, cancel, expire, trigger, delete
	Schedule bool   // acts on schedules, not tasks
	Verb     string // "Retry"
	Says     string // what will happen, in words
}

var actions = map[string]action{
	"retry": {Name: "retry", Verb: "Retry", Says: "Each failed or cancelled task becomes pending again, runnable now, with a fresh set of attempts " +
		"(its last error is kept for the record). Expired tasks, tasks past their deadline, and tasks in any other status are refused and listed below as errors."},
	"cancel": {Name: "cancel", Verb: "Cancel", Says: "Each pending task is cancelled at once and will never run. Each running task is asked to stop: " +
		"its worker sees cancel_requested at its next heartbeat and acknowledges. Finished tasks are refused."},
	"expire": {Name: "expire", Verb: "Expire", Says: "Each pending task is marked expired (reason: manual) and will never run; " +
		"a Task Expired event is published for it. Tasks in any other status are refused."},
	"trigger": {Name: "trigger", Schedule: true, Verb: "Trigger", Says: "Each schedule fires once now: it submits one task from its template, " +
		"besides its regular fires."},
	"delete": {Name: "delete", Schedule: true, Verb: "Delete", Says: "Each schedule is deleted and will never fire again. The tasks it already fired stay. This cannot be undone."},
}

// maxForm bounds the body of a POST.
const maxForm = 64 << 10

// maxSelected bounds the tasks one action acts on: one API call each.
const maxSelected = 100

// ref is a task or schedule named by queue and id.
type ref struct{ Queue, ID string }

func (r ref) String() string { return r.Queue + "/" + r.ID }

// parseRefs reads the refs ("queue/id") of a form.
func parseRefs(values []string) ([]ref, error) {
	var out []ref
	for _, s := range values {
		q, id, ok := strings.Cut(s, "/")
		if !ok || q == "" || id == "" || strings.Contains(id, "/") {
			return nil, pageError(http.StatusBadRequest, "invalid_input", "ref", "%q is not queue/id", s)
		}
		if err := queue.ValidateQueueName(q); err != nil {
			return nil, pageError(http.StatusBadRequest, "invalid_input", "ref", "%q: %v", s, err)
		}
		out = append(out, ref{q, id})
	}
	return out, nil
}

// confirmView is the confirmation page of an action.
type confirmView struct {
	Action action
	Refs   []ref
	Back   string
}

// readAction reads the action, its refs and the page to go back to from
// a form or a query.
func (c *Console) readAction(form url.Values) (action, []ref, string, error) {
	a, ok := actions[form.Get("action")]
	if !ok {
		return action{}, nil, "", pageError(http.StatusBadRequest, "invalid_input", "action", "%q is not one of retry, cancel, expire, trigger, delete", form.Get("action"))
	}
	refs, err := parseRefs(form["ref"])
	if err != nil {
		return action{}, nil, "", err
	}
	if len(refs) == 0 {
		return action{}, nil, "", pageError(http.StatusBadRequest, "invalid_input", "ref", "select at least one %s", map[bool]string{false: "task", true: "schedule"}[a.Schedule])
	}
	if len(refs) > maxSelected {
		return action{}, nil, "", pageError(http.StatusBadRequest, "invalid_input", "ref", "select at most %d at once (%d selected)", maxSelected, len(refs))
	}
	return a, refs, c.back(form.Get("back")), nil
}

// back returns a local page of the console to go back to: s when it is
// one, else the queues page. A control character is refused anywhere:
// browsers drop tabs and newlines inside a URL, so "/\t/evil.example"
// would lead to another site under a console served at "/".
func (c *Console) back(s string) string {
	p := c.opts.Prefix + "/"
	if strings.HasPrefix(s, p) && !strings.HasPrefix(s, "//") && !strings.ContainsFunc(s, func(r rune) bool { return r == '\\' || r < 0x20 || r == 0x7f }) {
		return s
	}
	return p
}

// confirmPage is /confirm?action=&ref=&back=: it says what the action
// will do to what, and asks. It calls no API.
func (c *Console) confirmPage(r *http.Request) (*view, error) {
	a, refs, back, err := c.readAction(r.URL.Query())
	if err != nil {
		return nil, err
	}
	return &view{template: "confirm", title: "Confirm: " + a.Verb, nav: navOf(&http.Request{URL: &url.URL{Path: back}}, c.opts.Prefix),
		data: confirmView{Action: a, Refs: refs, Back: back}}, nil
}

// result is the outcome of an action on one ref.
type result struct {
	Ref    ref
	Status string // the task's or schedule's status after, when it worked
	Err    *pageErr
}

// doneView is the page an action answers with.
type doneView struct {
	Action  action
	Results []result
	OK      int
	Back    string
}

// doAction is POST /do: it checks the CSRF token, acts on each ref, and
// shows what happened to each.
func (c *Console) doAction(r *http.Request) (*view, error) {
	r.Body = http.MaxBytesReader(nil, r.Body, maxForm)
	if err := c.checkCSRF(r); err != nil {
		return nil, err
	}
	a, refs, back, err := c.readAction(r.PostForm)
	if err != nil {
		return nil, err
	}
	v := doneView{Action: a, Back: back}
	for _, rf := range refs {
		res := result{Ref: rf}
		status, err := c.act(r.Context(), a, rf)
		if err != nil {
			res.Err = toPageErr(err)
		} else {
			res.Status = status
			v.OK++
		}
		v.Results = append(v.Results, res)
	}
	return &view{template: "done", title: fmt.Sprintf("%s: %d of %d done", a.Verb, v.OK, len(refs)),
		nav: navOf(&http.Request{URL: &url.URL{Path: back}}, c.opts.Prefix), data: v}, nil
}

// act runs one action on one ref and returns the status after it.
func (c *Console) act(ctx context.Context, a action, rf ref) (string, error) {
	api := c.api.In(rf.Queue)
	switch a.Name {
	case "retry":
		t, err := api.Retry(ctx, rf.ID)
		return string(t.Status), err
	case "cancel":
		t, err := api.Cancel(ctx, rf.ID)
		if err == nil && t.Status == queue.StatusRunning {
			return "running, cancel requested", nil
		}
		return string(t.Status), err
	case "expire":
		t, err := api.Expire(ctx, rf.ID)
		return string(t.Status), err
	case "trigger":
		f, err := api.TriggerSchedule(ctx, rf.ID)
		if err != nil {
			return "", err
		}
		if f.TaskID == "" {
			return "fired, no task: " + f.Skipped, nil
		}
		return "fired task " + f.TaskID, nil
	case "delete":
		return "deleted", api.DeleteSchedule(ctx, rf.ID)
	}
	return "", fmt.Errorf("ui: no action %q", a.Name)
}
