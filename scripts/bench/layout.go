package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/s3q/s3q/shared/client"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/store"
	"github.com/s3q/s3q/shared/store/memstore"
	"github.com/s3q/s3q/shared/worker"
)

// benchLayout prints what the bucket layout costs and spreads (on the
// mem store: these are counts, not times):
//
//	bench keyspace shards=S tasks=N hottest_range_writes_per_task=W projected_tasks_per_s=P
//	bench claim empty shards=16 lists=L
//	bench idle worker shards=16 lists_per_30s=X claims=C
//	bench list queues=10 stored_per_queue=1000 status=completed queue=q3 limit=1 requests=R other_queue_requests=0
//
// keyspace runs N lifecycles (submit, claim, complete) in a queue
// declared with S shards, groups every write by its key range (the key up
// to and including its shard folder, the queue folder's subfolder for
// the rest, the whole prefix of a global index) and reports the writes
// per task in the busiest range; S3 takes at least 3,500 writes/s per
// partitioned range, so P = 3,500 / W.
func benchLayout(ctx context.Context) error {
	for _, shards := range []int{1, 16} {
		w, n, err := keyspace(ctx, shards, 4000)
		if err != nil {
			return err
		}
		fmt.Printf("bench keyspace shards=%-2d tasks=%d hottest_range_writes_per_task=%.3f projected_tasks_per_s=%.0f\n",
			shards, n, w, 3500/w)
	}
	lists, err := emptyClaim(ctx, 16)
	if err != nil {
		return err
	}
	fmt.Printf("bench claim empty shards=16 lists=%d\n", lists)
	perWindow, claims, err := idleWorker(ctx, 16)
	if err != nil {
		return err
	}
	fmt.Printf("bench idle worker shards=16 lists_per_30s=%.2f claims=%d\n", perWindow, claims)
	return listOneQueue(ctx)
}

// idleWorker runs a worker (package worker) with long-polling off, so that
// its claims back off from 1 s to 30 s as a long idle worker's do, against
// a queue of the given shards holding delayed tasks in every shard, through
// a counting store. The worker's backoff is scaled 1:1000 (1 ms to 30 ms)
// and the claims see a test clock that runs 1,000 times faster than the
// real one, so ten idle minutes take 0.6 s. It returns the LISTs per 30 s
// of test time over the ten minutes after the backoff reached 30 s (on a
// loaded machine a claim's own time may lengthen the period a little, and
// the figure fall just under one LIST a claim), and the claims made in
// them.
func idleWorker(ctx context.Context, shards int) (float64, int, error) {
	s := memstore.New()
	at := time.Date(2026, 1, 28, 9, 0, 0, 0, time.UTC)
	q, decls := queues.New(s, queues.Options{})
	if _, _, err := decls.Declare(ctx, queues.Declaration{Name: "bench", Shards: shards}, at); err != nil {
		return 0, 0, err
	}
	later := at.Add(24 * time.Hour)
	for i := 0; i < 200; i++ {
		if _, err := q.Submit(ctx, queue.SubmitRequest{Queue: "bench", TaskType: "t", ScheduleAt: &later}, at); err != nil {
			return 0, 0, err
		}
	}
	c := store.NewCounting(s)
	api := &idleAPI{q: queues.NewQueue(c, queues.Options{}), lists: c, start: time.Now(), at: at}
	const scale = 1000
	w := worker.New(api, worker.Options{
		Queue: "bench", Wait: -1, // no long-poll: the backoff of a worker idle past IdleAfter
		IdleBackoff: time.Second / scale, MaxIdleBackoff: 30 * time.Second / scale,
		Logger: slog.New(slog.DiscardHandler),
	})
	w.Handle("t", func(context.Context, *worker.Task) (json.RawMessage, error) { return nil, nil })
	ramp := at.Add(time.Minute) // 1+2+4+8+16 s, then every 30 s
	end := ramp.Add(10 * time.Minute)
	runCtx, stop := context.WithCancel(ctx)
	api.until, api.stop = end, stop
	if err := w.Run(runCtx); err != nil {
		return 0, 0, err
	}
	if api.err != nil {
		return 0, 0, api.err
	}
	lists, claims := int64(0), 0
	for _, cl := range api.claims {
		if cl.at.After(ramp) && !cl.at.After(end) {
			lists += cl.lists
			claims++
		}
	}
	return float64(lists) / float64(end.Sub(ramp)/(30*time.Second)), claims, nil
}

