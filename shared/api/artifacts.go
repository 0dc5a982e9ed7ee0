package api

import (
	"errors"
	"github.com/s3q/s3q/shared/queue"
	"net/http"

	"github.com/s3q/s3q/shared/artifacts"
)

// artifactBody is the body of POST /tasks/{id}/artifacts.
type artifactBody struct {
	Name string `json:"name"`
	// Size is the artifact's size in bytes, required: the URL is signed
	// for exactly this Content-Length, at most the deployment's
	// S3Q_MAX_ARTIFACT_BYTES.
	Size int64 `json:"size"`
}

// artifactUpload serves POST /queues/{queue}/tasks/{id}/artifacts: 201 with a presigned
// PUT URL for the artifact named in the body, living until min(now +
// artifact_ttl, the task's expires_at), for a body of exactly
// size bytes (400 naming size when it is missing, 413 too_large over the
// deployment's limit). The task must be pending or running and before its
// deadline (else 409 invalid_state).
func (a *API) artifactUpload(rq *request) (reply, error) {
	if a.opts.Artifacts == nil {
		return reply{}, noArtifacts()
	}
	var body artifactBody
	if err := decodeObject(rq.body, &body, ""); err != nil {
		return reply{}, err
	}
	if body.Name == "" {
		return reply{}, badInput("name", "is required: the artifact's name, such as \"report.pdf\"")
	}
	if _, err := rq.q.Get(rq.ctx, rq.id); err != nil {
		return reply{}, err // a task of another queue is 404
	}
	if body.Size == 0 {
		return reply{}, badInput("size", "is required: the artifact's size in bytes; the upload must send exactly that many")
	}
	u, err := a.opts.Artifacts.PutURL(rq.ctx, queue.Ref(rq.queue, rq.id), body.Name, body.Size, rq.now(a))
	if err != nil {
		return reply{}, err
	}
	return reply{status: http.StatusCreated, body: artifactReply{Artifact: artifactView{
		TaskID: u.TaskID, Name: u.Name, UploadURL: u.URL, Headers: u.Headers, ExpiresAt: u.ExpiresAt,
	}}}, nil
}

// artifactDownload serves GET /queues/{queue}/tasks/{id}/artifacts/{name}: 200 with a
// presigned GET URL, or 404 when the task has no such artifact (never
// uploaded, deleted by the sweep, or past its time).
func (a *API) artifactDownload(rq *request) (reply, error) {
	if a.opts.Artifacts == nil {
		return reply{}, noArtifacts()
	}
	if _, err := rq.q.Get(rq.ctx, rq.id); err != nil {
		return reply{}, err // a task of another queue is 404
	}
	u, err := a.opts.Artifacts.GetURL(rq.ctx, queue.Ref(rq.queue, rq.id), rq.name, rq.now(a))
	if errors.Is(err, artifacts.ErrNoArtifact) {
		return reply{}, notFound("task %s has no artifact %s (never uploaded, deleted, or past its time)", clip(rq.id), clip(rq.name))
	}
	if err != nil {
		return reply{}, err
	}
	return reply{status: http.StatusOK, body: artifactReply{Artifact: artifactView{
		TaskID: u.TaskID, Name: u.Name, DownloadURL: u.URL, Headers: u.Headers, ExpiresAt: u.ExpiresAt,
	}}}, nil
}

func noArtifacts() *Error {
	return notFound("artifacts are not enabled on this API (no artifact service is configured)")
}
