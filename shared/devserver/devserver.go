// Package devserver runs the whole s3q queue on one machine, for `s3q dev`
// (`make dev`) and for tests: the full HTTP API on a local address, served
// through the very Lambda handlers the functions run (each net/http request
// becomes an API Gateway HTTP API event; concurrent requests run in
// execution environments of their own, as on Lambda), the sweep-expired and
// schedule-tick handlers fired on a timer with EventBridge scheduled
// events, and the state in an in-process gofakes3 S3 server (in memory, or
// persisted to a directory) or in any real S3 endpoint.
//
// Task events go to the log and to an in-memory ring that the dev-only
// route GET /events serves (newest first, ?limit=N), in place of an
// EventBridge bus. The console (package ui) is served under /ui, with an
// events page over the same ring; GET / sends a browser there. Presigned artifact URLs point at the S3 server.
package devserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/s3q/s3q/shared/client"
	"github.com/s3q/s3q/shared/config"
	"github.com/s3q/s3q/shared/deploy"
	"github.com/s3q/s3q/shared/dispatch"
	"github.com/s3q/s3q/shared/events"
	"github.com/s3q/s3q/shared/lambdafn"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/ui"
)

// Defaults of Options.
const (
	DefaultAddr         = "127.0.0.1:8080"
	DefaultTickInterval = time.Minute
	DefaultBucket       = "s3q"
	DefaultRecentEvents = 1000
)

// Options configure Run. The zero value serves on DefaultAddr with an
// in-memory S3 server.
type Options struct {
	// Addr is the address the API listens on; port 0 picks a free one.
	// Defaults to DefaultAddr (127.0.0.1:8080).
	Addr string
	// Hosts are the host names (lowercase, without port) a request's Host
	// may give besides localhost and IP addresses, for the API and the
	// console alike; a request naming any other Host is 403 (a DNS
	// rebinding defence). Defaults to none.
	Hosts []string

	// DataDir, when set, makes the in-process S3 server persist its bucket
	// to a file in this directory (created if needed), so that tasks
	// survive a restart. That backend keeps only the current version of
	// each object: GET /queues/{queue}/tasks/{id}/history shows the latest version only.
	// Defaults to none: everything lives in memory and is lost on exit.
	DataDir string

	// Endpoint, when set, uses this S3 endpoint (any real S3 or
	// S3-compatible server, path-style) instead of the in-process one.
	// Bucket must exist there; it should be versioned for history.
	Endpoint string
	// Bucket is the bucket to use. Defaults to DefaultBucket ("s3q").
	Bucket string
	// Prefix is put before every key. Empty or ending in "/". Defaults to "".
	Prefix string
	// Region is the signing region of Endpoint. Defaults to us-east-1.
	Region string
	// AccessKey and SecretKey are Endpoint's credentials. Defaults to the
	// AWS SDK's default credential chain.
	AccessKey, SecretKey string

	// Shards and DefaultTTL are the queue's (queue.Options). Default to 1
	// shard and no default TTL.
	Shards     int
	DefaultTTL time.Duration

	// MaxWait is the longest "wait" of a submit or a claim long-poll, as
	// S3Q_MAX_WAIT is on Lambda; a longer one is a 400 naming wait.
	// Defaults to 25s (api.DefaultMaxWait).
	MaxWait time.Duration

	// TickInterval is how often sweep-expired and schedule-tick fire.
	// Defaults to DefaultTickInterval (60s), as in the deployed stack.
	TickInterval time.Duration

	// PushQueues are declared at start, each with its target (a queue
	// that exists already keeps its other settings and gets the target). Dispatch delivers every declared push queue in this process:
	// woken at once by a submit of a task due now, staying with a queue
	// whose next task is due within a minute, and every TickInterval. URL
	// targets may be http:// here. Defaults to none.
	PushQueues []queues.Declaration
	// PushBindings, when not nil, are the only targets each queue may
	// declare (S3Q_PUSH_BINDINGS). Defaults to nil: any target.
	PushBindings deploy.Bindings
	// PushSecrets are the signing secrets of URL targets by name, in place
	// of SSM Parameter Store. Defaults to none.
	PushSecrets map[string]string
	// LambdaEndpoint is where Lambda targets are invoked: a local endpoint
	// speaking Lambda's Invoke protocol (POST
	// /2015-03-31/functions/{name}/invocations), with dummy credentials.
	// Defaults to AWS Lambda with the default credential chain.
	LambdaEndpoint string

	// RecentEvents is how many of the latest task events GET /events
	// keeps. Defaults to DefaultRecentEvents (1000).
	RecentEvents int

	// Out receives the banner: the URL, where the state lives, and a curl
	// example. Defaults to os.Stdout.
	Out io.Writer
	// Logger receives one JSON line per request and per timer run.
	// Defaults to JSON on os.Stderr.
	Logger *slog.Logger

	// ConsoleRefresh is how often the pages of the console (/ui)
	// refresh themselves; negative turns it off. Defaults to
	// ui.DefaultRefresh (5s).
	ConsoleRefresh time.Duration

	// ConsoleHTTPClient is the HTTP client the console calls the API
	// with (over loopback). Defaults to the console's own.
	ConsoleHTTPClient *http.Client

	// Started, when set, is called with the API's base URL (such as
	// "http://127.0.0.1:8080") once it accepts requests.
	Started func(baseURL string)
}

