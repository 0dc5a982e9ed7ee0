package queue

import (
	"context"
	"fmt"
	"strings"
)

// sweepHead is what the LIST of the sweep index's head showed.
type sweepHead struct {
	due    []sweepEntry // due entries: parked leases, outbox, artifacts
	legacy []wakeEntry  // old queue registry entries, read as wake-ups
	wakes  []wakeEntry  // due wake-ups the same pages showed
	// wakeDone is true when the pages showed the whole due head of
	// sweep/wake/; else its listing goes on after wakeFrom ("" for its
	// start).
	wakeDone bool
	wakeFrom string
}

// maxLegacyPerSweep bounds the old registry entries one sweep takes as
// wake-ups; the rest wait for the next sweep.
const maxLegacyPerSweep = 5_000

// readSweepHead lists the sweep index from its start up to the first entry
// after now. The wake-ups sort after every time entry: when nothing
// future comes first, the same pages show the head of sweep/wake/ too, and
// an idle deployment's sweep costs one LIST. Pages that hold only old
// registry entries (which sort first) do not count against maxHeadPages,
// so that however many there are, the sweep reaches its own work.
func (r *sweepRun) readSweepHead(ctx context.Context) (sweepHead, error) {
	var h sweepHead
	after := ""
	for pages := 0; ; {
		if r.out(ctx) || pages == maxHeadPages && r.incomplete() { // also before the first page: a late sweep lists nothing more
			return h, nil
		}
		page, err := r.q.store.List(ctx, prefixSweep, after, 0)
		if err != nil {
			return h, fmt.Errorf("list %s: %w", prefixSweep, err)
		}
		stop, inWake, legacyOnly := false, false, true
		for _, it := range page.Items {
			if strings.HasPrefix(it.Key, prefixWake) {
				inWake = true
				w, ok := parseWakeKey(it.Key)
				if ok && w.at.After(r.now) {
					h.wakeDone, stop = true, true
					break
				}
				if ok {
					h.wakes = append(h.wakes, w)
				}
				continue
			}
			e, ok := parseSweepKey(it.Key)
			if !ok {
				legacyOnly = false
				continue
			}
			if e.at.After(r.now) {
				stop = true // the wake-ups are listed on their own
				break
			}
			switch {
			case e.kind != sweepQueue:
				h.due = append(h.due, e)
				legacyOnly = false
			case len(h.legacy) < maxLegacyPerSweep:
				h.legacy = append(h.legacy, wakeEntry{key: e.key, at: e.at, queue: e.subject})
			}
		}
		switch {
		case stop:
			return h, nil
		case !page.Truncated || len(page.Items) == 0:
			h.wakeDone = true
			return h, nil
		case inWake:
			h.wakeFrom = page.Items[len(page.Items)-1].Key
			return h, nil
		}
		if !legacyOnly {
			pages++
		}
		after = page.Items[len(page.Items)-1].Key
	}
}
