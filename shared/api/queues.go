package api

import (
	"encoding/json"
	"net/http"
	"strconv"
	"sync"

	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/wire"
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
	MaxSchedules   int             `json:"max_schedules"`
	MaxPerSecond   *float64        `json:"max_per_second"`
	Burst          *int            `json:"burst"`
	// Target is decoded on its own, so an unknown field in it is a 400
	// naming target.<field>.
	Target json.RawMessage `json:"target"`
}

// The queue answers' bodies are declared in package wire.
type (
	queueView   = wire.Queue
	queueReply  = wire.QueueReply
	queuesReply = wire.QueueList
)

// queueOf is the declaration d as the API shows it, without counts.
func queueOf(d queues.Declaration) queueView {
	return queueView{
		Name: d.Name, TTL: d.TTL, TTLFrom: d.TTLFrom, MaxAttempts: d.MaxAttempts, Timeout: d.Timeout,
		Shards: d.Shards, MaxConcurrency: d.MaxConcurrency, MaxSchedules: d.MaxSchedules, Priority: d.Priority,
		MaxPerSecond: d.MaxPerSecond, Burst: d.Burst, Target: d.Target, AutoDeclared: d.AutoDeclared,
		Paused: d.Paused, PausedAt: d.PausedAt, CreatedAt: d.CreatedAt, UpdatedAt: d.UpdatedAt,
	}
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
		Timeout: body.Timeout, Shards: body.Shards, MaxConcurrency: body.MaxConcurrency, Priority: body.Priority, MaxSchedules: body.MaxSchedules,
		MaxPerSecond: body.MaxPerSecond, Burst: body.Burst, Target: target,
	}, rq.now(a))
	if err != nil {
		return reply{}, err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	return reply{status: status, body: queueReply{Queue: queueOf(d)}}, nil
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
	return reply{status: http.StatusOK, body: queueReply{Queue: withCounts(queueOf(d), &c)}}, nil
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
		out.Queues[i] = queueOf(d)
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
				c, err := a.q.CountQueue(rq.ctx, res.Queues[i].Settings(), now)
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

// withCounts is v with counts c.
func withCounts(v queueView, c *queue.QueueCounts) queueView {
	v.Counts = c
	return v
}
