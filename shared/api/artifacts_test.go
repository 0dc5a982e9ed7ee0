package api_test

import (
	"bytes"
	"crypto/rand"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/api"
	"github.com/s3q/s3q/shared/artifacts"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/s3local"
	"github.com/s3q/s3q/shared/store/memstore"
)

// artifactEnv is an API with an artifact service on a real server's
// bucket, under a fresh key prefix. Presigned URLs are checked against the
// server's clock, so its test clock starts at the real time.
func artifactEnv(t *testing.T, srv *s3local.Server) *env {
	t.Helper()
	prefix := "test-" + rand.Text() + "/"
	e := newEnv(t, srv.Store(prefix), api.Options{})
	e.clock.Set(time.Now().UTC().Truncate(time.Second))
	svc := artifacts.New(e.q, srv.Client(), srv.Bucket, prefix, artifacts.Options{TTL: time.Hour, MaxBytes: 1 << 20})
	e.api = api.New(e.q, e.decls, api.Options{Now: e.clock.Now, Logger: discard(), Artifacts: svc})
	return e
}

// fetch sends a request through a presigned URL with net/http.
func fetch(t *testing.T, method, url string, header http.Header, body []byte) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, b
}

func headerOf(r response, path string) http.Header {
	h := http.Header{}
	m, _ := get(r.body, path).(map[string]any)
	for k, vs := range m {
		for _, v := range vs.([]any) {
			h.Add(k, v.(string))
		}
	}
	return h
}

