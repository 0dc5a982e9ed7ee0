package ui

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/s3q/s3q/shared/client"
	"github.com/s3q/s3q/shared/queue"
)

// eventRow is one task event as the events page shows it.
type eventRow struct {
	Kind     string // "Task Expired", "Task Dead-Lettered"
	Time     time.Time
	TaskID   string
	Queue    string
	TaskType string
	Why      string
}

// eventsShown is the most events the events page shows.
const eventsShown = 200

// eventsPage is /events: the dev server's latest task events. It makes
// no S3 request.
func (c *Console) eventsPage(r *http.Request) (*view, error) {
	if c.opts.Events == nil {
		return nil, pageError(http.StatusNotFound, "not_found", "", "events are shown by s3q dev only: a deployment publishes them to its EventBridge bus")
	}
	var rows []eventRow
	for _, e := range c.opts.Events.Recent(eventsShown) {
		var d struct {
			queue.EventTask
			Reason    string `json:"reason"`
			LastError string `json:"last_error"`
			Attempts  int    `json:"attempt"`
		}
		_ = json.Unmarshal(e.Detail, &d)
		row := eventRow{Kind: e.DetailType, Time: e.Time, TaskID: e.TaskID, Queue: d.Queue, TaskType: d.TaskType}
		switch {
		case d.Reason != "":
			row.Why = expiryWords(d.Reason)
		case d.LastError != "":
			row.Why = d.LastError
		}
		rows = append(rows, row)
	}
	return &view{template: "events", title: "Events", nav: "events", data: rows, refresh: true}, nil
}

// find is /find?ref=: it opens the task a reference names, "queue/id" or
// an id in ?queue= (default "default").
func (c *Console) find(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	s := strings.TrimSpace(q.Get("ref"))
	name, id, ok := strings.Cut(s, "/")
	if !ok {
		name, id = q.Get("queue"), s
		if name == "" {
			name = queue.DefaultQueue
		}
	}
	if id == "" || queue.ValidateQueueName(name) != nil || strings.Contains(id, "/") {
		c.servePage(w, r, func(*http.Request) (*view, error) {
			return nil, pageError(http.StatusBadRequest, "invalid_input", "ref", "%q is not a task id or queue/id", s)
		})
		return
	}
	http.Redirect(w, r, c.opts.Prefix+"/queues/"+url.PathEscape(name)+"/tasks/"+url.PathEscape(id), http.StatusFound)
}

// artifactView is the page of one artifact's download link.
type artifactView struct {
	Queue, TaskID string
	URL           client.ArtifactURL
}

// artifact is /queues/{queue}/tasks/{id}/artifact?name=: a presigned
// download link of the artifact (no S3 request: the API signs it).
func (c *Console) artifact(w http.ResponseWriter, r *http.Request) {
	c.servePage(w, r, func(r *http.Request) (*view, error) {
		name := r.URL.Query().Get("name")
		if name == "" {
			return nil, pageError(http.StatusBadRequest, "invalid_input", "name", "give the artifact's name")
		}
		u, err := c.api.In(r.PathValue("queue")).ArtifactDownload(r.Context(), r.PathValue("id"), name)
		if err != nil {
			return nil, err
		}
		return &view{template: "artifact", title: "Artifact " + name, nav: "queues",
			data: artifactView{Queue: r.PathValue("queue"), TaskID: r.PathValue("id"), URL: u}}, nil
	})
}
