package queue

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"time"

	"github.com/s3q/s3q/shared/store"
)

// Wait holds: how one queue's waits are bounded apart from every other
// queue's.
//
// A wait (a submit that waits for its outcome, a claim that long-polls)
// holds a function for up to its length, and every queue's waits run in
// one function whose concurrency is capped: without a bound per queue,
// the callers of one queue could hold all of it. HoldWait takes one of a
// queue's max holds, q/{queue}/waits/{0000..max-1}, each held (the time
// its wait ends by, and a token) or free (the body "{}"), the way a
// concurrency slot is taken (side_slot.go): create it (If-None-Match) or
// swap a free one (If-Match on the ETag its LIST saw). Release frees it by
// compare-and-swap on the ETag the take made. A hold whose release was
// lost (a crash) is taken over by compare-and-swap once its end has
// passed. So at most max waits of a queue are held at once, whatever
// the other queues do, and a hold changes hands only by conditional
// writes. Holds are never deleted (as slots are not).
//
// Cost per wait: a LIST of the holds (one page) and two PUTs (take and
// release); when every hold looks taken, up to maxSlotChecks GETs.

// WaitHold is one of a queue's wait holds, taken by HoldWait.
type WaitHold struct {
	q         *Queue
	key, etag string
}

// waitHoldRecord is the body of a held wait hold.
type waitHoldRecord struct {
	Until time.Time `json:"until"`
	Token string    `json:"token"`
}

// HoldWait takes one of the max wait holds of queue name, at now, for a
// wait that ends by until; the caller releases it when the wait ends.
// When all max are held it returns ErrTooManyWaits (and the caller
// should not wait). max must be 1 to 1000.
func (q *Queue) HoldWait(ctx context.Context, name string, max int, until, now time.Time) (*WaitHold, error) {
	if err := ValidateQueueName(name); err != nil {
		return nil, err
	}
	if max < 1 || max > store.MaxListLimit {
		return nil, invalid("max", "must be between 1 and %d", store.MaxListLimit)
	}
	now = norm(now)
	body, err := json.Marshal(waitHoldRecord{Until: norm(until), Token: rand.Text()})
	if err != nil {
		return nil, fmt.Errorf("encode wait hold: %w", err)
	}
	page, err := q.store.List(ctx, waitPrefix(name), "", store.MaxListLimit)
	if err != nil {
		return nil, fmt.Errorf("list wait holds of %s: %w", name, err)
	}
	listed := make(map[string]store.Info, len(page.Items))
	for _, it := range page.Items {
		listed[it.Key] = it
	}
	var held []string
	for _, n := range mrand.Perm(max) {
		key := waitKey(name, n)
		info, seen := listed[key]
		var etag string
		switch {
		case !seen:
			etag, err = store.CreateOwn(ctx, q.store, key, body, nil)
		case slotIsFree(info.Size):
			etag, err = store.SwapOwn(ctx, q.store, key, body, info.ETag, nil)
		default:
			held = append(held, key)
			continue
		}
		if err == nil {
			return &WaitHold{q: q, key: key, etag: etag}, nil
		}
		if !errors.Is(err, store.ErrPrecondition) && !errors.Is(err, store.ErrNotFound) {
			return nil, fmt.Errorf("take wait hold %s: %w", key, err)
		}
	}
	// Every hold looks taken: take over one whose wait has ended.
	for i, key := range held {
		if i == maxSlotChecks {
			break
		}
		obj, err := q.store.Get(ctx, key)
		if err != nil {
			if errors.Is(err, store.ErrNotFound) {
				continue
			}
			return nil, fmt.Errorf("get wait hold %s: %w", key, err)
		}
		var rec waitHoldRecord
		if !slotIsFree(int64(len(obj.Body))) && json.Unmarshal(obj.Body, &rec) == nil && !now.After(rec.Until) {
			continue // held by a wait that is not over
		}
		etag, err := store.SwapOwn(ctx, q.store, key, body, obj.ETag, nil)
		if err == nil {
			return &WaitHold{q: q, key: key, etag: etag}, nil
		}
		if !errors.Is(err, store.ErrPrecondition) && !errors.Is(err, store.ErrNotFound) {
			return nil, fmt.Errorf("take over wait hold %s: %w", key, err)
		}
	}
	return nil, fmt.Errorf("queue %s holds %d waits, its most: %w", name, max, ErrTooManyWaits)
}

// Release frees the hold, if it still holds what its take wrote
// (If-Match). Best effort: a hold left taken is taken over once its wait's
// end has passed.
func (h *WaitHold) Release(ctx context.Context) error {
	if h == nil {
		return nil
	}
	if _, err := h.q.store.PutIfMatch(ctx, h.key, freeSlot, h.etag); err != nil {
		return fmt.Errorf("release wait hold %s: %w", h.key, err)
	}
	return nil
}