// idleAPI serves an idle worker's claims from a Queue at a test clock
// 1,000 times faster than the real one, and notes each claim's LISTs. It
// stops the worker once the clock passes until. An idle worker makes no
// other call (the embedded API is nil).
type idleAPI struct {
	worker.API
	q      *queue.Queue
	lists  *store.Counting
	start  time.Time // real
	at     time.Time // test clock at start
	until  time.Time
	stop   func()
	mu     sync.Mutex
	claims []idleClaim
	err    error
}

type idleClaim struct {
	at    time.Time
	lists int64
}

func (a *idleAPI) Claim(ctx context.Context, req client.ClaimRequest) ([]client.Claimed, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.at.Add(time.Since(a.start) * 1000)
	if now.After(a.until) {
		a.stop()
		return nil, nil
	}
	before := a.lists.Counts().List
	cs, err := a.q.Claim(ctx, queue.ClaimRequest{Queue: req.Queue, TaskTypes: req.TaskTypes, MaxTasks: req.MaxTasks}, now)
	if err == nil && len(cs) > 0 {
		err = fmt.Errorf("idle worker: claimed %d tasks", len(cs))
	}
	if err != nil {
		a.err = err
		a.stop()
		return nil, nil
	}
	a.claims = append(a.claims, idleClaim{at: now, lists: a.lists.Counts().List - before})
	return nil, nil
}

// writeRanges is a store that counts writes (PUTs and DELETEs) per key
// range (rangeOf).
type writeRanges struct {
	store.Store
	mu sync.Mutex
	n  map[string]int
}

func (w *writeRanges) add(key string) {
	w.mu.Lock()
	w.n[rangeOf(key)]++
	w.mu.Unlock()
}

func (w *writeRanges) PutIfAbsent(ctx context.Context, key string, body []byte, opts ...store.PutOption) (string, error) {
	w.add(key)
	return w.Store.PutIfAbsent(ctx, key, body, opts...)
}

func (w *writeRanges) PutIfMatch(ctx context.Context, key string, body []byte, etag string, opts ...store.PutOption) (string, error) {
	w.add(key)
	return w.Store.PutIfMatch(ctx, key, body, etag, opts...)
}

func (w *writeRanges) Put(ctx context.Context, key string, body []byte, opts ...store.PutOption) (string, error) {
	w.add(key)
	return w.Store.Put(ctx, key, body, opts...)
}

func (w *writeRanges) Delete(ctx context.Context, key string) error {
	w.add(key)
	return w.Store.Delete(ctx, key)
}

// rangeOf is the key range a write lands in: under a queue's folder, the
// key up to and including its shard folder (tasks/{r}/,
// index/ready/{s}/, index/deadline/{s}/), else its subfolder (dedup/,
// status/, ...) or the declaration; a global index (sweep/, due/,
// targets/) as a whole.
func rangeOf(key string) string {
	parts := strings.Split(key, "/")
	if parts[0] != "q" || len(parts) < 3 {
		return parts[0] + "/"
	}
	switch parts[2] {
	case "tasks":
		if len(parts) >= 5 {
			return strings.Join(parts[:4], "/") + "/"
		}
	case "index":
		if len(parts) >= 6 {
			return strings.Join(parts[:5], "/") + "/"
		}
	}
	return strings.Join(parts[:3], "/")
}

// keyspace runs n lifecycles in a queue of the given shards and returns
// the writes per task in the busiest key range.
func keyspace(ctx context.Context, shards, n int) (float64, int, error) {
	w := &writeRanges{Store: memstore.New(), n: map[string]int{}}
	q, decls := queues.New(w, queues.Options{Core: queue.Options{ListCacheFor: -1}})
	now := time.Date(2026, 1, 28, 9, 0, 0, 0, time.UTC)
	if _, _, err := decls.Declare(ctx, queues.Declaration{Name: "bench", Shards: shards}, now); err != nil {
		return 0, 0, err
	}
	for k := range w.n {
		delete(w.n, k) // the declaration is not a task's write
	}
	for i := 0; i < n; i++ {
		if _, err := q.Submit(ctx, queue.SubmitRequest{Queue: "bench", TaskType: "t"}, now); err != nil {
			return 0, 0, err
		}
	}
	for done := 0; done < n; {
		cs, err := q.Claim(ctx, queue.ClaimRequest{Queue: "bench", MaxTasks: 100}, now.Add(time.Second))
		if err != nil {
			return 0, 0, err
		}
		if len(cs) == 0 {
			return 0, 0, fmt.Errorf("keyspace: %d of %d tasks claimed", done, n)
		}
		for _, c := range cs {
			if _, err := q.Complete(ctx, queue.CompleteRequest{ID: c.Task.Ref(), LeaseToken: c.Lease.Token}, now.Add(2*time.Second)); err != nil {
				return 0, 0, err
			}
		}
		done += len(cs)
	}
	hottest := 0
	for _, c := range w.n {
		hottest = max(hottest, c)
	}
	return float64(hottest) / float64(n), n, nil
}

