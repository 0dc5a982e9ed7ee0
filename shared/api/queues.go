package api

import (
	"encoding/json"
	"net/http"
	"strconv"
	"sync"

	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
)

// The queue routes: PUT|GET|DELETE /queues/{queue} and
// GET /queues.

// queueBody is the body of PUT /queues/{queue}: the settable fields of a
// queues.Declaration (its name is the path's).
type queueBody struct {
	TTL            *queue.Duration `json:"ttl"`
	TTLFrom        queue.TTLFrom   `json:"ttl_from"`
	MaxAttempts    int             `json:"max_attempts"`
	Timeout        *queue.Duration `json:"timeout"`
	Shards         int             `json:"shards"`
	MaxConcurrency int             `json:"max_concurrency"`
	Priority       int             `json:"priority"`
	// Target is decoded on its own, so an unknown field in it is a 400
	// naming target.<field>.
	Target json.RawMessage `json:"target"`
}

// queueView is a declaration with its counts, when asked for.
type queueView struct {
	queues.Declaration
	Counts *queue.QueueCounts `json:"counts,omitempty"`
}

type queueReply struct {
	Queue queueView `json:"queue"`
}

type queuesReply struct {
	Queues     []queueView `json:"queues"`
	NextCursor string      `json:"next_cursor,omitempty"`
}

// queueDeclare serves PUT /queues/{queue}: 201 with a new queue, 200 with
// the replaced settings of an existing one (shards cannot change).
func (a *API) queueDeclare(rq *request) (reply, error) {
	var body queueBody
	if err := decodeObject(rq.body, &body, ""); err != nil {
		return reply{}, err
	}
	var target *queues.Target
	if len(body.Target) > 0 && string(body.Target) != "null" {
		target = &queues.Target{}
		if err := decodeObject(body.Target, target, "target."); err != nil {
			return reply{}, err
		}
	}
	d, created, err := a.decls.Declare(rq.ctx, queues.Declaration{
		Name: rq.queue, TTL: body.TTL, TTLFrom: body.TTLFrom, MaxAttempts: body.MaxAttempts,
		Timeout: body.Timeout, Shards: body.Shards, MaxConcurrency: body.MaxConcurrency, Priority: body.Priority, Target: target,
	}, rq.now(a))
	if err != nil {
		return reply{}, err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	return reply{status: status, body: queueReply{Queue: queueView{Declaration: d}}}, nil
}

// queueGet serves GET /queues/{queue}: the declaration with its counts.
func (a *API) queueGet(rq *request) (reply, error) {
	d, err := a.decls.Get(rq.ctx, rq.queue, rq.now(a))
	if err != nil {
		return reply{}, err
	}
	c, err := a.q.CountQueue(rq.ctx, d.Settings(), rq.now(a))
	if err != nil {
		return reply{}, err
	}
	return reply{status: http.StatusOK, body: queueReply{Queue: queueView{Declaration: d, Counts: &c}}}, nil
}

// queueDelete serves DELETE /queues/{queue}: 204, or 409 queue_not_empty
// while it holds live tasks.
func (a *API) queueDelete(rq *request) (reply, error) {
	if err := decodeObject(rq.body, &struct{}{}, ""); err != nil {
		return reply{}, err
	}
	if err := a.decls.Delete(rq.ctx, rq.queue, rq.now(a)); err != nil {
		return reply{}, err
	}
	return reply{status: http.StatusNoContent}, nil
}

// maxCountedQueues bounds a page of GET /queues with counts: each count is
// a few LISTs (queue.Queue.CountQueue), so a page of 100 is a few hundred.
const maxCountedQueues = 100

// queueList serves GET /queues?limit=&cursor=&counts=: declared queues by
// name, each with its counts unless counts=false (they cost LISTs: see
// queue.Queue.CountQueue; at most maxCountedQueues a page with counts).
func (a *API) queueList(rq *request) (reply, error) {
	req := queues.ListRequest{Cursor: rq.query["cursor"]}
	var err error
	if req.Limit, err = queryLimit(rq); err != nil {
		return reply{}, err
	}
	counts := true
	if s, ok := rq.query["counts"]; ok {
		if counts, err = strconv.ParseBool(s); err != nil {
			return reply{}, badInput("counts", "%q is not true or false", clip(s))
		}
	}
	if counts && req.Limit > maxCountedQueues {
		return reply{}, badInput("limit", "is at most %d with counts (each costs LISTs); add counts=false for up to 1000", maxCountedQueues)
	}
	res, err := a.decls.List(rq.ctx, req)
	if err != nil {
		return reply{}, err
	}
	out := queuesReply{Queues: make([]queueView, len(res.Queues)), NextCursor: res.NextCursor}
	for i, d := range res.Queues {
		out.Queues[i].Declaration = d
	}
	if counts {
		// A few at a time: each count is a LIST or more.
		var (
			wg       sync.WaitGroup
			mu       sync.Mutex
			firstErr error
		)
		sem := make(chan struct{}, 8)
		now := rq.now(a)
		for i := range out.Queues {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				c, err := a.q.CountQueue(rq.ctx, out.Queues[i].Declaration.Settings(), now)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					firstErr = err
					return
				}
				out.Queues[i].Counts = &c
			}()
		}
		wg.Wait()
		if firstErr != nil {
			return reply{}, firstErr
		}
	}
	return reply{status: http.StatusOK, body: out}, nil
}
