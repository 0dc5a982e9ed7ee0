package faultrun

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/s3q/s3q/shared/client"
	"github.com/s3q/s3q/shared/devserver"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/s3local"
	"github.com/s3q/s3q/shared/s3local/faultproxy"
	"github.com/s3q/s3q/shared/store"
)

// Config says what a run does. Zero fields take their defaults.
type Config struct {
	// Server is the S3 server the run stores into (versitygw in make test
	// and make bench). Required.
	Server *s3local.Server
	// Mix names the faults (faultproxy.Mix): "none", "lost_answers" or
	// "mixed". Defaults to "mixed".
	Mix string
	// Rate is the share of S3 requests that meet a fault. Defaults to 0.10.
	Rate float64
	// Seed seeds the proxy's faults and the run's own choices. Defaults
	// to 1.
	Seed uint64
	// Submits is how many submits the run makes: a third plain, a third
	// with a TTL (TTL), a third with dedup keys each used by three
	// submits. Defaults to 150.
	Submits int
	// Submitters is how many goroutines submit. Defaults to 4.
	Submitters int
	// Workers is how many workers claim and complete. Defaults to 8.
	Workers int
	// CrashRate is the share of claimed tasks a worker abandons mid-lease,
	// as a crashed worker would; the run's first claim is always
	// abandoned. Defaults to 0.05.
	CrashRate float64
	// FailRate is the share of claimed tasks a worker fails (retryably).
	// Defaults to 0.05.
	FailRate float64
	// LeaseFor is the workers' lease length. Defaults to 2s.
	LeaseFor time.Duration
	// TTL is the longest time to live of a third of the tasks; each gets
	// 1/5, 2/5 ... or all of it, so that some expire before a worker
	// claims them. Defaults to 5s.
	TTL time.Duration
	// APILostAnswers is the share of the clients' API requests whose
	// answer is lost on the way back (the request was served; the client
	// sees a network error and retries with the same id or lease token).
	// Negative means none. Defaults to 0.02.
	APILostAnswers float64
	// Budget bounds the run from start to the end of the drain (the audit
	// comes after). Defaults to 60s.
	Budget time.Duration
	// Logf, when set, receives progress lines. Defaults to none.
	Logf func(format string, args ...any)
}

