package lambdafn

import (
	"context"
	"time"
)

// NewTick returns the work of schedule-tick over d.Scheduler (required):
// one schedule.Scheduler.Tick at the event's time, which fires every due
// cron schedule exactly once per cron time. The report is the
// schedule.TickReport.
func NewTick(d Deps) TimerFunc {
	return func(ctx context.Context, now time.Time) (any, error) {
		return d.Scheduler.Tick(ctx, now)
	}
}
