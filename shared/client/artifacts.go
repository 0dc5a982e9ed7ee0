package client

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// ArtifactURL is a presigned URL of one artifact of a task.
type ArtifactURL struct {
	TaskID      string      `json:"task_id"`
	Name        string      `json:"name"`
	UploadURL   string      `json:"upload_url,omitempty"`
	DownloadURL string      `json:"download_url,omitempty"`
	Headers     http.Header `json:"headers,omitempty"`
	ExpiresAt   time.Time   `json:"expires_at"`
}

// ArtifactDownload returns a presigned URL to download the artifact name
// of task id in the client's queue; a missing artifact or task is a 404
// *Error.
func (c *Client) ArtifactDownload(ctx context.Context, id, name string) (ArtifactURL, error) {
	var res struct {
		Artifact ArtifactURL `json:"artifact"`
	}
	_, err := c.doRetry(ctx, http.MethodGet, c.taskPath(id, "/artifacts/"+url.PathEscape(name)), nil, nil, &res)
	return res.Artifact, err
}
