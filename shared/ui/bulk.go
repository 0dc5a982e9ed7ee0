package ui

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"

	"github.com/s3q/s3q/shared/queue"
)

// Bulk actions act on every task of a queue in a status (of a type), up
// to 100 a call, through the API's POST /queues/{queue}/bulk/{op}: the
// confirmation page makes a dry run to say how many, the action makes the
// call, and a "continue" link carries the cursor to the next hundred.

// bulkOps are the bulk operations and the statuses each may choose.
var bulkOps = map[string][]string{
	"retry":  {string(queue.StatusFailed), string(queue.StatusCancelled)},
	"cancel": {string(queue.StatusPending), string(queue.StatusRunning)},
	"expire": {string(queue.StatusPending)},
}

// bulkView is the confirmation page of a bulk action, and the page that
// says what it did.
type bulkView struct {
	Action              action
	Queue, Status, Type string
	Cursor              string
	// Limit is the most tasks the call may change: what the confirmation
	// page's dry run counted (its form carries it), so that tasks that
	// arrive after the page was shown are not changed by its click.
	Limit                int
	Result               bulkJSON // the dry run, or what the call did
	Done                 bool
	Back                 string
	ContinueURL, SelfURL string
}

// readBulk reads a bulk action from a form or a query.
func (c *Console) readBulk(r *http.Request, form url.Values) (bulkView, error) {
	v := bulkView{Queue: r.PathValue("queue"), Status: form.Get("status"), Type: form.Get("type"), Cursor: form.Get("cursor"), Back: c.back(form.Get("back"))}
	op := form.Get("op")
	statuses, ok := bulkOps[op]
	if !ok {
		return v, pageError(http.StatusBadRequest, "invalid_input", "op", "%q is not one of retry, cancel, expire", op)
	}
	if v.Status == "" {
		v.Status = statuses[0]
	}
	if !slices.Contains(statuses, v.Status) {
		return v, pageError(http.StatusBadRequest, "invalid_input", "status", "%s takes tasks in status %v, not %q", op, statuses, v.Status)
	}
	v.Action = actions[op]
	v.Limit = maxSelected
	if s := form.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxSelected {
			return v, pageError(http.StatusBadRequest, "invalid_input", "limit", "%q is not a number of tasks from 1 to %d", s, maxSelected)
		}
		v.Limit = n
	}
	if err := queue.ValidateQueueName(v.Queue); err != nil {
		return v, pageError(http.StatusBadRequest, "invalid_input", "queue", "%v", err)
	}
	return v, nil
}

// bulkConfirmPage is GET /queues/{queue}/bulk?op=&status=&type=&cursor=:
// a dry run of the action, and a form to do it.
func (c *Console) bulkConfirmPage(r *http.Request) (*view, error) {
	v, err := c.readBulk(r, r.URL.Query())
	if err != nil {
		return nil, err
	}
	if v.Result, err = c.bulk(r.Context(), v.Queue, v.Action.Name, v.Status, v.Type, v.Cursor, v.Limit, true); err != nil {
		if unsupported(err) {
			return nil, pageError(http.StatusNotImplemented, "not_supported", "", "this API has no bulk operations: select the tasks on a listing instead")
		}
		return nil, err
	}
	return &view{template: "bulk", title: "Confirm: " + v.Action.Verb + " every " + v.Status + " task of " + v.Queue,
		nav: navOf(&http.Request{URL: &url.URL{Path: v.Back}}, c.opts.Prefix), data: v}, nil
}

// bulkDo is POST /queues/{queue}/bulk: it checks the CSRF token and
// makes one bulk call.
func (c *Console) bulkDo(r *http.Request) (*view, error) {
	r.Body = http.MaxBytesReader(nil, r.Body, maxForm)
	if err := c.checkCSRF(r); err != nil {
		return nil, err
	}
	v, err := c.readBulk(r, r.PostForm)
	if err != nil {
		return nil, err
	}
	if v.Result, err = c.bulk(r.Context(), v.Queue, v.Action.Name, v.Status, v.Type, v.Cursor, v.Limit, false); err != nil {
		return nil, err
	}
	v.Done = true
	if v.Result.NextCursor != "" {
		q := url.Values{"op": {v.Action.Name}, "status": {v.Status}, "cursor": {v.Result.NextCursor}, "back": {v.Back}}
		if v.Type != "" {
			q.Set("type", v.Type)
		}
		v.ContinueURL = c.opts.Prefix + "/queues/" + url.PathEscape(v.Queue) + "/bulk?" + q.Encode()
	}
	return &view{template: "bulk", title: v.Action.Verb + ": " + strconv.Itoa(v.Result.Changed) + " changed",
		nav: navOf(&http.Request{URL: &url.URL{Path: v.Back}}, c.opts.Prefix), data: v}, nil
}

// bulkFor lists the bulk operations that take tasks in status: none for
// a listing of every status, or when the API is known to lack them.
func bulkFor(status string, supported bool) []string {
	var ops []string
	for _, op := range []string{"retry", "cancel", "expire"} {
		if supported && status != "" && slices.Contains(bulkOps[op], status) {
			ops = append(ops, op)
		}
	}
	return ops
}
