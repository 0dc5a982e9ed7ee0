package queue

import (
	"context"
	"fmt"
	"strings"
)

// sweepHead is what the LIST of the sweep index's head showed.
type sweepHead struct {
	due   []sweepEntry // due entries: parked leases, outbox, artifacts
	wakes []wakeEntry  // due wake-ups the same pages showed
	// wakeDone is true when the pages showed the whole due head of
	// sweep/wake/; else its listing goes on after wakeFrom ("" for its
	// start).
	wakeDone bool
	wakeFrom string
}

// readSweepHead lists the sweep index from its start up to the first entry
// after now. The wake-ups sort after every time entry: when nothing
// future comes first, the same pages show the head of sweep/wake/ too, and
// an idle deployment's sweep costs one LIST.
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
		stop, inWake := false, false
		for _, it := range page.Items {
			if strings.HasPrefix(it.Key, prefixWake) {
				inWake = true
				w, ok := parseWakeKey(it.Key)
				if ok && w.at.After(r.now) {
					r.ahead(w.at)
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
				continue
			}
			if e.at.After(r.now) {
				r.ahead(e.at)
				stop = true // the wake-ups are listed on their own
				break
			}
			h.due = append(h.due, e)
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
		pages++
		after = page.Items[len(page.Items)-1].Key
	}
}