func TestArtifacts(t *testing.T) {
	for _, srv := range []*s3local.Server{servers.GoFakeS3, servers.VersityGW} {
		t.Run(srv.Name, func(t *testing.T) {
			t.Parallel()
			t.Run("an_upload_url_puts_the_bytes_and_a_download_url_gets_them", func(t *testing.T) {
				e := artifactEnv(t, srv)
				now := e.clock.Now()
				id := e.submit(`{"task_type":"render","ttl":"30m"}`)
				r := e.do("POST", "/queues/default/tasks/"+id+"/artifacts", `{"name":"report.pdf","size":12}`)
				if r.status != http.StatusCreated {
					t.Fatalf("POST artifacts: %d %s", r.status, r.raw)
				}
				if str(r.body, "artifact.task_id") != id || str(r.body, "artifact.name") != "report.pdf" ||
					str(r.body, "artifact.download_url") != "" {
					t.Fatalf("upload answer: %s", r.raw)
				}
				// min(now + artifact_ttl 1h, expires_at now + 30m)
				if got := str(r.body, "artifact.expires_at"); got != now.Add(30*time.Minute).Format(time.RFC3339) {
					t.Errorf("expires_at = %s, want the task's deadline %s", got, now.Add(30*time.Minute).Format(time.RFC3339))
				}
				up := str(r.body, "artifact.upload_url")
				if code, b := fetch(t, http.MethodPut, up, headerOf(r, "artifact.headers"), []byte("%PDF-1.7 ...")); code != http.StatusOK {
					t.Fatalf("PUT through the upload_url: %d %s", code, b)
				}

				e.clock.Advance(time.Minute)
				r = e.do("GET", "/queues/default/tasks/"+id+"/artifacts/report.pdf", "")
				if r.status != http.StatusOK || str(r.body, "artifact.name") != "report.pdf" || str(r.body, "artifact.upload_url") != "" {
					t.Fatalf("GET artifact: %d %s", r.status, r.raw)
				}
				if got := str(r.body, "artifact.expires_at"); got != now.Add(30*time.Minute).Format(time.RFC3339) {
					t.Errorf("download expires_at = %s", got)
				}
				if !strings.Contains(str(r.body, "artifact.download_url"), "response-content-disposition=attachment") {
					t.Errorf("download_url without response-content-disposition=attachment: %s", str(r.body, "artifact.download_url"))
				}
				code, b := fetch(t, http.MethodGet, str(r.body, "artifact.download_url"), headerOf(r, "artifact.headers"), nil)
				if code != http.StatusOK || string(b) != "%PDF-1.7 ..." {
					t.Fatalf("GET through the download_url: %d %q", code, b)
				}
			})
			t.Run("a_running_task_may_upload_too", func(t *testing.T) {
				e := artifactEnv(t, srv)
				id, _ := e.running()
				if r := e.do("POST", "/queues/default/tasks/"+id+"/artifacts", `{"name":"out.json","size":1}`); r.status != http.StatusCreated {
					t.Fatalf("POST artifacts of a running task: %d %s", r.status, r.raw)
				}
			})
			t.Run("a_reserved_name_never_uploaded_is_404_not_found", func(t *testing.T) {
				e := artifactEnv(t, srv)
				id := e.submit(`{"task_type":"render","ttl":"30m"}`)
				if r := e.do("POST", "/queues/default/tasks/"+id+"/artifacts", `{"name":"a.txt","size":1}`); r.status != http.StatusCreated {
					t.Fatalf("POST: %d %s", r.status, r.raw)
				}
				r := e.do("GET", "/queues/default/tasks/"+id+"/artifacts/b.txt", "")
				if r.status != http.StatusNotFound || str(r.body, "error.code") != "not_found" || !strings.Contains(str(r.body, "error.message"), "no artifact b.txt") {
					t.Fatalf("GET of a missing artifact: %d %s", r.status, r.raw)
				}
			})
			errorCases := []struct {
				name         string
				setup        func(e *env) string
				method, path string
				body         string
				status       int
				code, field  string
			}{
				{"a_task_without_artifacts_is_404_not_found", func(e *env) string { id, _ := pending(e); return id },
					"GET", "/queues/default/tasks/{id}/artifacts/x.bin", "", 404, "not_found", ""},
				{"an_unknown_task_is_404_not_found", func(*env) string { return unknownID },
					"POST", "/queues/default/tasks/{id}/artifacts", `{"name":"x.bin","size":1}`, 404, "not_found", ""},
				{"an_unknown_task_is_404_on_get_too", func(*env) string { return unknownID },
					"GET", "/queues/default/tasks/{id}/artifacts/x.bin", "", 404, "not_found", ""},
				{"a_bad_task_id_is_400_naming_id", func(*env) string { return "not-an-id" },
					"POST", "/queues/default/tasks/{id}/artifacts", `{"name":"x.bin","size":1}`, 400, "invalid_input", "id"},
				{"a_name_with_dots_is_400_naming_name", func(e *env) string { id, _ := pending(e); return id },
					"POST", "/queues/default/tasks/{id}/artifacts", `{"name":"../tasks/x.json","size":1}`, 400, "invalid_input", "name"},
				{"a_bad_name_in_the_path_is_400_naming_name", func(e *env) string { id, _ := pending(e); return id },
					"GET", "/queues/default/tasks/{id}/artifacts/..x", "", 400, "invalid_input", "name"},
				{"a_missing_name_is_400_naming_name", func(e *env) string { id, _ := pending(e); return id },
					"POST", "/queues/default/tasks/{id}/artifacts", `{}`, 400, "invalid_input", "name"},
				{"an_unknown_field_is_400_naming_it", func(e *env) string { id, _ := pending(e); return id },
					"POST", "/queues/default/tasks/{id}/artifacts", `{"name":"a","ttl":"1h"}`, 400, "invalid_input", "ttl"},
				{"a_finished_task_is_409_invalid_state", func(e *env) string { id, _ := completed(e); return id },
					"POST", "/queues/default/tasks/{id}/artifacts", `{"name":"late.txt","size":1}`, 409, "invalid_state", ""},
				{"a_task_past_its_deadline_is_409_invalid_state", func(e *env) string {
					id := e.submit(`{"task_type":"t","ttl":"1m"}`)
					e.clock.Advance(2 * time.Minute) // pending still: no sweep has run
					return id
				}, "POST", "/queues/default/tasks/{id}/artifacts", `{"name":"late.txt","size":1}`, 409, "invalid_state", ""},
				{"a_missing_size_is_400_naming_size", func(e *env) string { id, _ := pending(e); return id },
					"POST", "/queues/default/tasks/{id}/artifacts", `{"name":"a.bin"}`, 400, "invalid_input", "size"},
				{"a_negative_size_is_400_naming_size", func(e *env) string { id, _ := pending(e); return id },
					"POST", "/queues/default/tasks/{id}/artifacts", `{"name":"a.bin","size":-1}`, 400, "invalid_input", "size"},
				{"a_size_over_the_limit_is_413_too_large_naming_size", func(e *env) string { id, _ := pending(e); return id },
					"POST", "/queues/default/tasks/{id}/artifacts", `{"name":"a.bin","size":1048577}`, 413, "too_large", "size"},
				{"a_cancelled_task_is_409_invalid_state", func(e *env) string { id, _ := cancelled(e); return id },
					"POST", "/queues/default/tasks/{id}/artifacts", `{"name":"late.txt","size":1}`, 409, "invalid_state", ""},
				{"a_put_of_the_download_route_is_405", func(e *env) string { id, _ := pending(e); return id },
					"PUT", "/queues/default/tasks/{id}/artifacts/x.bin", "", 405, "method_not_allowed", ""},
			}
			for _, c := range errorCases {
				t.Run(c.name, func(t *testing.T) {
					e := artifactEnv(t, srv)
					id := c.setup(e)
					before := keys(t, e.store)
					r := e.do(c.method, strings.ReplaceAll(c.path, "{id}", id), c.body)
					if r.status != c.status || str(r.body, "error.code") != c.code || str(r.body, "error.field") != c.field {
						t.Fatalf("status %d code %q field %q, want %d %q %q: %s", r.status, str(r.body, "error.code"), str(r.body, "error.field"), c.status, c.code, c.field, r.raw)
					}
					if after := keys(t, e.store); !maps.Equal(before, after) {
						t.Errorf("a %d wrote to the store:\nbefore %v\nafter  %v", r.status, before, after)
					}
				})
			}
		})
	}
}

