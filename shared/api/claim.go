package api

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/wire"
)

// Long-poll of a claim: after an empty claim it claims again after
// claimPollMin, doubling up to claimPollMax, so an idle 20s long-poll
// makes about 7 claims (each one LIST of the queue's index/ folder, which
// reads both claim indexes, one LIST page serving claims within the
// queue's ListCacheFor); and at once when a submit through the same process (the
// dev server, one Lambda container) writes a task of the queue
// (queue.Queue.Arrivals).
const (
	claimPollMin = 500 * time.Millisecond
	claimPollMax = 5 * time.Second
)

// claimBody is the body of POST /claim.
type claimBody struct {
	Queue     string          `json:"queue"`
	TaskTypes []string        `json:"task_types"`
	LeaseFor  *queue.Duration `json:"lease_for"`
	WorkerID  string          `json:"worker_id"`
	MaxTasks  int             `json:"max_tasks"`
	Wait      *queue.Duration `json:"wait"`
}

// claimWait serves POST /queues/{queue}/claim/wait: a claim that
// long-polls up to wait, on the route of the waits function, whose
// concurrency is capped apart.
func (a *API) claimWait(rq *request) (reply, error) {
	rq.waits = true
	return a.claim(rq)
}

// claim serves POST /queues/{queue}/claim: 200 with up to max_tasks claimed tasks and
// their leases, or 204 (no body) when nothing is available. A claim that
// the queue's rate limit holds back is a 204 with Retry-After (whole
// seconds) and S3q-Retry-After-Ms; a long-poll waits it out within its
// wait instead. A wait over
// 0 is a 400 naming wait here: the long-poll goes to
// POST /queues/{queue}/claim/wait (claimWait).
func (a *API) claim(rq *request) (reply, error) {
	var body claimBody
	if err := decodeObject(rq.body, &body, ""); err != nil {
		return reply{}, err
	}
	wait, err := waitFor("wait", body.Wait, a.opts.MaxWait)
	if err != nil {
		return reply{}, err
	}
	if wait > 0 && !rq.waits {
		return reply{}, waitElsewhere(rq.route)
	}
	req := queue.ClaimRequest{Queue: body.Queue, TaskTypes: body.TaskTypes, WorkerID: body.WorkerID, MaxTasks: body.MaxTasks}
	if body.LeaseFor != nil {
		req.LeaseFor = body.LeaseFor.Std()
	}
	end := time.Now().Add(wait)
	if dl, ok := rq.ctx.Deadline(); ok && dl.Add(-ctxMargin).Before(end) {
		end = dl.Add(-ctxMargin)
	}
	poll := claimPollMin
	now := rq.now(a) // the first claim at the request's time, each later one at the clock's
	held := false    // the wait holds one of the queue's waits (after a first empty claim)
	for {
		// Taken before the claim, so a submit through this process while
		// the claim runs is not missed.
		arrived := rq.q.Arrivals(req.Queue)
		claimed, err := rq.q.Claim(rq.ctx, req, now)
		if len(claimed) > 0 {
			// A claim that fails after leasing some tasks hands them over;
			// the error will come back on the next claim.
			return a.claimReply(rq, claimed, now), nil
		}
		var limited *queue.RateLimitedError
		if errors.As(err, &limited) {
			err = nil
		}
		if err != nil {
			return reply{}, err
		}
		left := time.Until(end)
		if limited != nil && limited.RetryAfter >= left {
			return heldBack(limited.RetryAfter), nil
		}
		if left <= 0 {
			return reply{status: http.StatusNoContent}, nil
		}
		if !held {
			hold, err := a.holdWait(rq, left)
			if err != nil {
				return reply{}, err
			}
			defer hold.Release(context.WithoutCancel(rq.ctx))
			held = true
		}
		next := min(poll, left)
		if limited != nil {
			next = limited.RetryAfter // the rate limit lets a task start then
		}
		timer := time.NewTimer(next)
		select {
		case <-rq.ctx.Done():
			timer.Stop()
			return reply{status: http.StatusNoContent}, nil
		case <-timer.C:
		case <-arrived:
			timer.Stop()
		}
		if limited == nil {
			poll = min(2*poll, claimPollMax)
		}
		now = a.now()
	}
}

// heldBack is the 204 of a claim held back by its queue's rate limit for
// wait: Retry-After in whole seconds, rounded up, and
// S3q-Retry-After-Ms in milliseconds, rounded up.
func heldBack(wait time.Duration) reply {
	ms := (wait + time.Millisecond - 1) / time.Millisecond
	secs := (wait + time.Second - 1) / time.Second
	return reply{status: http.StatusNoContent, header: http.Header{
		"Retry-After":           {strconv.FormatInt(int64(secs), 10)},
		wire.HeaderRetryAfterMs: {strconv.FormatInt(int64(ms), 10)},
	}}
}

// claimReply is the 200 of a claim made at now.
func (a *API) claimReply(rq *request, claimed []queue.Claimed, now time.Time) reply {
	out := claimReply{Tasks: make([]claimedView, len(claimed))}
	for i, c := range claimed {
		out.Tasks[i] = claimedView{Task: view(c.Task, now), Lease: c.Lease}
		rq.log.addIDs(c.Task.ID)
	}
	return reply{status: http.StatusOK, body: out}
}