// emptyClaim returns the LISTs of a claim that finds nothing due in a
// queue of the given shards holding delayed tasks in every shard.
func emptyClaim(ctx context.Context, shards int) (int64, error) {
	s := memstore.New()
	q, decls := queues.New(s, queues.Options{})
	now := time.Date(2026, 1, 28, 9, 0, 0, 0, time.UTC)
	if _, _, err := decls.Declare(ctx, queues.Declaration{Name: "bench", Shards: shards}, now); err != nil {
		return 0, err
	}
	later := now.Add(time.Hour)
	for i := 0; i < 200; i++ {
		if _, err := q.Submit(ctx, queue.SubmitRequest{Queue: "bench", TaskType: "t", ScheduleAt: &later}, now); err != nil {
			return 0, err
		}
	}
	c := store.NewCounting(s)
	cs, err := queues.NewQueue(c, queues.Options{}).Claim(ctx, queue.ClaimRequest{Queue: "bench"}, now.Add(time.Minute))
	if err != nil || len(cs) != 0 {
		return 0, fmt.Errorf("empty claim: %d tasks, %v", len(cs), err)
	}
	return c.Counts().List, nil
}

// keyCounter counts requests whose key or prefix is outside one folder.
type keyCounter struct {
	store.Store
	folder       string
	mu           sync.Mutex
	total, other int
}

func (k *keyCounter) note(key string) {
	k.mu.Lock()
	k.total++
	if !strings.HasPrefix(key, k.folder) {
		k.other++
	}
	k.mu.Unlock()
}

func (k *keyCounter) Get(ctx context.Context, key string) (store.Object, error) {
	k.note(key)
	return k.Store.Get(ctx, key)
}

func (k *keyCounter) Head(ctx context.Context, key string) (store.Info, error) {
	k.note(key)
	return k.Store.Head(ctx, key)
}

func (k *keyCounter) List(ctx context.Context, prefix, startAfter string, limit int) (store.Page, error) {
	k.note(prefix)
	return k.Store.List(ctx, prefix, startAfter, limit)
}

// listOneQueue stores 1,000 tasks in each of 10 queues (the completed one
// of each submitted first) and lists the completed tasks of q3, one.
func listOneQueue(ctx context.Context) error {
	s := memstore.New()
	q := queues.NewQueue(s, queues.Options{})
	now := time.Date(2026, 1, 28, 9, 0, 0, 0, time.UTC)
	for i := 0; i < 10; i++ {
		name := fmt.Sprintf("q%d", i)
		for j := 0; j < 1000; j++ {
			if _, err := q.Submit(ctx, queue.SubmitRequest{Queue: name, TaskType: "t"}, now); err != nil {
				return err
			}
		}
		cs, err := q.Claim(ctx, queue.ClaimRequest{Queue: name}, now)
		if err != nil || len(cs) != 1 {
			return fmt.Errorf("list: claim in %s: %d, %v", name, len(cs), err)
		}
		if _, err := q.Complete(ctx, queue.CompleteRequest{ID: cs[0].Task.Ref(), LeaseToken: cs[0].Lease.Token}, now); err != nil {
			return err
		}
	}
	k := &keyCounter{Store: s, folder: queue.QueuePrefix("q3")}
	res, err := queues.NewQueue(k, queues.Options{}).In("q3").List(ctx, queue.ListRequest{Status: queue.StatusCompleted, Limit: 1})
	if err != nil {
		return err
	}
	fmt.Printf("bench list queues=10 stored_per_queue=1000 status=completed queue=q3 limit=1 tasks=%d requests=%d other_queue_requests=%d\n",
		len(res.Tasks), k.total, k.other)
	return nil
}
