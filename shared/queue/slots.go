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
// A queue with max_concurrency N has N slots, slots/{queue}/{0000..N-1}.
// A claim takes a slot before it starts a task: it writes the slot
// create-only (If-None-Match), naming the task, the new lease token and
// the lease's expiry, and only then writes the task record, which names
// the slot (slot_key). A task holds its slot while it runs; the lease
// holder's complete, fail, reschedule or cancel deletes it after the
// record's write. So at most N tasks hold a valid lease at once: each
// needs a slot object, and a slot object is made by one writer.
//
// A slot whose delete was lost (a crash, a claim that lost its race and
// died) is taken over by compare-and-swap once it is provably free: its
// recorded lease expiry has passed and the task it names no longer holds
// it (the record names another token or status, or its lease lapsed)
// for longer than StaleMarkerGrace, so that a holder's delete still in
// flight can never remove a slot that someone took over.
//
// Cost per task of a queue with max_concurrency: one LIST of the slots per
// claim call (serving all its max_tasks), one PUT to take a slot and one
// DELETE to give it back: +2 PUT/LIST-class requests and 1 free DELETE.
// When every slot is held, a claim also GETs up to maxSlotChecks slots
// (and their tasks) whose recorded expiry has passed, remembering held
// ones until that time, and returns no task.

// slotRecord is the body of a slot.
type slotRecord struct {
	TaskID         string    `json:"task_id"`
	LeaseToken     string    `json:"lease_token"`
	LeaseExpiresAt time.Time `json:"lease_expires_at"`
}

// maxSlotChecks bounds the held slots one claim call examines for takeover.
const maxSlotChecks = 4

const prefixSlots = "slots/"

func slotPrefix(queue string) string { return prefixSlots + queue + "/" }

func slotKey(queue string, n int) string { return fmt.Sprintf("%s%04d", slotPrefix(queue), n) }

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
	listed bool
	held   map[int]string // slot number -> ETag, from the LIST and lost creates
	busy   bool           // no slot was free
}

// takeSlot takes a free slot of queue d for t, which is about to start
// under t.LeaseToken until t.LeaseExpiresAt. It returns the slot's key, or
// "" when all max_concurrency slots are held.
func (q *Queue) takeSlot(ctx context.Context, d Declaration, t *Task, run *slotRun, now time.Time) (string, error) {
	if run.busy {
		return "", nil
	}
	if !run.listed {
		page, err := q.store.List(ctx, slotPrefix(d.Name), "", store.MaxListLimit)
		if err != nil {
			return "", fmt.Errorf("list slots of %s: %w", d.Name, err)
		}
		run.held = make(map[int]string, len(page.Items))
		for _, it := range page.Items {
			if n := slotIndex(it.Key); n >= 0 {
				run.held[n] = it.ETag
			}
		}
		run.listed = true
	}
	body, err := json.Marshal(slotRecord{TaskID: t.ID, LeaseToken: t.LeaseToken, LeaseExpiresAt: *t.LeaseExpiresAt})
	if err != nil {
		return "", fmt.Errorf("encode slot: %w", err)
	}
	n := d.MaxConcurrency
	first := rand.IntN(n)
	for i := 0; i < n; i++ {
		k := (first + i) % n
		if _, ok := run.held[k]; ok {
			continue
		}
		key := slotKey(d.Name, k)
		etag, err := q.store.PutIfAbsent(ctx, key, body)
		if err == nil {
			run.held[k] = etag
			return key, nil
		}
		if !errors.Is(err, store.ErrPrecondition) {
			if obj, gerr := q.store.Get(ctx, key); gerr == nil && string(obj.Body) == string(body) {
				run.held[k] = obj.ETag
				return key, nil // ours: the answer was lost
			}
			return "", fmt.Errorf("take slot %s: %w", key, err)
		}
		run.held[k] = "" // taken by someone else
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
			return "", err
		}
		if !free {
			continue
		}
		newETag, err := q.store.PutIfMatch(ctx, key, body, etag)
		if errors.Is(err, store.ErrPrecondition) || errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("take over slot %s: %w", key, err)
		}
		run.held[k] = newETag
		return key, nil
	}
	run.busy = true
	return "", nil
}

// slotFree reads a slot and reports whether it may be taken over, with
// its ETag. A held slot is remembered in q.slots until it may be free.
func (q *Queue) slotFree(ctx context.Context, key string, now time.Time) (bool, string, error) {
	obj, err := q.store.Get(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return false, "", nil // deleted since the LIST: the next claim creates it
	}
	if err != nil {
		return false, "", fmt.Errorf("get slot %s: %w", key, err)
	}
	var s slotRecord
	if err := json.Unmarshal(obj.Body, &s); err != nil || validID(s.TaskID) != nil {
		return true, obj.ETag, nil // not a slot we wrote: free
	}
	if !now.After(s.LeaseExpiresAt) {
		q.rememberSlot(key, s.LeaseExpiresAt)
		return false, "", nil
	}
	t, _, err := q.load(ctx, s.TaskID)
	if errors.Is(err, ErrNotFound) {
		return true, obj.ETag, nil
	}
	if err != nil {
		return false, "", err
	}
	// Until when the task may still be using, or giving back, the slot.
	busyUntil := t.UpdatedAt
	if t.Status == StatusRunning && t.LeaseToken == s.LeaseToken && t.SlotKey == key && t.LeaseExpiresAt != nil {
		busyUntil = *t.LeaseExpiresAt
	}
	busyUntil = busyUntil.Add(q.opts.StaleMarkerGrace)
	if now.Before(busyUntil) {
		q.rememberSlot(key, busyUntil)
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

// giveBackSlot deletes a slot this process just took for a start that did
// not happen. Best effort: a slot left behind is taken over later.
func (q *Queue) giveBackSlot(ctx context.Context, key string) {
	if key != "" {
		_ = q.store.Delete(ctx, key)
	}
}

// releasesSlot reports whether the write cur -> next gives back cur's slot:
// next no longer names it, and the write happened while cur's lease was
// valid (by its lease holder), so nobody can have taken the slot over. A
// task settled after its lease lapsed leaves its slot to be taken over.
func releasesSlot(cur, next *Task) bool {
	return cur.SlotKey != "" && cur.SlotKey != next.SlotKey &&
		cur.LeaseExpiresAt != nil && !next.UpdatedAt.After(*cur.LeaseExpiresAt)
}
