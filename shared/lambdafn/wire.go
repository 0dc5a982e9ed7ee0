package lambdafn

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3q/s3q/shared/config"
	"github.com/s3q/s3q/shared/dispatch"
	"github.com/s3q/s3q/shared/metrics"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/schedule"
	"github.com/s3q/s3q/shared/store"
	"github.com/s3q/s3q/shared/store/s3store"
)

// This file is the composition root of every s3q process: Build makes the
// parts from the configuration, New says what each function runs on them.
// functions/<name> (Main), the dev server (package devserver) and the CLI
// (s3q invoke, s3q sweep) all go through both.
//
//	function        runs                                         on
//	submit          api.API, its routes; wakes dispatch          Queue, Queues, Metrics (TTL at submit), Waker, Targets
//	claim           api.API, its routes                          Queue, Queues
//	waits           api.API, its routes (the held waits of       Queue, Queues, Metrics, Waker, Targets
//	                submit and claim); wakes dispatch as submit
//	tasks           api.API, its routes                          Queue (with Publisher: a retry or purge
//	                publishes an owed event), Queues, Artifacts
//	schedules       api.API, its routes                          Queue, Queues, Scheduler
//	sweep-expired   Deps.Sweep: queue.Queue.Sweep + events       Queue, Queues (gauges), Publisher, Metrics
//	schedule-tick   Deps.Tick: schedule.Scheduler.Tick           Scheduler
//	dispatch        dispatch.Dispatcher.Run                      Dispatcher
//
// The queue, the registry of its declared queues (Queues), the scheduler
// and the task-type defaults share one reqcount-wrapped store
// (Queue.Store()), so every request of an HTTP request or a timer run is
// in its log line's s3_requests.

// Parts are what a process supplies that its configuration does not
// describe. The zero value is a deployed function's: the bucket through
// the AWS SDK, the log and the EMF metrics on os.Stdout, events to the
// configured bus, push deliveries by the AWS clients.
type Parts struct {
	// Out receives the JSON log and the EMF metrics. Defaults to
	// os.Stdout, where CloudWatch Logs picks them up.
	Out io.Writer
	// Logger receives the log. Defaults to config.Config.Logger(Out).
	Logger *slog.Logger
	// NoMetrics writes no EMF metrics (a process whose output CloudWatch
	// Logs does not read). Defaults to false.
	NoMetrics bool
	// Store and S3 are the bucket and the client that signs presigned
	// artifact URLs, in place of the configuration's (the dev server's
	// in-process S3 server). Give both or neither. Default to
	// config.Config.S3Client and the bucket under Prefix.
	Store store.Store
	S3    *s3.Client
	// Publisher delivers the sweep's task events in place of
	// config.Config.Publisher (the dev server's log and GET /events).
	// Defaults to the configured bus, else the log.
	Publisher queue.EventPublisher
	// Local delivers push queues in this process, as the dev server does:
	// the dispatcher works on the API's queue, re-reads declared push
	// queues at most every second, signs URL targets with Secrets, and
	// wakes itself (dispatch.Local, its runs lasting until Build's ctx
	// ends) instead of invoking the dispatch function. Defaults to false:
	// the deployed dispatch function and its wake by Lambda Invoke.
	Local bool
	// Secrets are the signing secrets of URL targets when Local is set.
	// Defaults to none.
	Secrets dispatch.SecretSource
}

