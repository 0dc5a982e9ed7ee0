package lambdafn

import (
	"context"
	"time"

	"github.com/s3q/s3q/shared/schedule"
)

// Tick is the work of schedule-tick at now: one schedule.Scheduler.Tick
// over d.Scheduler (required), which fires every due cron schedule
// exactly once per cron time.
func (d Deps) Tick(ctx context.Context, now time.Time) (schedule.TickReport, error) {
	return d.Scheduler.Tick(ctx, now)
}
