// Package lambdafn builds the s3q Lambda functions as a library, so that
// functions/<name>/main.go, the dev server, `s3q invoke` and tests all run
// the very same handlers.
//
// The HTTP functions ("submit", "claim", "waits", "tasks", "schedules") take API Gateway HTTP API
// events (payload format 2.0) and serve them through api.API, limited to
// the routes each function owns: a route that is not its own answers 404.
// The timer functions ("sweep-expired", "schedule-tick") take EventBridge
// scheduled events and call Deps.Sweep and Deps.Tick with the event's time.
// The "dispatch" function takes the minute rule's scheduled event (every
// push queue) or a dispatch.Wake from submit (one queue) and runs
// Deps.Dispatcher until nothing is due or its time ends.
//
// wire.go is the composition root: Build makes the Deps of a process from
// its configuration (package config) and New says what each function runs
// on them, in one table. The submit function writes the TTL-at-submit
// metric, the tasks function hands out presigned artifact URLs.
package lambdafn

import (
	"context"
	"log/slog"
	"slices"
	"time"

	"github.com/s3q/s3q/shared/api"
	"github.com/s3q/s3q/shared/dispatch"
	"github.com/s3q/s3q/shared/metrics"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/schedule"
)

// The function names.
const (
	Submit       = "submit"
	Claim        = "claim"
	Waits        = "waits"
	Tasks        = "tasks"
	Schedules    = "schedules"
	SweepExpired = "sweep-expired"
	ScheduleTick = "schedule-tick"
	Dispatch     = "dispatch"
)

// routes are the API routes each HTTP function owns, from the API's route
// table (api.RoutesOf), which names the function of every route. Every
// route that touches a queue's tasks names the queue; the
// tasks function also serves the queue declarations, GET /tasks (the
// operator's listing across queues) and GET /openapi.json.
var routes = map[string][]string{
	Submit:    api.RoutesOf(Submit),
	Claim:     api.RoutesOf(Claim),
	Waits:     api.RoutesOf(Waits),
	Tasks:     api.RoutesOf(Tasks),
	Schedules: api.RoutesOf(Schedules),
}

// Names returns the name of every function, HTTP ones first.
func Names() []string {
	return []string{Submit, Claim, Waits, Tasks, Schedules, SweepExpired, ScheduleTick, Dispatch}
}

// FunctionFor returns the name of the HTTP function that owns a route key,
// and false when none does.
func FunctionFor(routeKey string) (string, bool) {
	for _, name := range []string{Submit, Claim, Waits, Tasks, Schedules} {
		if slices.Contains(routes[name], routeKey) {
			return name, true
		}
	}
	return "", false
}

// FunctionForRequest returns the name of the HTTP function a request goes
// to: the owner of the route it matches; else the owner of a route with
// its path and another method (which answers 405); else "tasks" (which
// answers 404). The dev server routes with it, as API Gateway does with
// the stack's routes.
func FunctionForRequest(method, path string) string {
	for _, m := range append([]string{method}, api.Allowed(path)...) {
		if key, ok := api.Match(m, path); ok {
			if fn, ok := FunctionFor(key); ok {
				return fn
			}
		}
	}
	return Tasks
}

// timerWork is the work a timer function does at now, returning a report
// (any JSON value) for its log line and its response.
// scheduled is true for the rule's own event (source aws.events,
// detail-type Scheduled Event), false for a run by hand.
type timerWork func(ctx context.Context, now time.Time, scheduled bool) (any, error)

// Deps is what the functions run on.
type Deps struct {
	// Queue is the task queue, over a reqcount-wrapped store. Required by
	// the HTTP functions; sweep-expired sweeps it. Defaults to none: the
	// sweep logs that it has nothing to do.
	Queue *queue.Queue
	// Queues is the registry of Queue's declared queues, made with it
	// (config.Config.Queue, queues.New). Required with Queue by the HTTP
	// functions; the sweep writes each declared queue's gauges from it.
	// Defaults to none.
	Queues *queues.Registry
	// Logger receives one JSON line per invocation. Defaults to
	// slog.Default().
	Logger *slog.Logger
	// Now is the clock. Defaults to time.Now.
	Now func() time.Time
	// SweepStay is how long a scheduled sweep-expired run stays, sweeping
	// again while work is near due, so that expiry is on time
	// (sweep_stay.go). Main sets DefaultSweepStay (59s, bounded by the
	// function's timeout); s3q dev its timers' interval less 0.5s. Defaults to 0:
	// one pass. A sweep invoked by hand
	// (s3q sweep, s3q invoke: an event whose source is not aws.events)
	// makes one pass.
	SweepStay time.Duration
	// Publisher delivers the Task Expired and Task Dead-Lettered events of
	// the sweep (Deps.Sweep). Defaults to the log (events.Log on Logger).
	Publisher queue.EventPublisher
	// Metrics receives the CloudWatch EMF metrics: the sweep's
	// (Deps.Sweep) and the TTL of each submitted task (the submit
	// function). Defaults to none.
	Metrics *metrics.Emitter
	// Artifacts hands out the presigned artifact URLs of the tasks
	// function. Defaults to none: the artifact routes answer 404.
	Artifacts api.Artifacts
	// Scheduler serves the schedules function's routes and is the tick's
	// work (Deps.Tick). Defaults to none: the schedule routes answer 404
	// and the tick logs that it has nothing to do.
	Scheduler *schedule.Scheduler
	// MaxWait is the longest "wait" of a submit or a claim long-poll
	// (S3Q_MAX_WAIT); a longer one is a 400 naming wait. Defaults to
	// api.DefaultMaxWait.
	MaxWait time.Duration
	// WaitsPerQueue is the most waits one queue may hold at once
	// (S3Q_WAITS_PER_QUEUE, api.Options.WaitsPerQueue). Defaults to 0:
	// no bound.
	WaitsPerQueue int
	// Dispatcher is the dispatch function's work: deliver the due tasks of
	// push queues (Build). Defaults to none: the function
	// logs that it has nothing to do.
	Dispatcher *dispatch.Dispatcher
	// Waker is woken by the submit function for each created task that is
	// due within dispatch.WakeAhead in a queue Targets lists as a push
	// queue. Defaults to none: the minute rule alone delivers.
	Waker dispatch.Waker
	// Targets lists the push queues, for the submit function's wake.
	// Defaults to the Dispatcher's, else none.
	Targets dispatch.Targets
	// SweepWaker is woken by the submit function when it created a
	// pending task whose deadline is within SweepStay: s3q dev starts a
	// staying sweep-expired run then if none is going, so that a first
	// deadline in an idle dev server has its Task Expired event on time.
	// Defaults to none (the stack): such a deadline's event waits for
	// the next minute's sweep when no sweep is staying (reads show the
	// task expired at once; a claim never starts it).
	SweepWaker SweepWaker
}

// SweepWaker starts a staying sweep-expired run when none is going.
// WakeSweep must not block.
type SweepWaker interface {
	WakeSweep()
}
