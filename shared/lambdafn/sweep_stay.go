package lambdafn

import (
	"context"
	"time"

	"github.com/s3q/s3q/shared/queue"
)

// DefaultSweepStay is how long a scheduled sweep-expired run stays while
// work is near due (Deps.SweepStay), from its scheduled time: until a
// second before the rule's next run, a minute later, so that some run is
// staying at every moment of a busy minute (the stack's timer timeout,
// 70s, leaves the last pass begun in the stay time to end; the function's
// reserved concurrency of 1 keeps the next run from overlapping it:
// Lambda retries that run a moment later). Bounded by the function's
// timeout (3s before it).
const DefaultSweepStay = time.Minute - time.Second

// SweepStayPoll is how often a staying sweep sweeps again while work is
// near due, so that a task whose deadline falls in the minute, or one
// submitted meanwhile with a deadline in it, is expired and its Task
// Expired event published within about this long of its expires_at.
const SweepStayPoll = 2 * time.Second

// sweepOnTime is the work of a scheduled sweep-expired run: Deps.Sweep at
// now and then, while the sweep saw something fall due within
// d.SweepStay of now (queue.SweepReport.NextDue: a deadline, a parked
// lease, the next minute's wake-up of a queue), again at that time or
// after SweepStayPoll, whichever is first, until the stay is over (or
// ctx's deadline is 3s away). An idle deployment's sweep sees nothing
// ahead and returns after its one pass (one LIST); a busy one pays a
// few LISTs per pass while work is near due. The queue gauges are
// written by the first pass only. The report is the last pass's, with
// the counts, events and requests of every pass added up.
func (d Deps) sweepOnTime(ctx context.Context, now time.Time) (queue.SweepReport, error) {
	total, err := d.Sweep(ctx, now)
	if d.SweepStay <= 0 || err != nil {
		return total, err
	}
	end := now.Add(d.SweepStay)
	if dl, ok := ctx.Deadline(); ok && dl.Add(-3*time.Second).Before(end) {
		end = dl.Add(-3 * time.Second)
	}
	again := d
	again.Queues = nil // the gauges once per run
	rep := total
	for !rep.NextDue.IsZero() && rep.NextDue.Before(end) {
		wake := rep.NextDue
		if p := d.Now().Add(SweepStayPoll); p.Before(wake) {
			wake = p
		}
		timer := time.NewTimer(max(wake.Sub(d.Now()), 0))
		select {
		case <-ctx.Done():
			timer.Stop()
			return total, nil
		case <-timer.C:
		}
		at := d.Now()
		if !at.Before(end) {
			break
		}
		rep, err = again.Sweep(ctx, at)
		total = addSweep(total, rep)
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// addSweep adds the counts of pass b to those of a, and keeps b's
// time, next due time and state.
func addSweep(a, b queue.SweepReport) queue.SweepReport {
	out := b
	for _, f := range []struct{ dst, x, y *int }{
		{&out.Expired, &a.Expired, &b.Expired}, {&out.ExpiredByParent, &a.ExpiredByParent, &b.ExpiredByParent},
		{&out.CancelRequested, &a.CancelRequested, &b.CancelRequested}, {&out.Reclaimed, &a.Reclaimed, &b.Reclaimed},
		{&out.DeadLettered, &a.DeadLettered, &b.DeadLettered}, {&out.Cancelled, &a.Cancelled, &b.Cancelled},
		{&out.Parked, &a.Parked, &b.Parked}, {&out.Repaired, &a.Repaired, &b.Repaired},
		{&out.StaleMarkers, &a.StaleMarkers, &b.StaleMarkers}, {&out.Conflicts, &a.Conflicts, &b.Conflicts},
		{&out.EventsSent, &a.EventsSent, &b.EventsSent}, {&out.EventsFailed, &a.EventsFailed, &b.EventsFailed},
		{&out.ArtifactsDeleted, &a.ArtifactsDeleted, &b.ArtifactsDeleted}, {&out.Errors, &a.Errors, &b.Errors},
		{&out.WakeupsDeleted, &a.WakeupsDeleted, &b.WakeupsDeleted},
	} {
		*f.dst = *f.x + *f.y
	}
	out.ExpiredByType = map[string]int{}
	for _, m := range []map[string]int{a.ExpiredByType, b.ExpiredByType} {
		for k, v := range m {
			out.ExpiredByType[k] += v
		}
	}
	out.Requests = a.Requests.Add(b.Requests)
	out.Duration = a.Duration + b.Duration
	out.Passes = a.Passes + max(b.Passes, 1)
	return out
}
