package lambdafn

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	"github.com/s3q/s3q/shared/api"
	"github.com/s3q/s3q/shared/dispatch"
	"github.com/s3q/s3q/shared/metrics"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/store"
)

// wakeTimeout bounds the submit function's wake of dispatch.
const wakeTimeout = 2 * time.Second

// httpFunction is an HTTP function: the API limited to its routes.
type httpFunction struct {
	api *api.API
}

func newHTTP(name string, d Deps) *httpFunction {
	opts := api.Options{
		Now: d.Now, Logger: slog.New(callerHandler{d.Logger.Handler()}), Routes: routes[name],
		Artifacts: d.Artifacts, Schedules: d.Scheduler, MaxWait: d.MaxWait, WaitsPerQueue: d.WaitsPerQueue,
	}
	targets := d.Targets
	if targets == nil && d.Dispatcher != nil {
		targets = d.Dispatcher.Targets()
	}
	if d.Metrics != nil || (d.Waker != nil && targets != nil) || d.SweepWaker != nil {
		opts.OnSubmit = func(tasks []queue.Task, now time.Time) {
			if d.SweepWaker != nil && expiresWithin(tasks, now, d.SweepStay) {
				d.SweepWaker.WakeSweep()
			}
			if d.Metrics != nil {
				if err := d.Metrics.SubmitTTL(tasks, now); err != nil {
					d.Logger.Warn("write submit metrics", "error", err)
				}
				if err := d.Metrics.Activity(metrics.Activity{Submitted: len(tasks)}, now); err != nil {
					d.Logger.Warn("write submit metrics", "error", err)
				}
			}
			if d.Waker != nil && targets != nil {
				// A slow wake must not hold the submit: the minute rule
				// delivers what a lost wake would have.
				ctx, cancel := context.WithTimeout(context.Background(), wakeTimeout)
				defer cancel()
				dispatch.OnSubmit(ctx, targets, d.Waker, tasks, now, d.Logger)
			}
		}
	}
	if d.Metrics != nil {
		opts.OnRequest = func(route string, status int, s3 store.Counts) {
			a := metrics.Activity{S3Requests: s3.Total()}
			if status == http.StatusOK {
				switch {
				case strings.HasSuffix(route, "/complete"):
					a.Completed = 1
				case strings.HasSuffix(route, "/fail"):
					a.Failed = 1
				}
			}
			if err := d.Metrics.Activity(a, time.Now()); err != nil {
				d.Logger.Warn("write request metrics", "error", err)
			}
		}
	}
	return &httpFunction{api: api.New(d.Queue, d.Queues, opts)}
}

// expiresWithin reports whether a pending task of tasks has a deadline
// within d of now.
func expiresWithin(tasks []queue.Task, now time.Time, d time.Duration) bool {
	for _, t := range tasks {
		if t.Status == queue.StatusPending && t.ExpiresAt != nil && t.ExpiresAt.Before(now.Add(d)) {
			return true
		}
	}
	return false
}

// handle serves one API Gateway HTTP API event. It never returns an error:
// a request that cannot be made from the event is a 400, anything else is
// answered by the API (which never panics). The request's log line carries
// API Gateway's request id and the caller (see callerHandler).
func (f *httpFunction) handle(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	ctx = withCaller(ctx, ev)
	r, err := RequestFromEvent(ctx, ev)
	if err != nil {
		// A 400 names its field, as the API's do: the event's.
		field := "event"
		var ee *EventError
		if errors.As(err, &ee) {
			field = ee.Field
		}
		body := `{"error":{"code":"invalid_input","message":` + quote(err.Error()) + `,"field":` + quote(field) + `}}`
		return events.APIGatewayV2HTTPResponse{
			StatusCode: http.StatusBadRequest,
			Headers:    map[string]string{"Content-Type": "application/json"},
			Body:       body,
		}, nil
	}
	rec := newRecorder()
	f.api.ServeHTTP(rec, r)
	return rec.response(), nil
}

// recorder is an http.ResponseWriter that keeps the response in memory.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func newRecorder() *recorder { return &recorder{header: http.Header{}} }

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.body.Write(b)
}

// response is the recorded response as API Gateway takes it: headers
// joined with commas, a text body as is, any other body in base64.
func (r *recorder) response() events.APIGatewayV2HTTPResponse {
	status := r.status
	if status == 0 {
		status = http.StatusOK
	}
	out := events.APIGatewayV2HTTPResponse{StatusCode: status, Headers: map[string]string{}}
	for k, vs := range r.header {
		out.Headers[k] = strings.Join(vs, ",")
	}
	if b := r.body.Bytes(); utf8.Valid(b) {
		out.Body = string(b)
	} else {
		out.Body, out.IsBase64Encoded = base64.StdEncoding.EncodeToString(b), true
	}
	return out
}
