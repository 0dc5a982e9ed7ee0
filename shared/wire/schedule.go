package wire

import "time"

// MissedRuns says what a schedule does with fire times that passed while
// no tick ran (an outage, a paused tick, a tick that stopped at its budget).
type MissedRuns string

const (
	// MissedSkip fires only the latest due time; earlier ones are counted
	// in its history entry (Fire.Missed) and not fired. The default.
	MissedSkip MissedRuns = "skip"
	// MissedCatchUp fires every due time that lies within catch_up_window
	// of now, oldest first (and always the latest).
	MissedCatchUp MissedRuns = "catch_up"
)

// Overlap says whether a fire may start while the previous fire's task is
// still pending or running.
type Overlap string

const (
	// OverlapAllow fires every time regardless. The default.
	OverlapAllow Overlap = "allow"
	// OverlapSkip does not fire while the last fired task (last_task_id) is
	// pending or running; the skipped time is recorded in the history.
	OverlapSkip Overlap = "skip"
)

// Fire is one entry of a schedule's history, stored at
// q/{queue}/schedules/{id}/history/{fire_time}.
type Fire struct {
	ScheduleID string    `json:"schedule_id"`
	FireTime   time.Time `json:"fire_time"`
	// TaskID is the task the fire submitted (empty when skipped), in the
	// schedule's queue. Its id is derived from the fire time and the
	// schedule's secret (TaskID, TriggerTaskID).
	TaskID  string    `json:"task_id,omitempty"`
	FiredAt time.Time `json:"fired_at"`
	// Skipped says why no task was submitted: "overlap" (the task in
	// RunningTaskID was still pending or running) or "invalid" (the
	// template no longer makes a valid task; Error says why).
	Skipped       string `json:"skipped,omitempty"`
	RunningTaskID string `json:"running_task_id,omitempty"`
	Error         string `json:"error,omitempty"`
	// Trigger is true for a fire made by Trigger, not by the cron.
	Trigger bool `json:"trigger,omitempty"`
	// Missed counts the earlier due times (up to 1000) that were not fired
	// because of missed_runs: all of them under skip, those outside the
	// window under catch_up.
	Missed int `json:"missed,omitempty"`
}

// ScheduleHistory is one page of fires, oldest first.
type ScheduleHistory struct {
	Fires      []Fire `json:"fires"`
	NextCursor string `json:"next_cursor,omitempty"`
}
