package wire

import (
	"net/http"
	"time"
)

// TaskView is a task as the API shows it: Task (the record without
// its lease tokens, request hashes and side-record keys, a type of its
// own so that no field of the record reaches the wire unless listed
// there), plus expires_in_seconds.
type TaskView struct {
	Task
	ExpiresInSeconds *int64 `json:"expires_in_seconds,omitempty"`
}

// TaskReply is {"task": ...}, with "deduplicated": true when a submit
// returned the live task already holding its dedup key, "replayed": true
// when it returned the task an earlier attempt with its id made.
type TaskReply struct {
	Task         TaskView `json:"task"`
	Deduplicated bool     `json:"deduplicated,omitempty"`
	Replayed     bool     `json:"replayed,omitempty"`
}

// TaskList is a page of tasks.
type TaskList struct {
	Tasks      []TaskView `json:"tasks"`
	NextCursor string     `json:"next_cursor,omitempty"`
}

// Claimed is a claimed task with its lease.
type Claimed struct {
	Task  TaskView `json:"task"`
	Lease Lease    `json:"lease"`
}

// ClaimReply is the answer of POST /claim when it got work.
type ClaimReply struct {
	Tasks []Claimed `json:"tasks"`
}

// Version is one stored version of a task record.
type Version struct {
	VersionID  string    `json:"version_id"`
	ModifiedAt time.Time `json:"modified_at"`
	Task       TaskView  `json:"task"`
}

// History is the answer of GET /tasks/{id}/history, one page,
// newest first.
type History struct {
	Versions   []Version `json:"versions"`
	NextCursor string    `json:"next_cursor,omitempty"`
}

// Artifact is a presigned artifact URL: upload_url from POST
// /tasks/{id}/artifacts, download_url from GET /tasks/{id}/artifacts/{name}.
// headers, when present, must be sent with the request as they are.
type Artifact struct {
	TaskID      string      `json:"task_id"`
	Name        string      `json:"name"`
	UploadURL   string      `json:"upload_url,omitempty"`
	DownloadURL string      `json:"download_url,omitempty"`
	Headers     http.Header `json:"headers,omitempty"`
	ExpiresAt   time.Time   `json:"expires_at"`
}

// ArtifactReply is {"artifact": ...}.
type ArtifactReply struct {
	Artifact Artifact `json:"artifact"`
}
