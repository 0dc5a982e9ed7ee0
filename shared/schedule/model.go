package schedule

import (
	"encoding/json"
	"time"

	"github.com/s3q/s3q/shared/queue"
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

// DefaultCatchUpWindow is the catch_up_window of a catch_up schedule that
// names none.
const DefaultCatchUpWindow = 24 * time.Hour

// MaxCatchUpWindow is the longest catch_up_window.
const MaxCatchUpWindow = 366 * 24 * time.Hour

// Definition is what a user defines: the JSON stored at
// q/{queue}/schedules/{id}.json. Every write of it bumps Version.
type Definition struct {
	ID string `json:"id"`

	// Secret is made when the schedule is created and kept by every
	// update; the ids of the tasks it fires are derived with it (TaskID),
	// so that no caller can compute one. It is never shown (Schedule).
	Secret string `json:"secret,omitempty"`

	// The task template: what each fire submits.
	TaskType    string          `json:"task_type"`
	Input       json.RawMessage `json:"input,omitempty"`
	Queue       string          `json:"queue"`
	TTL         *queue.Duration `json:"ttl,omitempty"`      // counted from the fire time (see Request.TTL)
	TTLFrom     queue.TTLFrom   `json:"ttl_from,omitempty"` // submission (default) or first_attempt
	MaxAttempts int             `json:"max_attempts,omitempty"`
	Priority    int             `json:"priority,omitempty"` // 0: the queue's default

	// When.
	Cron          string          `json:"cron"`
	Timezone      string          `json:"timezone"`
	Enabled       bool            `json:"enabled"`
	MissedRuns    MissedRuns      `json:"missed_runs"`
	CatchUpWindow *queue.Duration `json:"catch_up_window,omitempty"` // catch_up only
	Overlap       Overlap         `json:"overlap"`

	Version   int64     `json:"version"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// catchUpWindow returns the window of a catch_up schedule.
func (d *Definition) catchUpWindow() time.Duration {
	if d.CatchUpWindow == nil {
		return DefaultCatchUpWindow
	}
	return d.CatchUpWindow.Std()
}

// State is a schedule's run state, stored at schedules/{id}/state.json and
// changed only by compare-and-swap. It follows one version of the
// definition (DefVersion of the incarnation created at DefCreatedAt); when
// the definition moves on, the next writer that sees both brings the state
// up to date.
type State struct {
	// Queue and ScheduleID name the schedule.
	Queue      string `json:"queue"`
	ScheduleID string `json:"schedule_id"`
	// LastRunAt is the fire time (cron time, or trigger time) of the last
	// fire that submitted a task, and LastTaskID that task.
	LastRunAt  *time.Time `json:"last_run_at,omitempty"`
	LastTaskID string     `json:"last_task_id,omitempty"`
	// NextRunAt is the next fire time to handle; nil while paused or when
	// the expression never fires again.
	NextRunAt *time.Time `json:"next_run_at,omitempty"`
	// DueKey is the due/ marker that makes the tick look at the schedule:
	// written before the state names it, deleted after the state stops
	// naming it.
	DueKey string `json:"due_key,omitempty"`

	Rev          int64     `json:"rev"`
	DefVersion   int64     `json:"def_version"`
	DefCreatedAt time.Time `json:"def_created_at"`
	// Cron and Timezone are those NextRunAt was computed with.
	Cron     string `json:"cron"`
	Timezone string `json:"timezone"`
	// Deleted marks the state of a deleted schedule. The state object is
	// kept (a tombstone) so that re-creating the id is a compare-and-swap
	// on a live object and revisions never repeat.
	Deleted   bool      `json:"deleted,omitempty"`
	UpdatedAt time.Time `json:"updated_at"`
}

// follows reports whether the state is up to date with def.
func (st *State) follows(def *Definition) bool {
	return !st.Deleted && st.DefCreatedAt.Equal(def.CreatedAt) && st.DefVersion >= def.Version
}

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

// Skip reasons of a Fire.
const (
	SkippedOverlap = "overlap"
	SkippedInvalid = "invalid"
)

// Schedule is a schedule as the API shows it: the definition, its run
// state, and its next fire times.
type Schedule struct {
	Definition
	LastRunAt  *time.Time `json:"last_run_at"`
	LastTaskID string     `json:"last_task_id,omitempty"`
	// NextRunAt is the next fire time, nil while paused. It may be in the
	// past when the next tick has yet to fire it.
	NextRunAt *time.Time `json:"next_run_at"`
	// NextRuns are the next 5 fire times from NextRunAt on (empty while paused).
	NextRuns []time.Time `json:"next_runs"`
}

// NextRunsShown is how many fire times Get shows.
const NextRunsShown = 5