// Build returns the Deps the named functions run on (every function when
// none is named), made from c and p: the counted store, the queue and the
// registry of its declared queues (config.Config.Queue: c.Shards and the
// other queue settings), the scheduler on the same counted store,
// the event publisher (for sweep-expired only), the artifact service, the
// EMF metrics, and, for dispatch and submit, the dispatcher and the wake
// of push queues. It makes no request.
func Build(ctx context.Context, c config.Config, p Parts, functions ...string) (Deps, error) {
	if len(functions) == 0 {
		functions = Names()
	}
	if p.Out == nil {
		p.Out = os.Stdout
	}
	if p.Logger == nil {
		p.Logger = c.Logger(p.Out)
	}
	if (p.Store == nil) != (p.S3 == nil) {
		return Deps{}, fmt.Errorf("lambdafn: Parts.Store and Parts.S3 go together")
	}
	if p.Store == nil {
		client, err := c.S3Client(ctx)
		if err != nil {
			return Deps{}, err
		}
		p.Store, p.S3 = s3store.New(client, c.Bucket, c.Prefix), client
	}
	// The sweep publishes, and the tasks function when a retry or a
	// purge publishes an owed event itself (queue.Options.Publisher); the
	// other functions load no AWS configuration for an EventBridge client
	// they never use.
	if p.Publisher == nil && (slices.Contains(functions, SweepExpired) || slices.Contains(functions, Tasks)) {
		pub, err := c.Publisher(ctx, p.Logger)
		if err != nil {
			return Deps{}, err
		}
		p.Publisher = pub
	}
	// Declarations check their push target against the deployment's
	// bindings, and that a URL target's secret can be read.
	switch {
	case p.Local:
		c.CheckTarget = c.PushPolicy(localSecretCheck(p.Secrets)).Check
	case slices.Contains(functions, Tasks):
		awsCfg, err := c.AWS(ctx)
		if err != nil {
			return Deps{}, err
		}
		c.CheckTarget = c.PushPolicy(dispatch.SSMCheck{Client: c.SSMClient(awsCfg)}).Check
	}
	q, decls := c.Queue(p.Store, func(o *queue.Options) { o.Publisher = p.Publisher })
	d := Deps{
		Queue:     q,
		Queues:    decls,
		Logger:    p.Logger,
		Publisher: p.Publisher,
		Artifacts: c.Artifacts(q, p.S3),
		Scheduler: schedule.New(q.Store(), q, schedule.Options{}),
		MaxWait:   c.MaxWait,

		WaitsPerQueue: c.WaitsPerQueue,
	}
	if !p.NoMetrics {
		d.Metrics = metrics.New(p.Out, c.MetricsNamespace)
	}
	var err error
	switch {
	case p.Local:
		err = d.wireLocalDispatch(ctx, c, p.Secrets)
	case slices.Contains(functions, Dispatch):
		d.Dispatcher, err = newDispatcher(ctx, c, p.Store, p.Logger)
	}
	if err != nil {
		return Deps{}, err
	}
	if !p.Local && (slices.Contains(functions, Submit) || slices.Contains(functions, Waits)) {
		// Tasks due now in a push queue wake the dispatch function.
		d.Targets = dispatch.NewDeclared(decls, 0)
		if d.Waker, err = newWaker(ctx, c, p.Logger); err != nil {
			return Deps{}, err
		}
	}
	return d, nil
}

// CheckLayout refuses a bucket of another layout (queue.CheckLayout):
// every process that serves a bucket calls it once at start, before it
// reads or writes anything else.
func (d *Deps) CheckLayout(ctx context.Context) error {
	return queue.CheckLayout(ctx, d.Queue.Store(), time.Now())
}

// New returns the handler of the named function over d, ready for
// lambda.Start or for Invoke with an event's JSON. What each function runs
// is in the table at the top of this file.
func New(name string, d Deps) (lambda.Handler, error) {
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	d.Logger = d.Logger.With("function", name)
	switch name {
	case Submit, Claim, Waits, Tasks, Schedules:
		if d.Queue == nil || d.Queues == nil {
			return nil, fmt.Errorf("lambdafn: function %s needs Deps.Queue and Deps.Queues", name)
		}
		return lambda.NewHandler(newHTTP(name, d).handle), nil
	case SweepExpired:
		var work timerWork
		if d.Queue != nil {
			work = func(ctx context.Context, now time.Time, scheduled bool) (any, error) {
				if !scheduled {
					return d.Sweep(ctx, now)
				}
				return d.sweepOnTime(ctx, now)
			}
		}
		return lambda.NewHandler(newTimer(name, work, d).handle), nil
	case ScheduleTick:
		var work timerWork
		if d.Scheduler != nil {
			work = func(ctx context.Context, now time.Time, _ bool) (any, error) { return d.Tick(ctx, now) }
		}
		return lambda.NewHandler(newTimer(name, work, d).handle), nil
	case Dispatch:
		return lambda.NewHandler((&dispatchFunction{d: d}).handle), nil
	}
	return nil, fmt.Errorf("lambdafn: no function %q; the functions are %s", name, strings.Join(Names(), ", "))
}

// Main is the whole main of a function binary (functions/<name>): the
// configuration from the environment (package config, checked at start
// with every bad variable named), Build, New and lambda.Start. A bad
// configuration ends the process with a clear message on stderr.
func Main(name string) {
	fail := func(err error) {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		reportInitError(name, err)
		os.Exit(1)
	}
	cfg, err := config.FromEnv(os.Getenv)
	if err != nil {
		fail(err)
	}
	deps, err := Build(context.Background(), cfg, Parts{}, name)
	if err != nil {
		fail(err)
	}
	if err := deps.CheckLayout(context.Background()); err != nil {
		fail(err) // another layout's bucket: refuse it at start
	}
	deps.SweepStay = DefaultSweepStay // expiry on time while work is near due
	h, err := New(name, deps)
	if err != nil {
		fail(err)
	}
	lambda.Start(h)
}

