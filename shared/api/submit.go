package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/s3q/s3q/shared/queue"
)

// submitBody is the body of POST /tasks: a queue.SubmitRequest and an
// optional wait for the outcome.
type submitBody struct {
	queue.SubmitRequest
	// Wait, when set, waits up to this long for the task to finish:
	// a duration string or a number of seconds.
	Wait *queue.Duration `json:"wait,omitempty"`
}

// submitWait serves POST /queues/{queue}/tasks/wait: submit, waiting up
// to wait for the outcome. It is submit on the route of the waits
// function, whose concurrency is capped apart (a flood of held waits
// throttles only waits).
func (a *API) submitWait(rq *request) (reply, error) {
	rq.waits = true
	return a.submit(rq)
}

// waitElsewhere is the 400 of a wait sent to a route that does not hold
// its function: the route to send it to instead.
func waitElsewhere(rt *route) error {
	return badInput("wait", "%s does not wait (waits hold a function for up to their length, and run apart so that they cannot starve other calls): send it to %s/wait, or leave wait out",
		rt.key(), rt.key())
}

// submit serves POST /queues/{queue}/tasks: 201 with the new task, 200 with
// "deduplicated": true when a live task holds the dedup key, 200 with
// "replayed": true when the task with the request's id exists (409
// conflict, field id, when another request made it). A wait over 0 is
// a 400 naming wait here: it goes to POST /queues/{queue}/tasks/wait
// (submitWait), which answers 200 with the finished task, 202 when the
// wait ran out, 504 when the task's deadline passed first.
func (a *API) submit(rq *request) (reply, error) {
	var body submitBody
	if err := decodeObject(rq.body, &body, ""); err != nil {
		return reply{}, err
	}
	if err := refuseEmptyID(rq.body, ""); err != nil {
		return reply{}, err
	}
	wait, err := waitFor("wait", body.Wait, a.opts.MaxWait)
	if err != nil {
		return reply{}, err
	}
	if wait > 0 && !rq.waits {
		return reply{}, waitElsewhere(rq.route)
	}
	if err := traceFromHeaders(rq, &body.SubmitRequest); err != nil {
		return reply{}, err
	}
	if wait > 0 {
		hold, err := a.holdWait(rq, wait)
		if err != nil {
			return reply{}, err
		}
		defer hold.Release(context.WithoutCancel(rq.ctx))
	}
	res, err := rq.q.Submit(rq.ctx, body.SubmitRequest, rq.now(a))
	if err != nil {
		return reply{}, err
	}
	rq.log.addIDs(res.Task.ID)
	a.submitted(rq, created(res))
	if wait > 0 {
		return a.awaitOutcome(rq, res, wait)
	}
	status := http.StatusCreated
	if res.Deduplicated || res.Replayed {
		status = http.StatusOK
	}
	return reply{status: status, body: taskReply{Task: view(res.Task, rq.now(a)), Deduplicated: res.Deduplicated, Replayed: res.Replayed}}, nil
}

// batchBody is the body of POST /tasks/batch.
type batchBody struct {
	Tasks []json.RawMessage `json:"tasks"`
}

// submitBatch serves POST /queues/{queue}/tasks/batch: 200 with one result per task, in
// order, each the task (and whether it was deduplicated) or the error it
// got, as an error body would carry it. A body that is not a batch at all
// (not an object, no tasks, too many) is a 400 or 413 and submits nothing.
func (a *API) submitBatch(rq *request) (reply, error) {
	var body batchBody
	if err := decodeObject(rq.body, &body, ""); err != nil {
		return reply{}, err
	}
	if len(body.Tasks) == 0 {
		return reply{}, badInput("tasks", "is required: give at least one task")
	}
	if len(body.Tasks) > queue.MaxBatch {
		return reply{}, tooLarge("tasks", "has %d items, over the limit of %d", len(body.Tasks), queue.MaxBatch)
	}
	results := make([]batchItem, len(body.Tasks))
	var reqs []queue.SubmitRequest
	var at []int // index in results of each of reqs
	for i, raw := range body.Tasks {
		var req queue.SubmitRequest
		prefix := fmt.Sprintf("tasks[%d].", i)
		if err := decodeObject(raw, &req, prefix); err != nil {
			results[i].Error = toError(err)
			continue
		}
		if err := refuseEmptyID(raw, prefix); err != nil {
			results[i].Error = toError(err)
			continue
		}
		reqs = append(reqs, req)
		at = append(at, i)
	}
	for i := range reqs {
		if err := traceFromHeaders(rq, &reqs[i]); err != nil {
			return reply{}, err
		}
	}
	if len(reqs) > 0 {
		out, err := rq.q.SubmitBatch(rq.ctx, reqs, rq.now(a))
		if err != nil {
			return reply{}, err
		}
		var ok []queue.SubmitResult
		for _, r := range out {
			if r.Err == nil {
				ok = append(ok, r.Result)
			}
		}
		a.submitted(rq, created(ok...))
		now := rq.now(a)
		for j, r := range out {
			i := at[j]
			if r.Err != nil {
				results[i].Error = toError(r.Err)
				if results[i].Error.Field != "" {
					results[i].Error.Field = fmt.Sprintf("tasks[%d].%s", i, results[i].Error.Field)
				}
				continue
			}
			v := view(r.Result.Task, now)
			dedup, replayed := r.Result.Deduplicated, r.Result.Replayed
			results[i].Task, results[i].Deduplicated, results[i].Replayed = &v, &dedup, &replayed
			rq.log.addIDs(v.ID)
		}
	}
	return reply{status: http.StatusOK, body: batchReply{Results: results}}, nil
}

// refuseEmptyID refuses "id": "" in a submit body: an empty id is not
// "no id" (which makes the submit at-least-once), and taking it for one
// would silently drop the idempotency the caller asked for.
func refuseEmptyID(body []byte, prefix string) error {
	var v struct {
		ID *string `json:"id"`
	}
	if json.Unmarshal(body, &v) == nil && v.ID != nil && *v.ID == "" {
		return badInput(prefix+"id", "is empty: give the task's id (a lowercase UUIDv7), or leave id out and the server makes one")
	}
	return nil
}

// submitted passes the tasks a submit created to Options.OnSubmit.
func (a *API) submitted(rq *request, tasks []queue.Task) {
	if a.opts.OnSubmit != nil && len(tasks) > 0 {
		a.opts.OnSubmit(tasks, rq.now(a))
	}
}

// created returns the tasks a submit created, leaving out those a dedup
// key or a replayed id returned.
func created(results ...queue.SubmitResult) []queue.Task {
	var out []queue.Task
	for _, r := range results {
		if !r.Deduplicated && !r.Replayed {
			out = append(out, r.Task)
		}
	}
	return out
}
