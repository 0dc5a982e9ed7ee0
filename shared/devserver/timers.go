package devserver

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/s3q/s3q/shared/lambdafn"
)

// runTimers fires sweep-expired and schedule-tick every interval until ctx
// is done, as the stack's two EventBridge rules do. An error of a timer
// function is logged (by the function) and the next run goes on.
//
// Each function runs on its own, as each rule invokes its own function: a
// sweep that stays while work is near due (lambdafn.Deps.SweepStay) never
// holds up the tick. One run of each at a time, as the stack's reserved
// concurrency of 1 keeps them (two sweeps at once would publish an owed
// event twice): a fire while its function's run is still going runs when
// that one ends, as Lambda retries a throttled invocation.
//
// A wake (sweepWaker: a submit made a deadline within the stay) starts a
// sweep-expired run at once when none is going, or as soon as the one
// going ends: the run of the last fire, late, which stays until the next
// fire as that one would have.
func runTimers(ctx context.Context, interval time.Duration, functions map[string]*function, log *slog.Logger, dispatchAll func(), wake <-chan struct{}) {
	t := time.NewTicker(interval)
	defer t.Stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	names := []string{lambdafn.SweepExpired, lambdafn.ScheduleTick}
	running := map[string]chan struct{}{}
	for _, name := range names {
		running[name] = make(chan struct{}, 1)
	}
	ended := make(chan struct{}, 4)
	owed := map[string]time.Time{} // fires held while their function's run goes on
	fire := func(name string, at time.Time) {
		select {
		case running[name] <- struct{}{}:
			delete(owed, name)
		default:
			owed[name] = at // its run still going: this fire runs when it ends
			return
		}
		payload, _ := json.Marshal(scheduledEvent(name, at))
		wg.Add(1)
		go func() {
			defer func() {
				<-running[name]
				wg.Done()
				select {
				case ended <- struct{}{}:
				default:
				}
			}()
			if _, err := functions[name].invoke(ctx, payload); err != nil && ctx.Err() == nil {
				log.Debug("timer function failed", "function", name, "error", err)
			}
		}()
	}
	last := time.Now() // the last fire (the start: the ticker's first is an interval later)
	woken := false
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			last = now
			woken = false // this fire's sweep sees what the wake was for
			dispatchAll() // the dispatch rule: every push queue, in the background
			for _, name := range names {
				fire(name, now)
			}
		case <-wake:
			woken = true
		case <-ended:
		}
		for name, at := range owed {
			if len(running[name]) == 0 {
				fire(name, at)
			}
		}
		if woken && len(running[lambdafn.SweepExpired]) == 0 {
			woken = false
			fire(lambdafn.SweepExpired, last)
		}
	}
}

// sweepWaker is the dev server's lambdafn.SweepWaker: a wake for
// runTimers.
type sweepWaker chan struct{}

// WakeSweep asks runTimers for a sweep-expired run; it never blocks.
func (w sweepWaker) WakeSweep() {
	select {
	case w <- struct{}{}:
	default:
	}
}

// scheduledEvent is the EventBridge "Scheduled Event" the rule of a timer
// function sends at now.
func scheduledEvent(function string, now time.Time) events.EventBridgeEvent {
	return events.EventBridgeEvent{
		Version:    "0",
		ID:         rand.Text(),
		DetailType: "Scheduled Event",
		Source:     "aws.events",
		AccountID:  "000000000000",
		Time:       now.UTC().Truncate(time.Second),
		Region:     "us-east-1",
		Resources:  []string{"arn:aws:events:us-east-1:000000000000:rule/s3q-dev-" + function},
		Detail:     json.RawMessage(`{}`),
	}
}
