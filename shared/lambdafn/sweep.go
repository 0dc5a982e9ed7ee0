package lambdafn

import (
	"context"
	"encoding/json"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/s3q/s3q/shared/events"
	"github.com/s3q/s3q/shared/metrics/catalog"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/reqcount"
)

// Sweep is the work of sweep-expired at now: one queue.Queue.Sweep over
// d.Queue (required), its events delivered by d.Publisher (the log when
// nil), then, when d.Metrics is set, its metrics: the sweep's line
// (SweepIncomplete, duration, requests, tasks_expired,
// tasks_near_expiration, ...), tasks_expired_total by task type, and
// tasks_dead_lettered_total by task type (from the Task Dead-Lettered
// events it delivered). A metric that cannot be written is logged and
// does not fail the sweep. The sweep stops 3s before ctx's deadline and
// the next one carries on; such a sweep also logs a warning with
// "incomplete": true. The report's requests are every one the sweep made,
// the registry's reads of declarations too, when d.Queue's store is
// reqcount-wrapped (as Build makes it).
func (d Deps) Sweep(ctx context.Context, now time.Time) (queue.SweepReport, error) {
	logger := d.Logger
	if logger == nil {
		logger = slog.Default()
	}
	pub := d.Publisher
	if pub == nil {
		pub = events.Log{Logger: logger}
	}
	dl := &deadLetters{pub: pub, byType: map[string]int{}}
	run := reqcount.From(ctx)
	if run == nil {
		ctx, run = reqcount.Start(ctx)
	}
	before := run.Counts()
	rep, err := d.Queue.Sweep(ctx, now, queue.SweepOptions{Publisher: dl})
	if reqcount.Wrapped(d.Queue.Store()) {
		// Every request of the sweep: the report's, and the reads of
		// queues' declarations, which the registry makes (the report
		// leaves them out).
		rep.Requests = run.Counts().Sub(before)
	}
	if rep.Incomplete {
		logger.WarnContext(ctx, "sweep incomplete: work left for the next sweep", "incomplete", true,
			"queues_due", rep.QueuesDue, "queues", rep.Queues, "events_sent", rep.EventsSent, "errors", rep.Errors)
	}
	if d.Metrics != nil {
		if merr := d.Metrics.Sweep(rep, now); merr != nil {
			logger.WarnContext(ctx, "write sweep metrics", "error", merr)
		}
		for _, tt := range dl.types() {
			if merr := d.Metrics.TasksDeadLettered(tt, dl.byType[tt], now); merr != nil {
				logger.WarnContext(ctx, "write dead-letter metrics", "error", merr)
			}
		}
		if now.Minute()%catalog.QueueStatsEveryMinutes == 0 {
			d.queueStats(ctx, now, logger)
		}
	}
	return rep, err
}

// maxStatsQueues is the most queues whose gauges one sweep writes: one
// page of declared queues, by name.
const maxStatsQueues = 100

// queueStats writes the gauges of each declared queue (the first
// maxStatsQueues by name) from Queue.Stats: queue_depth, its live tasks
// (pending, delayed or running, from the index markers), and
// oldest_pending_age_seconds, how long its oldest due pending task has
// waited (0 when none is due). The listing's requests (a LIST of the
// queues and a GET of each declaration) and Stats' (a LIST per index
// prefix per 1,000 tasks and a GET of at most 10 records) every
// catalog.QueueStatsEveryMinutes minutes. A queue that cannot be read is
// logged and left out.
func (d Deps) queueStats(ctx context.Context, now time.Time, logger *slog.Logger) {
	if d.Queues == nil {
		return
	}
	res, err := d.Queues.List(ctx, queues.ListRequest{Limit: maxStatsQueues})
	if err != nil {
		logger.WarnContext(ctx, "queue stats: list queues", "error", err)
		return
	}
	for _, decl := range res.Queues {
		st, err := d.Queue.Stats(ctx, decl.Settings(), now)
		if err != nil {
			logger.WarnContext(ctx, "queue stats", "queue", decl.Name, "error", err)
			continue
		}
		var age time.Duration
		if st.OldestPendingAgeSeconds != nil {
			age = time.Duration(*st.OldestPendingAgeSeconds) * time.Second
		}
		if merr := d.Metrics.QueueStats(decl.Name, st.Counts.Live, age, now); merr != nil {
			logger.WarnContext(ctx, "write queue metrics", "error", merr)
		}
	}
}

// deadLetters is a publisher that counts, by task type, the Task
// Dead-Lettered events its publisher delivered.
type deadLetters struct {
	pub    queue.EventPublisher
	mu     sync.Mutex
	byType map[string]int
}

func (p *deadLetters) Publish(ctx context.Context, evs []queue.Event) ([]error, error) {
	errs, err := p.pub.Publish(ctx, evs)
	if err != nil {
		return errs, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, ev := range evs {
		if ev.DetailType != queue.DetailTypeTaskDeadLettered || (errs != nil && (i >= len(errs) || errs[i] != nil)) {
			continue
		}
		var detail queue.DeadLetteredDetail
		if json.Unmarshal(ev.Detail, &detail) == nil && detail.TaskType != "" {
			p.byType[detail.TaskType]++
		}
	}
	return errs, nil
}

func (p *deadLetters) types() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]string, 0, len(p.byType))
	for tt := range p.byType {
		out = append(out, tt)
	}
	sort.Strings(out)
	return out
}
