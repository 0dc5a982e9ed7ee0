package schedule

import (
	"encoding/json"
	"time"

	"github.com/s3q/s3q/shared/queue"

	"github.com/s3q/s3q/shared/wire"
)

type MissedRuns = wire.MissedRuns

// What a schedule does with missed fire times (wire.MissedSkip, ...).
const (
	MissedSkip    = wire.MissedSkip
	MissedCatchUp = wire.MissedCatchUp
)

type Overlap = wire.Overlap

// Whether a fire may overlap the last one (wire.OverlapAllow, ...).
const (
	OverlapAllow = wire.OverlapAllow
	OverlapSkip  = wire.OverlapSkip
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

type Fire = wire.Fire

// Skip reasons of a Fire.
const (
	SkippedOverlap = "overlap"
	SkippedInvalid = "invalid"
)

type Schedule = wire.Schedule

// NextRunsShown is how many fire times Get shows.
const NextRunsShown = 5
