package dispatch

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/store"
)

// The runner lease of a push queue (queue.DispatchRunnerKey) bounds how
// many dispatch runs wait for a queue's future tasks: one. Any run
// delivers what is due when it looks; a run that finds the queue's next
// task due within Options.Soon stays with the queue only if it takes the
// queue's runner lease, and keeps it (renewing it by compare-and-swap)
// while there is work due soon; a run that finds the lease held by
// another leaves the queue to it. The holder frees the lease when it
// leaves, and hands the queue on (a wake) when its own time ends with
// work still due soon. A holder that dies leaves the lease to lapse
// after RunnerLease; the next wake or the minute rule takes it over.
//
// Cost: a run that stays takes the lease (a GET and a PUT), renews it
// every RunnerLease/2 (a PUT) and frees it (a PUT); a run that finds it
// held makes one GET. A queue with nothing due soon never touches it.

// runnerState is the body of a runner lease: held by Holder until Until,
// free when Until is zero or past.
type runnerState struct {
	Holder string    `json:"holder,omitempty"`
	Until  time.Time `json:"until"`
}

// runnerHold is a runner lease this run holds.
type runnerHold struct {
	key, etag, holder string
	until             time.Time
}

// takeRunner takes the queue's runner lease until now + RunnerLease, or
// returns nil when another run holds it. An unclassified error MAY have
// taken it (it then lapses unused): the caller leaves the queue.
func (d *Dispatcher) takeRunner(ctx context.Context, name string, now time.Time) (*runnerHold, error) {
	key := queue.DispatchRunnerKey(name)
	obj, err := d.st.Get(ctx, key)
	etag := ""
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return nil, fmt.Errorf("read runner lease: %w", err)
	default:
		var cur runnerState
		_ = json.Unmarshal(obj.Body, &cur) // unreadable: free; the swap decides
		if cur.Until.After(now) {
			return nil, nil
		}
		etag = obj.ETag
	}
	h := &runnerHold{key: key, holder: newHolder(), until: now.Add(d.opts.RunnerLease)}
	body, _ := json.Marshal(runnerState{Holder: h.holder, Until: h.until})
	if etag == "" {
		h.etag, err = store.CreateOwn(ctx, d.st, key, body, nil)
	} else {
		h.etag, err = store.SwapOwn(ctx, d.st, key, body, etag, nil)
	}
	if errors.Is(err, store.ErrPrecondition) || errors.Is(err, store.ErrNotFound) {
		return nil, nil // another run took it a moment ago
	}
	if err != nil {
		return nil, fmt.Errorf("take runner lease: %w", err)
	}
	return h, nil
}

// renew extends a held runner lease when less than half of it is left; it
// returns false when the lease was lost (taken over after it lapsed, or
// the write failed: the run then leaves the queue).
func (d *Dispatcher) renew(ctx context.Context, h *runnerHold, now time.Time) bool {
	if h.until.Sub(now) > d.opts.RunnerLease/2 {
		return true
	}
	until := now.Add(d.opts.RunnerLease)
	body, _ := json.Marshal(runnerState{Holder: h.holder, Until: until})
	etag, err := store.SwapOwn(ctx, d.st, h.key, body, h.etag, nil)
	if err != nil {
		return false
	}
	h.etag, h.until = etag, until
	return true
}

// release frees a held runner lease. A failure leaves it to lapse.
func (d *Dispatcher) release(ctx context.Context, h *runnerHold) {
	body, _ := json.Marshal(runnerState{})
	_, _ = d.st.PutIfMatch(ctx, h.key, body, h.etag)
}

func newHolder() string {
	var b [8]byte
	_, _ = crand.Read(b[:])
	return hex.EncodeToString(b[:])
}
