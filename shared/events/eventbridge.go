// Package events delivers s3q's task events (queue.Event): to an
// EventBridge bus (EventBridge), to the log (Log), to an in-memory ring of
// recent events for `s3q dev`'s GET /events (Ring), or to several at once
// (Multi). Each is a queue.EventPublisher.
package events

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"

	"github.com/s3q/s3q/shared/queue"
)

// MaxBatch is the most entries one PutEvents request carries.
const MaxBatch = 10

// PutEventsAPI is the part of the EventBridge client the publisher uses;
// *eventbridge.Client implements it.
type PutEventsAPI interface {
	PutEvents(ctx context.Context, in *eventbridge.PutEventsInput, optFns ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error)
}

var _ PutEventsAPI = (*eventbridge.Client)(nil)

// EventBridgeOptions tune an EventBridge publisher.
type EventBridgeOptions struct {
	// Attempts is how many times an entry is sent before it is reported
	// undelivered (the sweep then tries again next time). Defaults to 4.
	Attempts int
	// Backoff is the wait before attempt n+1 of the entries that failed
	// (n >= 1). Defaults to 100ms·2^(n-1).
	Backoff func(n int) time.Duration
}

// EventBridge publishes events to one bus with PutEvents, source "s3q",
// detail-type "Task Expired" or "Task Dead-Lettered", in batches of at
// most MaxBatch. Entries that fail (FailedEntryCount, an ErrorCode per
// entry) are sent again with backoff; a call that fails as a whole is
// retried by the SDK's own retryer and then reported for every entry of
// its batch.
type EventBridge struct {
	api  PutEventsAPI
	bus  string
	opts EventBridgeOptions
}

var _ queue.EventPublisher = (*EventBridge)(nil)

// NewEventBridge returns a publisher to bus ("default", a name or an ARN)
// through api.
func NewEventBridge(api PutEventsAPI, bus string, opts EventBridgeOptions) *EventBridge {
	if opts.Attempts <= 0 {
		opts.Attempts = 4
	}
	if opts.Backoff == nil {
		opts.Backoff = func(n int) time.Duration { return 100 * time.Millisecond << (n - 1) }
	}
	return &EventBridge{api: api, bus: bus, opts: opts}
}

// NewEventBridgeFromConfig returns a publisher to bus with an EventBridge
// client made from cfg.
func NewEventBridgeFromConfig(cfg aws.Config, bus string, opts EventBridgeOptions, optFns ...func(*eventbridge.Options)) *EventBridge {
	return NewEventBridge(eventbridge.NewFromConfig(cfg, optFns...), bus, opts)
}

// EntryError is why EventBridge refused one entry.
type EntryError struct {
	Code, Message string
}

func (e *EntryError) Error() string {
	return fmt.Sprintf("eventbridge entry: %s: %s", e.Code, e.Message)
}

// Publish implements queue.EventPublisher. It returns nil errors when
// every event was delivered, else one error per event (nil where
// delivered). The call itself fails only when ctx ends.
func (p *EventBridge) Publish(ctx context.Context, evs []queue.Event) ([]error, error) {
	errs := make([]error, len(evs))
	failed := false
	for start := 0; start < len(evs); start += MaxBatch {
		end := min(start+MaxBatch, len(evs))
		p.batch(ctx, evs[start:end], errs[start:end])
		for _, err := range errs[start:end] {
			failed = failed || err != nil
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	if !failed {
		return nil, nil
	}
	return errs, nil
}

// batch sends up to MaxBatch events, resending the entries that failed,
// and fills errs.
func (p *EventBridge) batch(ctx context.Context, evs []queue.Event, errs []error) {
	pending := make([]int, len(evs))
	for i := range pending {
		pending[i] = i
	}
	for attempt := 1; len(pending) > 0; attempt++ {
		entries := make([]types.PutEventsRequestEntry, len(pending))
		for j, i := range pending {
			entries[j] = p.entry(evs[i])
		}
		out, err := p.api.PutEvents(ctx, &eventbridge.PutEventsInput{Entries: entries})
		var again []int
		switch {
		case err != nil:
			for _, i := range pending {
				errs[i] = fmt.Errorf("put events: %w", err)
			}
			return // the SDK has retried the call already
		case len(out.Entries) != len(entries):
			for _, i := range pending {
				errs[i] = fmt.Errorf("put events: %d results for %d entries", len(out.Entries), len(entries))
			}
			return
		}
		for j, res := range out.Entries {
			i := pending[j]
			if res.ErrorCode == nil || *res.ErrorCode == "" {
				errs[i] = nil
				continue
			}
			errs[i] = &EntryError{Code: *res.ErrorCode, Message: aws.ToString(res.ErrorMessage)}
			again = append(again, i)
		}
		if len(again) == 0 || attempt >= p.opts.Attempts {
			return
		}
		if err := sleep(ctx, p.opts.Backoff(attempt)); err != nil {
			return
		}
		pending = again
	}
}

func (p *EventBridge) entry(ev queue.Event) types.PutEventsRequestEntry {
	e := types.PutEventsRequestEntry{
		Source:     aws.String(queue.EventSource),
		DetailType: aws.String(ev.DetailType),
		Detail:     aws.String(string(ev.Detail)),
		Resources:  []string{},
	}
	if p.bus != "" {
		e.EventBusName = aws.String(p.bus)
	}
	if !ev.Time.IsZero() {
		e.Time = aws.Time(ev.Time)
	}
	return e
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Multi publishes every event to each publisher in turn; an event counts
// as delivered when every publisher delivered it.
func Multi(pubs ...queue.EventPublisher) queue.EventPublisher { return multi(pubs) }

type multi []queue.EventPublisher

func (m multi) Publish(ctx context.Context, evs []queue.Event) ([]error, error) {
	var out []error
	for _, p := range m {
		errs, err := p.Publish(ctx, evs)
		if err != nil {
			return nil, err
		}
		if errs == nil {
			continue
		}
		if out == nil {
			out = make([]error, len(evs))
		}
		for i := range out {
			if i < len(errs) {
				out[i] = errors.Join(out[i], errs[i])
			}
		}
	}
	return out, nil
}