func TestArtifactRoutesWithoutAServiceAre404(t *testing.T) {
	e := newEnv(t, memstore.New(), api.Options{})
	id, _ := pending(e)
	for _, r := range []response{
		e.do("POST", "/queues/default/tasks/"+id+"/artifacts", `{"name":"x","size":1}`),
		e.do("GET", "/queues/default/tasks/"+id+"/artifacts/x", ""),
	} {
		if r.status != http.StatusNotFound || str(r.body, "error.code") != "not_found" || !strings.Contains(str(r.body, "error.message"), "not enabled") {
			t.Errorf("%d %s", r.status, r.raw)
		}
	}
}

func TestOnSubmitSeesTheTasksASubmitCreated(t *testing.T) {
	var got [][]queue.Task
	e := newEnv(t, memstore.New(), api.Options{})
	e.api = api.New(e.q, e.decls, api.Options{Now: e.clock.Now, Logger: discard(), OnSubmit: func(tasks []queue.Task, now time.Time) {
		if !now.Equal(t0) {
			t.Errorf("OnSubmit at %s, want %s", now, t0)
		}
		got = append(got, tasks)
	}})
	e.submit(`{"task_type":"a","ttl":"1h","dedup_key":"k"}`)
	if r := e.do("POST", "/queues/default/tasks", `{"task_type":"a","dedup_key":"k"}`); r.status != http.StatusOK {
		t.Fatalf("deduplicated submit: %d %s", r.status, r.raw)
	}
	if r := e.do("POST", "/queues/default/tasks/batch", `{"tasks":[{"task_type":"b"},{"task_type":"a","dedup_key":"k"},{"task_type":""}]}`); r.status != http.StatusOK {
		t.Fatalf("batch: %d %s", r.status, r.raw)
	}
	if r := e.do("POST", "/queues/default/tasks", `{"task_type":""}`); r.status != http.StatusBadRequest {
		t.Fatalf("bad submit: %d %s", r.status, r.raw)
	}
	if len(got) != 2 || len(got[0]) != 1 || got[0][0].TaskType != "a" || got[0][0].ExpiresAt == nil ||
		len(got[1]) != 1 || got[1][0].TaskType != "b" {
		t.Fatalf("OnSubmit calls: %+v", got)
	}
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }
