package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/s3q/s3q/shared/store"
)

// Concurrency slots: how a queue's max_concurrency holds for every claim.
//
// A queue with max_concurrency N has N slots, slots/{queue}/{0000..N-1},
// each held (naming a task, its lease token and the lease's expiry) or
// free (the body "{}"). A claim takes a slot before it starts a task: it
// creates it (If-None-Match) or swaps a free one (If-Match on the ETag its
// LIST saw), and only then writes the task record, which names the slot
// and its ETag (slot_key, slot_etag). When the task leaves running, the
// write that ends its lease frees the slot by compare-and-swap on that
// ETag. So at most N tasks hold a valid lease at once: each needs a slot,
// and a slot changes hands only by conditional writes.
//
// Slots are never deleted: a key is never created again after a delete
// (versitygw answers If-None-Match with 412 while a delete marker is the
// current version, and the layout never depends on conditional DELETE).
//
// A slot whose freeing was lost (a crash) is taken over by compare-and-swap
// once its recorded lease expiry has passed and the task it names no
// longer holds it under a valid lease; since both the holder's release and
// a takeover are conditional on the same ETag, one of them loses.
//
// Cost per task of a queue with max_concurrency: one PUT to take a slot
// and one PUT to free it, and a LIST of the slots that serves the claims
// of a process for Options.ListCacheFor (1s), as the index LISTs do:
// +2 PUT-class requests and an amortised LIST. When every slot is held,
// a claim also GETs up to maxSlotChecks slots (and their tasks) whose
// recorded expiry has passed, remembering held ones until their lease
// ends, and returns no task.

// slotRecord is the body of a held slot.
type slotRecord struct {
	TaskID         string    `json:"task_id"`
	LeaseToken     string    `json:"lease_token"`
	LeaseExpiresAt time.Time `json:"lease_expires_at"`
}

// freeSlot is the body of a free slot; a body this short is free.
var freeSlot = []byte("{}")

func slotIsFree(size int64) bool { return size <= int64(len(freeSlot)) }

// maxSlotChecks bounds the held slots one claim call examines for takeover.
const maxSlotChecks = 4

// slotIndex returns n of slots/{queue}/{n}, or -1.
func slotIndex(key string) int {
	n, err := strconv.Atoi(key[strings.LastIndexByte(key, '/')+1:])
	if err != nil || n < 0 {
		return -1
	}
	return n
}

// slotRun is what one claim call knows of a queue's slots.
type slotRun struct {
	listed bool // this Queue's listing of the queue's slots is fresh
	busy   bool // no slot was free
}

// takeSlot takes a free slot of queue d for t, which is about to start
// under t.LeaseToken until t.LeaseExpiresAt. It returns the slot's key and
// new ETag, or "" when all max_concurrency slots are held.
//
// The claims of one Queue share what it knows of the slots (its listing,
// updated by each take and free), and a slot one of them is writing is
// not tried by another, so concurrent claims of one process do not spend
// conditional writes racing each other for the same slot.
func (q *Queue) takeSlot(ctx context.Context, d Settings, t *Task, run *slotRun, now time.Time) (string, string, error) {
	if run.busy {
		return "", "", nil
	}
	if !run.listed {
		if err := q.listSlots(ctx, d.Name, now); err != nil {
			return "", "", err
		}
		run.listed = true
	}
	body, err := json.Marshal(slotRecord{TaskID: t.ID, LeaseToken: t.LeaseToken, LeaseExpiresAt: *t.LeaseExpiresAt})
	if err != nil {
		return "", "", fmt.Errorf("encode slot: %w", err)
	}
	size := int64(len(body))
	n := d.MaxConcurrency
	for {
		k, info, seen, ok := q.pickSlot(d.Name, n)
		if !ok {
			break
		}
		key := slotKey(d.Name, k)
		// A lost answer is recognised on a re-read (the body names this
		// claim's lease token).
		var etag string
		if seen {
			etag, err = store.SwapOwn(ctx, q.store, key, body, info.ETag, nil)
		} else {
			etag, err = store.CreateOwn(ctx, q.store, key, body, nil)
		}
		q.slotWritten(d.Name, k, etag, size, err == nil)
		if err == nil {
			return key, etag, nil
		}
		if !errors.Is(err, store.ErrPrecondition) && !errors.Is(err, store.ErrNotFound) {
			return "", "", fmt.Errorf("take slot %s: %w", key, err)
		}
		// Taken by someone else: known held now.
	}
	// Every slot is held, or looks so: take over one that is provably free.
	checks := 0
	for _, k := range rand.Perm(n) {
		if checks == maxSlotChecks {
			break
		}
		key := slotKey(d.Name, k)
		q.mu.Lock()
		until, known := q.slots[key]
		q.mu.Unlock()
		if known && now.Before(until) {
			continue
		}
		checks++
		free, etag, err := q.slotFree(ctx, key, now)
		if err != nil {
			return "", "", err
		}
		if !free {
			continue
		}
		// A lost answer is recognised on a re-read (the body names this
		// claim's lease token).
		newETag, err := store.SwapOwn(ctx, q.store, key, body, etag, nil)
		if errors.Is(err, store.ErrPrecondition) || errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return "", "", fmt.Errorf("take over slot %s: %w", key, err)
		}
		q.slotWritten(d.Name, k, newETag, size, true)
		return key, newETag, nil
	}
	run.busy = true
	return "", "", nil
}

