package queue

import (
	"context"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/s3q/s3q/shared/store"
)

// A listing of one queue's records or of one of its status indexes comes
// newest first, by id: a task id is a UUIDv7 whose first 48 bits are its
// creation time in milliseconds, so under a prefix that holds ids the
// keys of the tasks created after a time T are those after
// prefix+idTimeKey(T). S3 lists keys oldest first only; newestIn reads a
// prefix from its newest end by asking for time windows, the newest first.

// idTimeKey is the start of every id made at t (to the millisecond):
// "xxxxxxxx-xxxx".
func idTimeKey(t time.Time) string {
	ms := uint64(max(t.UnixMilli(), 0))
	var b [6]byte
	for i := 5; i >= 0; i-- {
		b[i] = byte(ms)
		ms >>= 8
	}
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:]
}

// newestWindow is the first window newestIn reads below its upper bound;
// each next one is windowGrowth times longer.
const (
	newestWindow = time.Minute
	windowGrowth = 16
)

// forever stands for "no upper time": the listing's upper bound is the
// end of the prefix.
var forever = time.UnixMilli(1<<48 - 1).UTC()

// newestFirst returns the candidates of the newest n keys, over every
// prefix, whose id sorts below before ("" for none), newest first, and
// whether older keys may follow. idOf names the id of a key of a prefix
// ("" for a key that holds none). Each prefix is read by newestIn, all at
// once; at looks back from (see newestIn).
func (q *Queue) newestFirst(ctx context.Context, prefixes []string, idOf func(prefix, key string) string, before string, n int, at time.Time) ([]listCandidate, bool, error) {
	found := make([][]store.Info, len(prefixes))
	mores := make([]bool, len(prefixes))
	errs := make([]error, len(prefixes))
	var wg sync.WaitGroup
	for i, p := range prefixes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			found[i], mores[i], errs[i] = q.newestIn(ctx, p, before, n, at)
		}()
	}
	wg.Wait()
	var cands []listCandidate
	more := false
	for i, p := range prefixes {
		if errs[i] != nil {
			return nil, false, fmt.Errorf("list %s: %w", p, errs[i])
		}
		more = more || mores[i]
		for _, it := range found[i] {
			if id := idOf(p, it.Key); id != "" {
				cands = append(cands, listCandidate{id: id, cursor: id, info: it})
			}
		}
	}
	slices.SortFunc(cands, func(a, b listCandidate) int { return strings.Compare(b.id, a.id) })
	if len(cands) > n {
		cands, more = cands[:n], true
	}
	return cands, more, nil
}

// newestIn returns the newest n keys of prefix p whose id sorts below
// before ("" for none), oldest first, and whether older ones may follow.
//
// Costs: one LIST when the prefix holds at most a page of keys (1,000).
// Else it reads windows back from at (the time of the listing; when zero,
// from the newest id of that first page), a minute, then 16 times longer
// each time, until n keys are found or the prefix's start is reached; a
// window holding more than a page is split, its newest part read first
// (between). An active queue's newest keys cost a LIST or two a prefix;
// one whose newest task is a year old, about 8.
func (q *Queue) newestIn(ctx context.Context, p, before string, n int, at time.Time) ([]store.Info, bool, error) {
	hiKey, hiT := p+"~", forever // "~" sorts after every id
	if before != "" {
		hiKey, hiT = p+before, idTime(before).Add(time.Millisecond)
	}
	first, err := q.store.List(ctx, p, "", store.MaxListLimit)
	if err != nil {
		return nil, false, err
	}
	if !first.Truncated || len(first.Items) == 0 || first.Items[len(first.Items)-1].Key >= hiKey {
		keys := below(first.Items, hiKey)
		if len(keys) > n {
			return keys[len(keys)-n:], true, nil
		}
		return keys, false, nil
	}
	floor := keyIDTime(p, first.Items[0].Key) // nothing is older
	if at.IsZero() {
		at = keyIDTime(p, first.Items[len(first.Items)-1].Key)
	}
	var got []store.Info // oldest first
	upKey, upT := hiKey, hiT
	if upT.After(at) {
		upT = at // the first window ends at the listing's time, and takes in any id past it
	}
	start := false
	for w := newestWindow; len(got) < n && !start; w *= windowGrowth {
		loT := upT.Add(-w)
		loKey := p + idTimeKey(loT)
		if !loT.After(floor) {
			loT, loKey, start = time.Time{}, "", true
		}
		chunk, err := q.between(ctx, p, loKey, loT, upKey, upT, n-len(got))
		if err != nil {
			return nil, false, err
		}
		got = append(chunk, got...)
		upKey, upT = loKey, loT
	}
	if len(got) > n {
		return got[len(got)-n:], true, nil
	}
	return got, !start || len(got) == n, nil
}

