package lambdafn

import (
	"context"
	"io"

	"github.com/s3q/s3q/shared/config"
	"github.com/s3q/s3q/shared/metrics"
	"github.com/s3q/s3q/shared/schedule"
	"github.com/s3q/s3q/shared/store/s3store"
)

// DepsFromConfig builds the Deps of a function from its configuration:
// the store and queue it describes (with the task-type defaults of
// config/task_types.json and S3Q_DEFAULT_TTL), a JSON logger and the EMF
// metrics both writing to w (os.Stdout in Lambda, where CloudWatch Logs
// picks them up), the artifact service (presigned URLs signed by the
// process's credentials), the longest wait (S3Q_MAX_WAIT), and the event
// publisher (the EventBridge bus
// S3Q_EVENT_BUS, else the log) and the scheduler of the cron schedules.
// The queue, the scheduler and the task-type defaults all work through one
// reqcount-wrapped store (Queue.Store()), so every request of an HTTP
// request or a timer run is in its log line's s3_requests. It makes no
// request. Sweep and Tick are left for the caller to wire:
// NewSweep(deps) is the sweep, NewTick(deps) the tick.
func DepsFromConfig(ctx context.Context, c config.Config, w io.Writer) (Deps, error) {
	client, err := c.S3Client(ctx)
	if err != nil {
		return Deps{}, err
	}
	s := s3store.New(client, c.Bucket, c.Prefix)
	q := c.Queue(s)
	logger := c.Logger(w)
	pub, err := c.Publisher(ctx, logger)
	if err != nil {
		return Deps{}, err
	}
	return Deps{
		Queue:     q,
		Store:     s,
		Logger:    logger,
		Publisher: pub,
		Metrics:   metrics.New(w, c.MetricsNamespace),
		Artifacts: c.Artifacts(q, client),
		Scheduler: schedule.New(q.Store(), q, schedule.Options{}),
		MaxWait:   c.MaxWait,
	}, nil
}