// dispatchListCache is how long one LIST serves the dispatch function's
// claims: short, because the tasks it serves are submitted by another
// process a moment before the wake.
const dispatchListCache = 100 * time.Millisecond

// newDispatcher builds the dispatch function's work: the declared queues
// with a target (PUT /queues/{queue}) that the push bindings allow,
// Lambda targets invoked through the Lambda client (S3Q_LAMBDA_ENDPOINT
// when set), URL targets signed with secrets from SSM Parameter Store
// (cached 5m), and retries woken by an asynchronous Invoke of the function
// itself (its AWS_LAMBDA_FUNCTION_NAME). Its queue claims only, on s
// (counted) with c's shards and a short LIST cache.
func newDispatcher(ctx context.Context, c config.Config, s store.Store, logger *slog.Logger) (*dispatch.Dispatcher, error) {
	awsCfg, err := c.AWS(ctx) // loaded once for both clients
	if err != nil {
		return nil, err
	}
	lc := c.LambdaClient(awsCfg)
	opts := dispatch.Options{
		Logger:       logger,
		Lambda:       &dispatch.Lambda{Client: lc},
		HTTP:         dispatch.NewHTTP(dispatch.NewSSMSecrets(c.SSMClient(awsCfg), 0), c.AllowInsecureTargets),
		RecheckAfter: dispatchListCache + 50*time.Millisecond,
		Policy:       c.PushPolicy(nil),
		MaxInFlight:  c.DispatchMaxInFlight,
	}
	if self := os.Getenv("AWS_LAMBDA_FUNCTION_NAME"); self != "" {
		opts.Waker = &dispatch.Limited{Now: time.Now, Next: &dispatch.LambdaWaker{Client: lc, Function: self, Logger: logger}}
	}
	// Claims only, of declared push queues.
	q, decls := c.Queue(s, func(o *queue.Options) {
		o.ListCacheFor = dispatchListCache
		o.BackgroundCleanup = false // a run's cleanups are done before it ends
	})
	return dispatch.New(q, dispatch.NewDeclared(decls, 0), opts), nil
}

// newWaker returns the submit function's wake of the dispatch function
// (S3Q_DISPATCH_FUNCTION, at most one Invoke per queue and second per
// container), or nil when none is configured.
func newWaker(ctx context.Context, c config.Config, logger *slog.Logger) (dispatch.Waker, error) {
	if c.DispatchFunction == "" {
		return nil, nil
	}
	awsCfg, err := c.AWS(ctx)
	if err != nil {
		return nil, err
	}
	return &dispatch.Limited{Now: time.Now, Next: &dispatch.LambdaWaker{Client: c.LambdaClient(awsCfg), Function: c.DispatchFunction, Logger: logger}}, nil
}

// wireLocalDispatch gives d the in-process dispatcher of Parts.Local, on
// d.Queue: the declared push queues (read again at most every second)
// that the push bindings allow, URL targets signed with secrets (http:// allowed),
// Lambda targets invoked at c.LambdaEndpoint with dummy credentials (else
// AWS Lambda with the default chain); submits and retries wake it in this
// process.
func (d *Deps) wireLocalDispatch(ctx context.Context, c config.Config, secrets dispatch.SecretSource) error {
	var lopts []func(*awsconfig.LoadOptions) error
	if c.LambdaEndpoint != "" {
		lopts = append(lopts, awsconfig.WithRegion("us-east-1"),
			awsconfig.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("dev", "dev", "")))
	}
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx, lopts...)
	if err != nil {
		return err
	}
	lc := c.LambdaClient(awsCfg)
	if secrets == nil {
		secrets = dispatch.StaticSecrets{}
	}
	dp := dispatch.New(d.Queue, dispatch.NewDeclared(d.Queues, time.Second), dispatch.Options{
		Logger:      d.Logger,
		Lambda:      &dispatch.Lambda{Client: lc},
		HTTP:        dispatch.NewHTTP(secrets, true),
		Policy:      c.PushPolicy(nil),
		MaxInFlight: c.DispatchMaxInFlight,
	})
	local := dispatch.NewLocal(ctx, dp)
	dp.SetWaker(local)
	d.Dispatcher, d.Waker, d.Targets = dp, local, dp.Targets()
	return nil
}

// localSecretCheck checks the secrets of s3q dev's URL targets: those of
// secrets when it can check them (StaticSecrets can), else none.
func localSecretCheck(secrets dispatch.SecretSource) dispatch.SecretChecker {
	if sc, ok := secrets.(dispatch.SecretChecker); ok {
		return sc
	}
	if secrets == nil {
		return dispatch.StaticSecrets{}
	}
	return nil
}
