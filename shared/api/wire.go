package api

import (
	"time"

	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/wire"
)

// The bodies of the task routes' answers are declared once, in package
// wire, which the Go client decodes into too; these are their names here.
type (
	taskView      = wire.TaskView
	taskReply     = wire.TaskReply
	listReply     = wire.TaskList
	claimedView   = wire.Claimed
	claimReply    = wire.ClaimReply
	versionView   = wire.Version
	historyReply  = wire.History
	artifactView  = wire.Artifact
	artifactReply = wire.ArtifactReply
)

// view returns t as the API shows it at now.
func view(t queue.Task, now time.Time) taskView {
	v := taskView{Task: t.Wire()}
	if left, ok := t.Remaining(now); ok {
		secs := int64(left / time.Second)
		if left < 0 && left%time.Second != 0 {
			secs-- // round down: -0.5s is -1, not 0
		}
		v.ExpiresInSeconds = &secs
	}
	return v
}

// batchItem is one result of a batch submit: a task or an error.
type batchItem struct {
	Task         *taskView `json:"task,omitempty"`
	Deduplicated *bool     `json:"deduplicated,omitempty"`
	Replayed     *bool     `json:"replayed,omitempty"`
	Error        *Error    `json:"error,omitempty"`
}

// batchReply is the answer of POST /tasks/batch, one result per task in
// the order given.
type batchReply struct {
	Results []batchItem `json:"results"`
}
