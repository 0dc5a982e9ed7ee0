package dispatch

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/s3q/s3q/shared/store"
)

// SlotKey is the key of concurrency slot n of a push queue.
func SlotKey(queueName string, n int) string {
	return fmt.Sprintf("push/%s/slots/%04d.json", queueName, n)
}

// slotState is the body of a slot: held by Holder until Until, free when
// Until is zero or past.
type slotState struct {
	Holder string    `json:"holder,omitempty"`
	Until  time.Time `json:"until"`
}

// slotHold is a slot this process holds.
type slotHold struct {
	key, etag, holder string
}

// known is what this process last saw of a slot.
type known struct {
	etag   string // "" when the slot does not exist
	state  slotState
	seenAt time.Time
}

// slots are the concurrency slots of the push queues. A delivery takes a
// slot before its claim, with Until = the claim's now + the lease, so the
// slot is held at least as long as the claimed task's lease (the claim
// computes the lease from the same now): a dispatcher that dies holding
// one frees it exactly when the task may be claimed again. Taking and
// freeing are conditional writes, so of racing dispatchers one wins each
// slot, and no more than max_concurrency deliveries run at once.
//
// What this process last wrote or read of each slot is kept, so taking a
// free slot is one PUT (If-Match) and freeing it another; a slot seen
// held is read again at most once a second.
type slots struct {
	st store.Store

	mu    sync.Mutex
	known map[string]known
}

func newSlots(st store.Store) *slots { return &slots{st: st, known: map[string]known{}} }

// take takes a free slot of the queue's n until until, or returns nil when
// all are held. An unclassified error MAY have taken a slot, which then
// stays held until until: never more deliveries than slots.
func (s *slots) take(ctx context.Context, queueName string, n int, now, until time.Time) (*slotHold, error) {
	first := rand.IntN(n)
	for i := range n {
		key := SlotKey(queueName, (first+i)%n)
		s.mu.Lock()
		k, ok := s.known[key]
		s.mu.Unlock()
		if ok && k.state.Until.After(now) && now.Sub(k.seenAt) < time.Second {
			continue // seen held a moment ago
		}
		if !ok || k.state.Until.After(now) {
			var err error
			if k, err = s.read(ctx, key, now); err != nil {
				return nil, err
			}
			if k.state.Until.After(now) {
				continue
			}
		}
		next := slotState{Holder: newHolder(), Until: until}
		body, _ := json.Marshal(next)
		var etag string
		var err error
		if k.etag == "" {
			etag, err = s.st.PutIfAbsent(ctx, key, body)
		} else {
			etag, err = s.st.PutIfMatch(ctx, key, body, k.etag)
		}
		if errors.Is(err, store.ErrPrecondition) {
			s.forget(key)
			continue // another dispatcher took it
		}
		if err != nil {
			s.forget(key)
			return nil, fmt.Errorf("take %s: %w", key, err)
		}
		s.remember(key, known{etag: etag, state: next, seenAt: now})
		return &slotHold{key: key, etag: etag, holder: next.Holder}, nil
	}
	return nil, nil
}

// release frees a slot this process holds. A failure leaves it held until
// its Until: safe, only slower.
func (s *slots) release(ctx context.Context, h *slotHold) {
	if h == nil {
		return
	}
	body, _ := json.Marshal(slotState{})
	etag, err := s.st.PutIfMatch(ctx, h.key, body, h.etag)
	if err != nil {
		s.forget(h.key)
		return
	}
	s.remember(h.key, known{etag: etag, seenAt: time.Time{}})
}

func (s *slots) read(ctx context.Context, key string, now time.Time) (known, error) {
	obj, err := s.st.Get(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		k := known{seenAt: now}
		s.remember(key, k)
		return k, nil
	}
	if err != nil {
		return known{}, fmt.Errorf("read %s: %w", key, err)
	}
	k := known{etag: obj.ETag, seenAt: now}
	if err := json.Unmarshal(obj.Body, &k.state); err != nil {
		k.state = slotState{} // unreadable: treat as free, the CAS decides
	}
	s.remember(key, k)
	return k, nil
}

func (s *slots) remember(key string, k known) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.known[key] = k
}

func (s *slots) forget(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.known, key)
}

func newHolder() string {
	var b [8]byte
	_, _ = crand.Read(b[:])
	return hex.EncodeToString(b[:])
}