// between returns the keys of prefix p after loKey ("" for the start)
// and below hiKey, oldest first: all of them when they fit a LIST page,
// else at least the newest need of them (the window [loT, hiT) split in
// 16, the newest sixteenth first).
func (q *Queue) between(ctx context.Context, p, loKey string, loT time.Time, hiKey string, hiT time.Time, need int) ([]store.Info, error) {
	page, err := q.store.List(ctx, p, loKey, store.MaxListLimit)
	if err != nil {
		return nil, err
	}
	keys := below(page.Items, hiKey)
	if !page.Truncated || len(keys) < len(page.Items) || len(page.Items) == 0 {
		return keys, nil
	}
	span := hiT.Sub(loT)
	if strings.HasSuffix(hiKey, "~") || span <= time.Millisecond {
		// Over a page of ids in the first window (the last minute, and any
		// past the time of the listing), or made in one millisecond: page on.
		for page.Truncated && len(keys) == len(page.Items) {
			if page, err = q.store.List(ctx, p, page.Items[len(page.Items)-1].Key, store.MaxListLimit); err != nil {
				return nil, err
			}
			more := below(page.Items, hiKey)
			keys = append(keys, more...)
			if len(more) < len(page.Items) {
				break
			}
		}
		return keys, nil
	}
	splitT := hiT.Add(-max(span/windowGrowth, time.Millisecond))
	splitKey := p + idTimeKey(splitT)
	newer, err := q.between(ctx, p, splitKey, splitT, hiKey, hiT, need)
	if err != nil || len(newer) >= need {
		return newer, err
	}
	older, err := q.between(ctx, p, loKey, loT, splitKey, splitT, need-len(newer))
	if err != nil {
		return nil, err
	}
	return append(older, newer...), nil
}

// below returns the items whose key sorts before hiKey (items are in key
// order).
func below(items []store.Info, hiKey string) []store.Info {
	i, _ := slices.BinarySearchFunc(items, hiKey, func(it store.Info, k string) int { return strings.Compare(it.Key, k) })
	return items[:i]
}

// keyIDTime is the creation time of the id that starts key's name under
// p, or the zero time.
func keyIDTime(p, key string) time.Time {
	name := strings.TrimPrefix(key, p)
	if len(name) < 36 {
		return time.Time{}
	}
	return idTime(name[:36])
}

// A listing's cursor names a position in one queue's listing and that
// queue: position.check, check being a hash of the two. A cursor of
// another queue's listing (or none at all) is refused, never taken as a
// position here.

// queueCursor returns the cursor of position pos in a listing of queue.
func queueCursor(queue, pos string) string {
	if pos == "" {
		return ""
	}
	return pos + "." + cursorCheck(queue, pos)
}

// cursorPosition returns the position a cursor of queue's listing names,
// or a *ValidationError naming cursor.
func cursorPosition(queue, cursor string) (string, error) {
	i := strings.LastIndexByte(cursor, '.')
	if i < 0 || cursor[i+1:] != cursorCheck(queue, cursor[:i]) {
		return "", invalid("cursor", "is not a cursor from a previous listing of queue %s", queue)
	}
	return cursor[:i], nil
}

func cursorCheck(queue, pos string) string {
	h := fnv.New32a()
	h.Write([]byte(queue + "\x00" + pos))
	return fmt.Sprintf("%08x", h.Sum32())
}
