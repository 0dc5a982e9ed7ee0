package api

import (
	"net/http"
	"time"

	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/wire"
)

// taskView is a task as the API shows it: wire.Task (the record without
// its lease tokens, request hashes and side-record keys, a type of its
// own so that no field of the record reaches the wire unless listed
// there), plus expires_in_seconds.
type taskView struct {
	wire.Task
	ExpiresInSeconds *int64 `json:"expires_in_seconds,omitempty"`
}

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

// taskReply is {"task": ...}, with "deduplicated": true when a submit
// returned the live task already holding its dedup key, "replayed": true
// when it returned the task an earlier attempt with its id made.
type taskReply struct {
	Task         taskView `json:"task"`
	Deduplicated bool     `json:"deduplicated,omitempty"`
	Replayed     bool     `json:"replayed,omitempty"`
}

// listReply is a page of tasks.
type listReply struct {
	Tasks      []taskView `json:"tasks"`
	NextCursor string     `json:"next_cursor,omitempty"`
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

// claimedView is a claimed task with its lease.
type claimedView struct {
	Task  taskView    `json:"task"`
	Lease queue.Lease `json:"lease"`
}

// claimReply is the answer of POST /claim when it got work.
type claimReply struct {
	Tasks []claimedView `json:"tasks"`
}

// versionView is one stored version of a task record.
type versionView struct {
	VersionID  string    `json:"version_id"`
	ModifiedAt time.Time `json:"modified_at"`
	Task       taskView  `json:"task"`
}

// historyReply is the answer of GET /tasks/{id}/history, one page,
// newest first.
type historyReply struct {
	Versions   []versionView `json:"versions"`
	NextCursor string        `json:"next_cursor,omitempty"`
}

// artifactView is a presigned artifact URL: upload_url from POST
// /tasks/{id}/artifacts, download_url from GET /tasks/{id}/artifacts/{name}.
// headers, when present, must be sent with the request as they are.
type artifactView struct {
	TaskID      string      `json:"task_id"`
	Name        string      `json:"name"`
	UploadURL   string      `json:"upload_url,omitempty"`
	DownloadURL string      `json:"download_url,omitempty"`
	Headers     http.Header `json:"headers,omitempty"`
	ExpiresAt   time.Time   `json:"expires_at"`
}

// artifactReply is {"artifact": ...}.
type artifactReply struct {
	Artifact artifactView `json:"artifact"`
}
