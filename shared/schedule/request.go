package schedule

import (
	"encoding/json"
	"time"

	"github.com/s3q/s3q/shared/internal/clip"
	"github.com/s3q/s3q/shared/queue"

	"github.com/s3q/s3q/shared/wire"
)

type Request = wire.ScheduleRequest

// Request returns the definition as a request that recreates it, for
// read-modify-write updates (a CLI's "update --cron ...").
func (d *Definition) Request() Request {
	enabled := d.Enabled
	r := Request{
		ID: d.ID, TaskType: d.TaskType, Input: d.Input, Queue: d.Queue,
		TTL: d.TTL, TTLFrom: d.TTLFrom, MaxAttempts: d.MaxAttempts, Priority: d.Priority,
		Cron: d.Cron, Timezone: d.Timezone, Enabled: &enabled,
		MissedRuns: d.MissedRuns, CatchUpWindow: d.CatchUpWindow, Overlap: d.Overlap,
	}
	return r
}

// definition validates r and returns the definition it describes (without
// id, version and times), and its parsed expression. The first bad field
// is returned as a *queue.ValidationError.
func definition(r *Request, now time.Time) (Definition, *Spec, error) {
	d := Definition{
		TaskType: r.TaskType, Input: r.Input, Queue: r.Queue,
		TTL: r.TTL, TTLFrom: r.TTLFrom, MaxAttempts: r.MaxAttempts, Priority: r.Priority,
		Cron: r.Cron, Timezone: r.Timezone, Enabled: r.Enabled == nil || *r.Enabled,
		MissedRuns: r.MissedRuns, CatchUpWindow: r.CatchUpWindow, Overlap: r.Overlap,
	}
	if d.Queue == "" {
		d.Queue = queue.DefaultQueue
	}
	if d.Timezone == "" {
		d.Timezone = "UTC"
	}
	if d.MissedRuns == "" {
		d.MissedRuns = MissedSkip
	}
	if d.Overlap == "" {
		d.Overlap = OverlapAllow
	}
	if err := queue.ValidateTaskType("task_type", d.TaskType); err != nil {
		return Definition{}, nil, err
	}
	if err := queue.ValidateQueueName(d.Queue); err != nil {
		return Definition{}, nil, err
	}
	if len(d.Input) > queue.MaxInputBytes {
		return Definition{}, nil, tooLarge("input", "is %d bytes, over the inline limit of %d (256 KiB)", len(d.Input), queue.MaxInputBytes)
	}
	if len(d.Input) > 0 && !json.Valid(d.Input) {
		return Definition{}, nil, invalid("input", "is not valid JSON")
	}
	if d.TTL != nil && d.TTL.Std() <= 0 {
		return Definition{}, nil, invalid("ttl", "must be more than 0")
	}
	if d.TTL != nil && d.TTL.Std() > 100*365*24*time.Hour {
		return Definition{}, nil, invalid("ttl", "is too large")
	}
	switch d.TTLFrom {
	case "", queue.TTLFromSubmission:
	case queue.TTLFromFirstAttempt:
		if d.TTL == nil {
			return Definition{}, nil, invalid("ttl_from", "first_attempt needs a ttl")
		}
	default:
		return Definition{}, nil, invalid("ttl_from", "%q is not one of submission, first_attempt", clip.Input(string(d.TTLFrom)))
	}
	if d.MaxAttempts < 0 || d.MaxAttempts > queue.MaxAttemptsLimit {
		return Definition{}, nil, invalid("max_attempts", "must be between 1 and %d (0 means the default, %d)", queue.MaxAttemptsLimit, queue.DefaultMaxAttempts)
	}
	if err := queue.ValidatePriority("priority", d.Priority); err != nil {
		return Definition{}, nil, err
	}
	switch d.MissedRuns {
	case MissedSkip, MissedCatchUp:
	default:
		return Definition{}, nil, invalid("missed_runs", "%q is not one of skip, catch_up", clip.Input(string(d.MissedRuns)))
	}
	if d.CatchUpWindow != nil {
		switch w := d.CatchUpWindow.Std(); {
		case w < 0:
			return Definition{}, nil, invalid("catch_up_window", "must not be negative")
		case w > MaxCatchUpWindow:
			return Definition{}, nil, invalid("catch_up_window", "must be at most %s", queue.FormatDuration(MaxCatchUpWindow))
		case d.MissedRuns != MissedCatchUp:
			return Definition{}, nil, invalid("catch_up_window", "needs missed_runs=catch_up")
		}
	}
	switch d.Overlap {
	case OverlapAllow, OverlapSkip:
	default:
		return Definition{}, nil, invalid("overlap", "%q is not one of allow, skip", clip.Input(string(d.Overlap)))
	}
	sp, err := ParseSpec(d.Cron, d.Timezone)
	if err != nil {
		return Definition{}, nil, err
	}
	d.Cron = sp.String()
	if sp.Next(now).IsZero() {
		return Definition{}, nil, invalid("cron", "%q never fires", clip.Input(d.Cron))
	}
	return d, sp, nil
}

// sameSpec reports whether a and b define the same schedule, ignoring
// version and times.
func sameSpec(a, b *Definition) bool {
	x, y := *a, *b
	x.Version, y.Version = 0, 0
	x.CreatedAt, y.CreatedAt = time.Time{}, time.Time{}
	x.UpdatedAt, y.UpdatedAt = time.Time{}, time.Time{}
	bx, _ := json.Marshal(x)
	by, _ := json.Marshal(y)
	return string(bx) == string(by)
}