func (c *Config) defaults() error {
	if c.Server == nil {
		return errors.New("faultrun: Config.Server is required")
	}
	if c.Mix == "" {
		c.Mix = "mixed"
	}
	if c.Rate == 0 {
		c.Rate = 0.10
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	if c.Submits <= 0 {
		c.Submits = 150
	}
	if c.Submitters <= 0 {
		c.Submitters = 4
	}
	if c.Workers <= 0 {
		c.Workers = 8
	}
	if c.CrashRate == 0 {
		c.CrashRate = 0.05
	}
	if c.FailRate == 0 {
		c.FailRate = 0.05
	}
	if c.LeaseFor <= 0 {
		c.LeaseFor = 2 * time.Second
	}
	if c.TTL <= 0 {
		c.TTL = 5 * time.Second
	}
	if c.APILostAnswers == 0 {
		c.APILostAnswers = 0.02
	}
	if c.Budget <= 0 {
		c.Budget = 60 * time.Second
	}
	if c.Logf == nil {
		c.Logf = func(string, ...any) {}
	}
	return nil
}

// Report is what a run saw. The first fields are the audit: a run is
// clean when Duplicates, DedupViolations, Lost, RunTwice, HTTP500 and
// WrongAnswers are all zero (Report.Err).
type Report struct {
	Mix  string
	Rate float64
	// Submits is how many submits were made; Accepted how many the client
	// saw succeed (after its retries), SubmitErrors how many it gave up on.
	Submits, Accepted, SubmitErrors int
	// Tasks is how many task records the bucket holds at the end.
	Tasks int
	// Duplicates counts task records beyond the first made by one submit
	// (one submit number in the input, one id).
	Duplicates int
	// DedupViolations counts tasks created with a dedup key while another
	// task holding that key was still live: the later submit's answer
	// came back before the earlier task's end.
	DedupViolations int
	// Lost counts accepted submits whose task is not in the bucket, or
	// did not finish (completed, failed, cancelled or expired) by the
	// end of the run; Unfinished is the second part.
	Lost, Unfinished int
	// RunTwice counts claims that started a task again while an earlier
	// claim's lease on it was still valid, and versions that made a
	// finished task live again, read from the versions of its record.
	RunTwice int
	// HTTP500 counts answers with status 500 the clients received.
	HTTP500 int
	// WrongAnswers counts submits answered, not as deduplicated, with a
	// task of another id than the one they sent.
	WrongAnswers int
	// APILost counts API answers lost on their way to a client.
	APILost int
	// ClientGaveUp counts the times the client gave up retrying a 5xx or
	// network error and the run's own retry took over.
	ClientGaveUp int

	// Executions counts claims the workers received; Crashes those they
	// abandoned mid-lease; Completed and Failed their lease operations that
	// succeeded; LeaseErrors the ones that ended in an error.
	Executions, Crashes, Completed, Failed, LeaseErrors int
	// Statuses counts the task records by status at the end.
	Statuses map[queue.Status]int
	// Faults is what the proxy injected.
	Faults faultproxy.Counts
	// Elapsed is the run's time, audit included.
	Elapsed time.Duration
	// OutOfBudget is true when Config.Budget ran out before every task
	// had finished (those count as lost): on a loaded machine, a longer
	// budget may be all it needs.
	OutOfBudget bool
	// Problems describes each audit finding (at most a few per kind).
	Problems []string
}

// Line is the report as one bench line.
func (r Report) Line() string {
	return fmt.Sprintf("bench faults mix=%s rate=%.2f submits=%d tasks=%d duplicates=%d dedup_violations=%d lost=%d run_twice=%d http_500=%d",
		r.Mix, r.Rate, r.Submits, r.Tasks, r.Duplicates, r.DedupViolations, r.Lost, r.RunTwice, r.HTTP500)
}

// Detail is what else the run saw, for a log.
func (r Report) Detail() string {
	var st []string
	for s, n := range r.Statuses {
		st = append(st, fmt.Sprintf("%s=%d", s, n))
	}
	sort.Strings(st)
	return fmt.Sprintf("out_of_budget=%v wrong_answers=%d accepted=%d submit_errors=%d unfinished=%d executions=%d crashes=%d completed=%d failed=%d lease_errors=%d api_lost_answers=%d client_gave_up=%d statuses[%s] faults[%v] elapsed=%s",
		r.OutOfBudget, r.WrongAnswers, r.Accepted, r.SubmitErrors, r.Unfinished, r.Executions, r.Crashes, r.Completed, r.Failed, r.LeaseErrors, r.APILost, r.ClientGaveUp,
		strings.Join(st, " "), r.Faults, r.Elapsed.Round(time.Millisecond))
}

// Err returns an error naming each audit finding, or nil for a clean run.
func (r Report) Err() error {
	if r.Duplicates+r.DedupViolations+r.Lost+r.RunTwice+r.HTTP500+r.WrongAnswers == 0 {
		return nil
	}
	return fmt.Errorf("faultrun: %s\n%s", r.Line(), strings.Join(r.Problems, "\n"))
}

// Run runs the queue under faults and audits what it left: versitygw (or
// cfg.Server) behind a faultproxy, the dev server stack (the HTTP API
// through the Lambda handlers, sweep and tick every second) on the proxy's
// endpoint, the Go client submitting with ids (a third with a TTL, a third
// with dedup keys that repeat), and workers that claim, heartbeat,
// complete, fail and sometimes crash mid-lease. Some API answers are lost
// on their way to the client too (APILostAnswers). Clients retry 503s,
// other 5xx and network errors with the same id or lease token, as the
// API asks. When the submits are done and every accepted task has finished
// (or the budget is spent), the faults stop and the bucket is audited
// directly. An error means the run could not be made; findings are in
// the Report.
func Run(ctx context.Context, cfg Config) (Report, error) {
	if err := cfg.defaults(); err != nil {
		return Report{}, err
	}
	rates, err := faultproxy.Mix(cfg.Mix, cfg.Rate)
	if err != nil {
		return Report{}, err
	}
	start := time.Now()
	rep := Report{Mix: cfg.Mix, Rate: cfg.Rate, Submits: cfg.Submits}
	srv := cfg.Server
	prefix := "faultrun-" + strings.ToLower(rand.Text()[:12]) + "/"

	proxy, err := faultproxy.Start(faultproxy.Options{Target: srv.Endpoint, KeyPrefix: prefix, Seed: cfg.Seed})
	if err != nil {
		return rep, err
	}
	defer proxy.Close()

	devCtx, stopDev := context.WithCancel(ctx)
	defer stopDev()
	started := make(chan string, 1)
	devDone := make(chan error, 1)
	go func() {
		devDone <- devserver.Run(devCtx, devserver.Options{
			Addr: "127.0.0.1:0", Endpoint: proxy.URL, Bucket: srv.Bucket, Prefix: prefix, Region: srv.Region,
			AccessKey: srv.AccessKey, SecretKey: srv.SecretKey, TickInterval: time.Second,
			Out: io.Discard, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			Started: func(u string) { started <- u },
		})
	}()
	var baseURL string
	select {
	case baseURL = <-started:
	case err := <-devDone:
		return rep, fmt.Errorf("faultrun: dev server: %w", err)
	case <-time.After(30 * time.Second):
		return rep, errors.New("faultrun: the dev server did not start within 30s")
	}
	defer func() {
		stopDev()
		<-devDone
	}()

	tr := &apiTransport{next: http.DefaultTransport, lostRate: cfg.APILostAnswers, rng: mrand.New(mrand.NewPCG(cfg.Seed, 0xa91))}
	hc := &http.Client{Timeout: 30 * time.Second, Transport: tr}
	cl, err := client.New(ctx, baseURL, client.Options{HTTPClient: hc, RetryBackoff: 50 * time.Millisecond})
	if err != nil {
		return rep, err
	}
	if err := proxy.SetRates(rates); err != nil {
		return rep, err
	}

	runCtx, cancelRun := context.WithTimeout(ctx, cfg.Budget)
	defer cancelRun()
	r := &run{cfg: cfg, cl: cl, submits: make([]submitted, cfg.Submits)}

	// Workers run until the drain ends.
	workCtx, stopWork := context.WithCancel(runCtx)
	var workers sync.WaitGroup
	for w := range cfg.Workers {
		workers.Go(func() { r.work(workCtx, w) })
	}

	var next atomic.Int64
	var submitters sync.WaitGroup
	for range cfg.Submitters {
		submitters.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= cfg.Submits || runCtx.Err() != nil {
					return
				}
				r.submit(runCtx, i)
			}
		})
	}
	submitters.Wait()
	cfg.Logf("faultrun: submits done after %s", time.Since(start).Round(time.Millisecond))

	// Drain: until every accepted task has finished, read straight from
	// the server.
	direct := srv.Store(prefix)
	for runCtx.Err() == nil {
		more, err := anyUnfinished(runCtx, direct)
		if err == nil && !more {
			break
		}
		select {
		case <-runCtx.Done():
		case <-time.After(500 * time.Millisecond):
		}
	}
	rep.OutOfBudget = runCtx.Err() != nil
	stopWork()
	workers.Wait()
	_ = proxy.SetRates(faultproxy.Rates{})
	cfg.Logf("faultrun: drained after %s", time.Since(start).Round(time.Millisecond))

	rep.Faults = proxy.Counts()
	rep.HTTP500, rep.APILost = int(tr.n500.Load()), int(tr.lost.Load())
	rep.Executions, rep.Crashes = int(r.executions.Load()), int(r.crashes.Load())
	rep.Completed, rep.Failed, rep.LeaseErrors = int(r.completed.Load()), int(r.failed.Load()), int(r.leaseErrors.Load())
	rep.ClientGaveUp = int(r.clientGaveUp.Load())
	if err := audit(ctx, direct, r.submits, &rep); err != nil {
		return rep, err
	}
	rep.Elapsed = time.Since(start)
	return rep, nil
}

// anyUnfinished reports whether some task record is pending or running;
// it stops at the first.
func anyUnfinished(ctx context.Context, st store.Store) (bool, error) {
	for info, err := range store.All(ctx, st, queue.QueuesPrefix) {
		if err != nil {
			return false, err
		}
		if !queue.IsTaskKey(info.Key) {
			continue
		}
		obj, err := st.Get(ctx, info.Key)
		if err != nil {
			return false, err
		}
		var t queue.Task
		if err := json.Unmarshal(obj.Body, &t); err != nil {
			return false, err
		}
		if !t.Status.Terminal() {
			return true, nil
		}
	}
	return false, nil
}
