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
// holds up the tick. A function with two runs still going skips a fire.
func runTimers(ctx context.Context, interval time.Duration, functions map[string]*function, log *slog.Logger, dispatchAll func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	names := []string{lambdafn.SweepExpired, lambdafn.ScheduleTick}
	running := map[string]chan struct{}{}
	for _, name := range names {
		running[name] = make(chan struct{}, 2)
	}
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			dispatchAll() // the dispatch rule: every push queue, in the background
			for _, name := range names {
				select {
				case running[name] <- struct{}{}:
				default:
					continue // two runs still going: this fire is theirs
				}
				payload, _ := json.Marshal(scheduledEvent(name, now))
				wg.Add(1)
				go func() {
					defer func() { <-running[name]; wg.Done() }()
					if _, err := functions[name].invoke(ctx, payload); err != nil && ctx.Err() == nil {
						log.Debug("timer function failed", "function", name, "error", err)
					}
				}()
			}
		}
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
