package wire

import (
	"encoding/json"
	"time"
)

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

// ScheduleRequest is a schedule as a client sends it to create or replace one:
// JSON, snake_case, durations as strings ("90s", "30m", "1h", "7d"). It is
// the body of POST /schedules and PUT /schedules/{id}; unknown fields are
// the API layer's to reject.
//
// Update replaces the whole definition with the request (omitted optional
// fields take their defaults), except Enabled: nil keeps the schedule's
// current state, so editing a paused schedule leaves it paused. To change
// one field, start from Schedule.Request.
type ScheduleRequest struct {
	// ID names the schedule: 1-128 of A-Z a-z 0-9 _ -. Required on create;
	// on update it may be empty or must equal the id being updated.
	ID string `json:"id,omitempty"`

	// TaskType is the task type of each fired task. Required.
	TaskType string `json:"task_type"`
	// Input is the JSON input of each fired task, at most 256 KiB.
	Input json.RawMessage `json:"input,omitempty"`
	// Queue is the queue fired tasks go to. Defaults to "default".
	Queue string `json:"queue,omitempty"`
	// TTL is each fired task's time to live. With ttl_from=submission (the
	// default) it counts from the fire time, so a fire that comes late
	// (after an outage) gets what is left of it, and one later than its
	// TTL is created already expired and never runs. With
	// ttl_from=first_attempt it counts from the task's first claim.
	// Defaults to none (the queue's task-type and global defaults apply).
	TTL *Duration `json:"ttl,omitempty"`
	// TTLFrom is "submission" (default) or "first_attempt".
	TTLFrom TTLFrom `json:"ttl_from,omitempty"`
	// MaxAttempts of each fired task; 0 means the queue's default (3).
	MaxAttempts int `json:"max_attempts,omitempty"`
	// Priority of each fired task, 1 (highest) to 5 (lowest); 0 means the
	// queue's default (3).
	Priority int `json:"priority,omitempty"`

	// Cron is the expression: 5 fields (minute hour day-of-month month
	// day-of-week) or a descriptor (@hourly, @daily, @weekly, @monthly,
	// @yearly, @every 15m). Required.
	Cron string `json:"cron"`
	// Timezone is the IANA time zone the expression is read in. Defaults
	// to UTC.
	Timezone string `json:"timezone,omitempty"`
	// Enabled is false to create a paused schedule. Defaults to true on
	// create and to "unchanged" on update.
	Enabled *bool `json:"enabled,omitempty"`
	// MissedRuns is "skip" (default) or "catch_up".
	MissedRuns MissedRuns `json:"missed_runs,omitempty"`
	// CatchUpWindow bounds how far back catch_up goes; only with
	// missed_runs=catch_up. Defaults to 24h.
	CatchUpWindow *Duration `json:"catch_up_window,omitempty"`
	// Overlap is "allow" (default) or "skip".
	Overlap Overlap `json:"overlap,omitempty"`
}

// Schedule is a schedule as the API shows it: its definition (without the
// secret its task ids are derived with), its run state, and its next fire
// times.
type Schedule struct {
	ID string `json:"id"`

	// The task template: what each fire submits.
	TaskType    string          `json:"task_type"`
	Input       json.RawMessage `json:"input,omitempty"`
	Queue       string          `json:"queue"`
	TTL         *Duration       `json:"ttl,omitempty"`      // counted from the fire time (see Request.TTL)
	TTLFrom     TTLFrom         `json:"ttl_from,omitempty"` // submission (default) or first_attempt
	MaxAttempts int             `json:"max_attempts,omitempty"`
	Priority    int             `json:"priority,omitempty"` // 0: the queue's default

	// When.
	Cron          string     `json:"cron"`
	Timezone      string     `json:"timezone"`
	Enabled       bool       `json:"enabled"`
	MissedRuns    MissedRuns `json:"missed_runs"`
	CatchUpWindow *Duration  `json:"catch_up_window,omitempty"` // catch_up only
	Overlap       Overlap    `json:"overlap"`

	Version   int64     `json:"version"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`

	LastRunAt  *time.Time `json:"last_run_at"`
	LastTaskID string     `json:"last_task_id,omitempty"`
	// NextRunAt is the next fire time, nil while paused. It may be in the
	// past when the next tick has yet to fire it.
	NextRunAt *time.Time `json:"next_run_at"`
	// NextRuns are the next 5 fire times from NextRunAt on (empty while paused).
	NextRuns []time.Time `json:"next_runs"`
}

// Request returns the schedule as a request that recreates it, for
// read-modify-write updates (a CLI's "update --cron ...").
func (s Schedule) Request() ScheduleRequest {
	enabled := s.Enabled
	return ScheduleRequest{
		ID: s.ID, TaskType: s.TaskType, Input: s.Input, Queue: s.Queue,
		TTL: s.TTL, TTLFrom: s.TTLFrom, MaxAttempts: s.MaxAttempts, Priority: s.Priority,
		Cron: s.Cron, Timezone: s.Timezone, Enabled: &enabled,
		MissedRuns: s.MissedRuns, CatchUpWindow: s.CatchUpWindow, Overlap: s.Overlap,
	}
}

// ScheduleList is one page of schedules, in key order.
type ScheduleList struct {
	Schedules []Schedule `json:"schedules"`
	// NextCursor continues the listing; empty on the last page.
	NextCursor string `json:"next_cursor,omitempty"`
}

// ScheduleReply is {"schedule": ...}.
type ScheduleReply struct {
	Schedule Schedule `json:"schedule"`
}

// FireReply is {"fire": ...}, the answer of a trigger.
type FireReply struct {
	Fire Fire `json:"fire"`
}