// Run serves the queue until ctx is cancelled, then shuts down cleanly:
// it stops the timer, lets requests in flight finish (up to 5s), and stops
// the S3 server it started. It returns nil after a clean shutdown.
func Run(ctx context.Context, opts Options) error {
	if opts.Addr == "" {
		opts.Addr = DefaultAddr
	}
	if opts.Bucket == "" {
		opts.Bucket = DefaultBucket
	}
	if opts.TickInterval <= 0 {
		opts.TickInterval = DefaultTickInterval
	}
	if opts.Out == nil {
		opts.Out = os.Stdout
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewJSONHandler(os.Stderr, nil))
	}

	st, err := openStore(ctx, opts)
	if err != nil {
		return err
	}
	defer st.close()
	if err := queue.CheckLayout(ctx, st.store, time.Now()); err != nil {
		return fmt.Errorf("devserver: %w", err)
	}

	if opts.RecentEvents <= 0 {
		opts.RecentEvents = DefaultRecentEvents
	}
	ring := events.NewRing(opts.RecentEvents)
	// The configuration path of every function (lambdafn.Build), with what
	// a dev server has in place of AWS: its S3 server, the log and the ring
	// behind GET /events for the event bus, push delivery in this process.
	// auto_declare is on and http:// push targets are accepted: this is a
	// development server.
	cfg := config.Config{
		Bucket: opts.Bucket, Prefix: opts.Prefix, Shards: opts.Shards, DefaultTTL: opts.DefaultTTL, MaxWait: opts.MaxWait,
		AutoDeclare: true, AllowInsecureTargets: true, PushBindings: opts.PushBindings, LambdaEndpoint: opts.LambdaEndpoint,
	}
	deps, err := lambdafn.Build(ctx, cfg, lambdafn.Parts{
		Logger: opts.Logger, NoMetrics: true, Store: st.store, S3: st.client,
		Publisher: events.Multi(events.Log{Logger: opts.Logger}, ring),
		Local:     true, Secrets: dispatch.StaticSecrets(opts.PushSecrets),
	})
	if err != nil {
		return err
	}
	// A timer's sweep stays until the next one (less a moment), sweeping
	// again while work is near due, as the deployed function does within
	// its minute: expiry events on time.
	deps.SweepStay = max(opts.TickInterval-500*time.Millisecond, 0)
	// A submit of a deadline within the stay starts a staying sweep when
	// none is going: a first short TTL has its event on time too.
	wake := make(sweepWaker, 1)
	deps.SweepWaker = wake
	local := deps.Waker.(*dispatch.Local) // what Parts.Local wakes dispatch with
	defer local.Wait()
	for _, d := range opts.PushQueues {
		if cur, err := deps.Queues.Get(ctx, d.Name, time.Now()); err == nil && d.Target != nil {
			cur.Target = d.Target // a queue kept in --data-dir keeps its other settings
			d = cur
		}
		if _, _, err := deps.Queues.Declare(ctx, d, time.Now()); err != nil {
			return fmt.Errorf("devserver: declare push queue %s: %w", d.Name, err)
		}
	}
	functions := map[string]*function{}
	for _, name := range lambdafn.Names() {
		if functions[name], err = newFunction(name, deps); err != nil {
			return err
		}
	}

	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		return fmt.Errorf("devserver: listen on %s: %w", opts.Addr, err)
	}
	baseURL := "http://" + ln.Addr().String()
	// The console calls this very API over loopback, as `s3q ui` would.
	console, err := ui.New(ctx, baseURL, client.Options{SigV4: new(bool), HTTPClient: opts.ConsoleHTTPClient},
		ui.Options{Events: ring, Refresh: opts.ConsoleRefresh, Logger: opts.Logger, Hosts: opts.Hosts})
	if err != nil {
		ln.Close()
		return fmt.Errorf("devserver: console: %w", err)
	}
	srv := &http.Server{Handler: &gateway{functions: functions, log: opts.Logger, events: ring, console: console, hosts: opts.Hosts}, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	banner(opts.Out, baseURL, st.describe, opts.TickInterval)
	if opts.Started != nil {
		opts.Started(baseURL)
	}

	timerCtx, stopTimer := context.WithCancel(ctx)
	timerDone := make(chan struct{})
	go func() {
		defer close(timerDone)
		runTimers(timerCtx, opts.TickInterval, functions, opts.Logger, local.WakeAll, wake)
	}()

	select {
	case <-ctx.Done():
	case err := <-served:
		stopTimer()
		<-timerDone
		return fmt.Errorf("devserver: serve: %w", err)
	}
	stopTimer()
	<-timerDone
	shutCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutCtx); err != nil {
		_ = srv.Close() // long-polls still waiting: cut them
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("devserver: serve: %w", err)
	}
	return nil
}

// banner prints where the API is and how to try it.
func banner(w io.Writer, baseURL, storage string, tick time.Duration) {
	fmt.Fprintf(w, `s3q dev: the HTTP API is at %[1]s
  console: %[1]s/ui/  (queues, tasks, dead letters, schedules, events in your browser)
  state:  %[2]s
  timers: sweep-expired and schedule-tick every %[3]s
  events: GET /events shows the latest Task Expired and Task Dead-Lettered events (dev only)

Try it:
  curl -s -X POST %[1]s/queues/default/tasks -d '{"task_type":"hello","input":{"name":"world"},"ttl":"1h"}'
  curl -s -X POST %[1]s/queues/default/claim -d '{"lease_for":"1m","worker_id":"me"}'
  curl -s -X POST %[1]s/queues/default/tasks/ID/complete -d '{"lease_token":"TOKEN","output":{"ok":true}}'
  curl -s '%[1]s/queues/default/tasks?status=completed'
  curl -s -X PUT %[1]s/queues/emails -d '{"ttl":"1h","max_concurrency":4}'   # queues auto-declare here
  curl -s -X POST %[1]s/queues/default/tasks -d '{"task_type":"hello","ttl":"5s"}'   # reads expired once its 5s pass (no sweep needed)
  curl -s '%[1]s/events?limit=10'

`, baseURL, storage, queue.FormatDuration(tick))
}