// slotListing is what this Queue knows of a queue's slots: its last LIST
// (kept like the index listings, Options.ListCacheFor, so that the claims
// of a busy process share one LIST), updated by every take and free this
// Queue makes, and the slots a claim of this Queue is writing now. It is
// a hint: a stale ETag only costs a failed conditional write, and a slot
// it shows held is read before it is taken over.
type slotListing struct {
	slots  map[int]store.Info // by number: ETag and size (free or held)
	at     time.Time
	taking map[int]bool
}

// listSlots makes this Queue's listing of the queue's slots fresh: a LIST
// when it is older than ListCacheFor. The slots being written keep what
// this Queue knows of them.
func (q *Queue) listSlots(ctx context.Context, name string, now time.Time) error {
	q.mu.Lock()
	l, ok := q.slotLists[name]
	q.mu.Unlock()
	if ok && q.opts.ListCacheFor > 0 && now.Sub(l.at) < q.opts.ListCacheFor && !now.Before(l.at) {
		return nil
	}
	page, err := q.store.List(ctx, slotPrefix(name), "", store.MaxListLimit)
	if err != nil {
		return fmt.Errorf("list slots of %s: %w", name, err)
	}
	slots := make(map[int]store.Info, len(page.Items))
	for _, it := range page.Items {
		if n := slotIndex(it.Key); n >= 0 {
			slots[n] = it
		}
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.slotLists) >= maxSkip {
		clear(q.slotLists)
	}
	cur, ok := q.slotLists[name]
	if !ok {
		cur = slotListing{taking: map[int]bool{}}
	}
	for k := range cur.taking {
		if info, ok := cur.slots[k]; ok {
			slots[k] = info
		} else {
			delete(slots, k)
		}
	}
	cur.slots, cur.at = slots, now
	q.slotLists[name] = cur
	return nil
}

// pickSlot chooses a slot of the queue's n that this Queue's listing
// shows free (or never made) and that no claim of this Queue is writing,
// from a random one on, and marks it as being written. ok is false when
// there is none.
func (q *Queue) pickSlot(name string, n int) (k int, info store.Info, seen, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	l, found := q.slotLists[name]
	if !found {
		return 0, store.Info{}, false, false
	}
	first := rand.IntN(n)
	for i := range n {
		k = (first + i) % n
		if l.taking[k] {
			continue
		}
		info, seen = l.slots[k]
		if seen && !slotIsFree(info.Size) {
			continue
		}
		l.taking[k] = true
		return k, info, seen, true
	}
	return 0, store.Info{}, false, false
}

// slotWritten records the end of a claim's write of slot k: held by it
// with etag when ok, else held by someone else.
func (q *Queue) slotWritten(name string, k int, etag string, size int64, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	l, found := q.slotLists[name]
	if !found {
		return
	}
	delete(l.taking, k)
	if !ok {
		etag = ""
	}
	l.slots[k] = store.Info{Key: slotKey(name, k), ETag: etag, Size: max(size, int64(len(freeSlot))+1)}
}

// slotFreed notes in this Queue's listing that it freed a slot.
func (q *Queue) slotFreed(key, etag string) {
	name := queueOfKey(key)
	n := slotIndex(key)
	q.mu.Lock()
	defer q.mu.Unlock()
	if l, ok := q.slotLists[name]; ok && n >= 0 && !l.taking[n] {
		l.slots[n] = store.Info{Key: key, ETag: etag, Size: int64(len(freeSlot))}
	}
}

// slotFree reads a slot and reports whether it may be taken, with its
// ETag. A held slot is remembered in q.slots until it may be free.
func (q *Queue) slotFree(ctx context.Context, key string, now time.Time) (bool, string, error) {
	obj, err := q.store.Get(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return false, "", nil // never made: the next claim's LIST shows it absent
	}
	if err != nil {
		return false, "", fmt.Errorf("get slot %s: %w", key, err)
	}
	if slotIsFree(int64(len(obj.Body))) {
		return true, obj.ETag, nil
	}
	var s slotRecord
	if err := json.Unmarshal(obj.Body, &s); err != nil || validID(s.TaskID) != nil {
		return true, obj.ETag, nil // not a slot we wrote: free
	}
	if !now.After(s.LeaseExpiresAt) {
		q.rememberSlot(key, s.LeaseExpiresAt)
		return false, "", nil
	}
	t, _, err := q.load(ctx, queueOfKey(key), s.TaskID)
	if errors.Is(err, ErrNotFound) {
		return true, obj.ETag, nil
	}
	if err != nil {
		return false, "", err
	}
	if t.Status == StatusRunning && t.LeaseToken == s.LeaseToken && t.SlotKey == key && t.leaseValid(now) {
		q.rememberSlot(key, *t.LeaseExpiresAt) // extended by heartbeats
		return false, "", nil
	}
	return true, obj.ETag, nil
}

func (q *Queue) rememberSlot(key string, until time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.slots) >= maxSkip {
		clear(q.slots)
	}
	q.slots[key] = until
}

// freeSlotOf frees the slot t names, if it still holds what t's claim
// wrote there (If-Match on t.SlotETag). Best effort: a slot left held is
// taken over once t's lease has lapsed.
func (q *Queue) freeSlotOf(ctx context.Context, t *Task) {
	if t.SlotKey == "" || t.SlotETag == "" {
		return
	}
	etag, err := q.store.PutIfMatch(ctx, t.SlotKey, freeSlot, t.SlotETag)
	q.mu.Lock()
	delete(q.slots, t.SlotKey)
	q.mu.Unlock()
	if err == nil {
		q.slotFreed(t.SlotKey, etag)
	}
}
